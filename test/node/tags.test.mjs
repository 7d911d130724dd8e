// Tags shared by the catalog and the official client.  For a table under
// LANCE_DATA_ROOT the catalog keeps tags where Lance keeps them
// (_refs/tags/<name>.json, in Lance's format), so a tag made through the
// REST routes is a tag for the client (list, version, checkout by tag) and a
// tag the client makes is a tag for the catalog (list, version, DescribeTable
// by tag, protection of the tagged version).  The steps build on each other
// and run in order.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  catalogVersions,
  connect,
  describeTable,
  fails,
  http,
  itemRows as rows,
  localPath,
  ok,
  removeNamespace,
  tableRoute,
  uniqueName,
} from "./lib.mjs";

describe("tags", { timeout: 180_000 }, () => {
  const ns = uniqueName("e2e_tags");
  const id = [ns, "items"];
  let db;
  let table;
  let location;
  let sizes; // catalog manifest_size by version

  const tagFile = (name) => path.join(localPath(location), "_refs", "tags", `${name}.json`);
  const catalogTags = async () => ok(await http("POST", tableRoute(id, "tags/list"))).tags;
  const catalogTagVersion = async (tag) =>
    ok(await http("POST", tableRoute(id, "tags/version"), { body: { id, tag } }));

  before(async () => {
    db = await connect();
    await db.createNamespace([ns]);
    table = await db.createTable("items", rows(1, 2), [ns]); // v1: 2 rows
    await table.add(rows(3, 3)); // v2: 5 rows
    await table.add(rows(6, 4)); // v3: 9 rows
    location = (await describeTable(id)).location;
    sizes = new Map(catalogVersions(location).map((v) => [v.version, v.manifest_size]));
    assert.deepEqual([...sizes.keys()], [1, 2, 3]);
  });
  after(() => removeNamespace(ns));

  test("a tag created through the catalog is read by the client", async () => {
    const created = ok(
      await http("POST", tableRoute(id, "tags/create"), { body: { id, tag: "gold", version: 2 } }),
    );
    assert.equal(typeof created.transaction_id, "string");

    // the file is Lance's
    const file = JSON.parse(fs.readFileSync(tagFile("gold"), "utf8"));
    assert.equal(file.branch, null);
    assert.equal(file.version, 2);
    assert.equal(file.manifestSize, sizes.get(2));
    assert.ok(!Number.isNaN(Date.parse(file.createdAt)), `createdAt ${file.createdAt}`);
    assert.equal(file.updatedAt, file.createdAt);
    assert.deepEqual(file.metadata, {});

    const tags = await table.tags();
    const listed = await tags.list();
    assert.deepEqual(Object.keys(listed), ["gold"]);
    assert.equal(listed.gold.version, 2);
    assert.equal(listed.gold.manifestSize, sizes.get(2));
    assert.equal(await tags.getVersion("gold"), 2);
  });

  test("the client checks out the catalog's tag", async () => {
    await table.checkout("gold");
    assert.equal(await table.version(), 2);
    assert.equal(await table.countRows(), 5);
    await table.checkoutLatest();
    assert.equal(await table.version(), 3);
    assert.equal(await table.countRows(), 9);

    // and so does a fresh connection
    const reopened = await (await connect()).openTable("items", [ns]);
    await reopened.checkout("gold");
    assert.equal(await reopened.version(), 2);
    assert.equal(await reopened.countRows(), 5);
  });

  test("a tag created by the client is listed by the catalog", async () => {
    const tags = await table.tags();
    await tags.create("t", 1);
    assert.ok(fs.existsSync(tagFile("t")), "the client wrote _refs/tags/t.json");

    assert.deepEqual(await catalogTags(), {
      gold: { version: 2, manifestSize: sizes.get(2) },
      t: { version: 1, manifestSize: sizes.get(1) },
    });
    assert.deepEqual(await catalogTagVersion("t"), { version: 1 });
    const d = await describeTable(id);
    assert.equal(d.version, undefined);
    const atTag = ok(await http("POST", tableRoute(id, "describe"), { body: { id, tag: "t" } }));
    assert.equal(atTag.version, 1);

    // a second one of the same name is refused by the catalog (409, code 9)
    fails(
      await http("POST", tableRoute(id, "tags/create"), { body: { id, tag: "t", version: 2 } }),
      409,
      9,
    );
  });

  test("the catalog pages through the tags", async () => {
    const first = ok(await http("POST", tableRoute(id, "tags/list"), { query: { limit: 1 } }));
    assert.deepEqual(Object.keys(first.tags), ["gold"]);
    assert.equal(typeof first.page_token, "string");
    const second = ok(
      await http("POST", tableRoute(id, "tags/list"), {
        query: { limit: 1, page_token: first.page_token },
      }),
    );
    assert.deepEqual(Object.keys(second.tags), ["t"]);
  });

  test("a version the client tagged cannot be deleted through the catalog (409, code 19)", async () => {
    fails(
      await http("POST", tableRoute(id, "version/delete"), {
        body: { id, ranges: [{ start_version: 1, end_version: 2 }] },
      }),
      409,
      19,
    );
    assert.deepEqual(
      catalogVersions(location).map((v) => v.version),
      [1, 2, 3],
    );
  });

  test("updates and deletions on either side are seen by the other", async () => {
    const tags = await table.tags();

    // the client moves its tag; the catalog answers the new version
    await tags.update("t", 3);
    assert.deepEqual(await catalogTagVersion("t"), { version: 3 });

    // the catalog moves the client's tag back; the client answers it
    ok(await http("POST", tableRoute(id, "tags/update"), { body: { id, tag: "t", version: 1 } }));
    assert.equal(await tags.getVersion("t"), 1);
    await table.checkout("t");
    assert.equal(await table.countRows(), 2);
    await table.checkoutLatest();

    // the catalog deletes the client's tag, the client the catalog's
    ok(await http("POST", tableRoute(id, "tags/delete"), { body: { id, tag: "t" } }));
    await tags.delete("gold");
    assert.deepEqual(await tags.list(), {});
    assert.deepEqual(await catalogTags(), {});
    fails(await http("POST", tableRoute(id, "tags/version"), { body: { id, tag: "gold" } }), 404, 8);
    await assert.rejects(table.checkout("gold"));
  });
});
