// Managed versioning: a table under LANCE_DATA_ROOT has its versions in the
// catalog, every commit of the client goes through version/create, and the
// catalog's version rows and the table's _versions/*.manifest files agree.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  assertCatalogMatchesDisk,
  connect,
  describeTable,
  env,
  fails,
  http,
  listAllPages,
  manifestFiles,
  ok,
  range,
  removeNamespace,
  storePath,
  tableRoute,
  uniqueName,
  versionsDir,
  writeStagingManifest,
} from "./lib.mjs";

describe("managed versioning", { timeout: 180_000 }, () => {
  const ns = uniqueName("e2e_ver");
  const id = [ns, "events"];
  let db;
  let table;
  let location;

  before(async () => {
    db = await connect();
    await db.createNamespace([ns]);
  });
  after(() => removeNamespace(ns));

  test("a table declared under the data root has managed versioning", async () => {
    table = await db.createTable(
      "events",
      range(4).map((i) => ({ id: i, kind: "a" })),
      [ns],
    );
    const d = await describeTable(id);
    location = d.location;
    assert.equal(d.managed_versioning, true);
    assert.ok(
      path.resolve(location).startsWith(env.dataRoot + path.sep),
      `${location} is not below ${env.dataRoot}`,
    );
  });

  test("every commit is a catalog version whose manifest is the file on disk", async () => {
    await table.add(range(3, 4).map((i) => ({ id: i, kind: "b" }))); // v2: 7 rows
    await table.add(range(2, 7).map((i) => ({ id: i, kind: "c" }))); // v3: 9 rows
    await table.delete("kind = 'a'"); // v4: 5 rows
    await table.update({ where: "id = 7", values: { kind: "z" } }); // v5: 5 rows
    assert.equal(await table.version(), 5);
    const counts = { 1: 4, 2: 7, 3: 9, 4: 5, 5: 5 };

    const rows = assertCatalogMatchesDisk(location, [1, 2, 3, 4, 5]);

    // what Lance reads for the latest version: version/list, newest first
    const listed = ok(
      await http("POST", tableRoute(id, "version/list"), {
        body: "null",
        query: { limit: 1, descending: true },
      }),
    );
    assert.equal(listed.versions.length, 1);
    assert.equal(listed.versions[0].version, 5);
    assert.equal(listed.versions[0].manifest_path, rows[4].manifest_path);

    // every version through version/describe, and readable by the client
    for (const row of rows) {
      const d = ok(
        await http("POST", tableRoute(id, "version/describe"), { body: { id, version: row.version } }),
      );
      assert.equal(d.version.version, row.version);
      assert.equal(d.version.manifest_path, row.manifest_path);
      assert.equal(d.version.manifest_size, row.manifest_size);

      await table.checkout(row.version);
      assert.equal(await table.countRows(), counts[row.version], `rows at v${row.version}`);
    }
    await table.checkoutLatest();
    assert.equal(await table.countRows("kind = 'z'"), 1);
  });

  test("the versions listed in pages are the catalog's", async () => {
    const { items } = await listAllPages(
      { method: "POST", path: tableRoute(id, "version/list") },
      "versions",
      { limit: 2 },
    );
    assert.deepEqual(
      items.map((v) => v.version).sort((a, b) => a - b),
      [1, 2, 3, 4, 5],
    );
  });

  test("a second writer of an existing version gets 409 code 14; the committed manifest stays", async () => {
    const { finals } = manifestFiles(location);
    const committed = fs.readFileSync(finals.get(5).file);
    const staging = writeStagingManifest(location, 5, Buffer.from("a different manifest"));
    try {
      fails(
        await http("POST", tableRoute(id, "version/create"), {
          body: { id, version: 5, manifest_path: staging.manifestPath, naming_scheme: "V2" },
        }),
        409,
        14,
      );
      assert.deepEqual(fs.readFileSync(finals.get(5).file), committed);
    } finally {
      fs.rmSync(staging.file, { force: true });
    }
    assertCatalogMatchesDisk(location, [1, 2, 3, 4, 5]);
    const reopened = await (await connect()).openTable("events", [ns]);
    assert.equal(await reopened.version(), 5);
    assert.equal(await reopened.countRows(), 5);
  });

  test("a manifest_path outside the table's _versions folder is refused (400 code 13)", async () => {
    for (const manifestPath of [
      "etc/passwd",
      storePath(path.join(location, "data", "x.manifest-1")),
      `${storePath(versionsDir(location))}/../../x.manifest-1`,
    ]) {
      fails(
        await http("POST", tableRoute(id, "version/create"), {
          body: { id, version: 6, manifest_path: manifestPath },
        }),
        400,
        13,
      );
    }
    // a staging file that does not exist
    fails(
      await http("POST", tableRoute(id, "version/create"), {
        body: { id, version: 6, manifest_path: `${storePath(versionsDir(location))}/missing.manifest-1` },
      }),
      400,
      13,
    );
    assertCatalogMatchesDisk(location, [1, 2, 3, 4, 5]);
  });

  test("a version written after the refused requests continues at 6", async () => {
    await table.add([{ id: 100, kind: "d" }]);
    assert.equal(await table.version(), 6);
    assertCatalogMatchesDisk(location, [1, 2, 3, 4, 5, 6]);
  });
});
