// The change feed over REST, GET /v1/changes, through the gateway: a caller
// with only a key follows the catalog's changes, filtered by its key's role
// exactly as lance_changes() filters them, and the commit log names the key
// (by its id) that made each change.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { connect, fails, get, grant, http, makeRole, ok, psql, removeNamespace, uniqueName } from "./lib.mjs";

describe("GET /v1/changes", { timeout: 120_000 }, () => {
  const ns = uniqueName("e2e_feed");
  const hidden = uniqueName("e2e_feed_hidden");
  let reader;
  let writer;
  let start;

  before(async () => {
    start = Number(psql("SELECT coalesce(max(seq), 0) FROM lance_catalog.change"));
    reader = makeRole("e2e_feed_reader");
    writer = makeRole("e2e_feed_writer");
    const db = await connect();
    await db.createNamespace([ns]);
    await db.createNamespace([hidden]);
    grant([ns], reader.name, "read");
    grant([ns], writer.name, "write");
    // the writer's own key makes a change in the namespace
    const writerDb = await connect(writer.key);
    await writerDb.createNamespace([ns, "child"]);
  });
  after(async () => {
    await removeNamespace(ns);
    await removeNamespace(hidden);
    reader.drop();
    writer.drop();
  });

  test("a reader's key follows what it may read, as lance_changes() answers its role", async () => {
    const seen = [];
    let afterSeq = start;
    for (let page = 0; page < 100; page++) {
      const body = ok(await get("/v1/changes", { after: afterSeq, limit: 2 }, { key: reader.key }));
      assert.ok(body.changes.length <= 2);
      seen.push(...body.changes);
      if (body.next_after === afterSeq) break;
      afterSeq = body.next_after;
    }
    const objects = seen.map((e) => e.objects[0]);
    assert.ok(objects.includes(ns) && objects.includes(`${ns}$child`), JSON.stringify(objects));
    assert.ok(!objects.includes(hidden), "an entry the reader may not read is not answered");

    const throughSql = JSON.parse(
      psql(
        `SET ROLE :"role";
         SELECT coalesce(json_agg(c.seq ORDER BY c.seq), '[]') FROM lance_changes(:'after', 1000) c
          WHERE c.operation IS NOT NULL;`,
        { role: reader.name, after: String(start) },
      ),
    );
    assert.deepEqual(
      seen.map((e) => e.seq),
      throughSql,
    );
    // the child namespace was made with the writer's key: the log names that key's id
    const child = seen.find((e) => e.objects[0] === `${ns}$child`);
    assert.equal(child.key_id, writer.keyId);
    assert.equal(child.role, writer.name);
  });

  test("other methods are 405, a bad after or limit 400 with code 13", async () => {
    fails(await http("POST", "/v1/changes", { body: {}, key: reader.key }), 405, 0);
    fails(await get("/v1/changes", { after: -1 }, { key: reader.key }), 400, 13);
    fails(await get("/v1/changes", { limit: 1001 }, { key: reader.key }), 400, 13);
    fails(await get("/v1/changes", {}, { key: null }), 401, 16);
  });
});
