// Tables through the official client: create with rows, open, list, append,
// count, time travel, a fresh connection, rename, drop, missing tables.
// The steps build on each other and run in order.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  assertCatalogMatchesDisk,
  connect,
  describeTable,
  env,
  fails,
  http,
  itemRows as rows,
  removeNamespace,
  tableRoute,
  uniqueName,
} from "./lib.mjs";

async function ids(table) {
  return (await table.query().toArray()).map((r) => Number(r.id)).sort((a, b) => a - b);
}

describe("tables", { timeout: 180_000 }, () => {
  const ns = uniqueName("e2e_tbl");
  let db;
  let table;

  before(async () => {
    db = await connect();
    await db.createNamespace([ns]);
    await db.createNamespace([ns, "archive"]);
  });
  after(() => removeNamespace(ns));

  test("create a table with rows", async () => {
    table = await db.createTable("items", rows(1, 3), [ns]);
    assert.equal(await table.countRows(), 3);
    assert.equal(await table.version(), 1);
  });

  test("open it: same rows and schema", async () => {
    const opened = await db.openTable("items", [ns]);
    assert.equal(await opened.countRows(), 3);
    assert.deepEqual(await ids(opened), [1, 2, 3]);
    const schema = await opened.schema();
    assert.deepEqual(schema.fields.map((f) => f.name), ["id", "name"]);
  });

  test("list tables", async () => {
    assert.deepEqual(await db.tableNames([ns]), ["items"]);
    assert.deepEqual(await db.tableNames([ns, "archive"]), []);
  });

  test("creating it again fails: the table exists", async () => {
    await assert.rejects(db.createTable("items", rows(100, 1), [ns]), /already exists/i);
    assert.equal(await (await db.openTable("items", [ns])).countRows(), 3);
  });

  test("add rows twice; count rows", async () => {
    await table.add(rows(4, 2));
    assert.equal(await table.countRows(), 5);
    await table.add(rows(6, 4));
    assert.equal(await table.countRows(), 9);
    assert.equal(await table.version(), 3);
    assert.deepEqual(await ids(table), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal(await table.countRows("id > 5"), 4);
  });

  test("check out version 1: the rows of version 1", async () => {
    await table.checkout(1);
    assert.equal(await table.version(), 1);
    assert.equal(await table.countRows(), 3);
    assert.deepEqual(await ids(table), [1, 2, 3]);
    await table.checkout(2);
    assert.equal(await table.countRows(), 5);
    await table.checkoutLatest();
    assert.equal(await table.version(), 3);
    assert.equal(await table.countRows(), 9);
  });

  test("a fresh connection sees the latest version", async () => {
    const other = await connect();
    const fresh = await other.openTable("items", [ns]);
    assert.equal(await fresh.version(), 3);
    assert.equal(await fresh.countRows(), 9);
    // and a write through it is seen by the first connection's next open
    await fresh.add(rows(10, 1));
    const reopened = await db.openTable("items", [ns]);
    assert.equal(await reopened.version(), 4);
    assert.equal(await reopened.countRows(), 10);
  });

  test("rename: the new name has the data, the old one is gone", async () => {
    await db.renameTable("items", "goods", { namespacePath: [ns] });
    assert.deepEqual(await db.tableNames([ns]), ["goods"]);
    await assert.rejects(db.openTable("items", [ns]), /not found/i);

    const goods = await db.openTable("goods", [ns]);
    assert.equal(await goods.countRows(), 10);
    // commits keep working under the new name
    await goods.add(rows(11, 1));
    assert.equal(await (await db.openTable("goods", [ns])).countRows(), 11);
  });

  test("rename into another namespace", async () => {
    await db.renameTable("goods", "old_goods", {
      namespacePath: [ns],
      newNamespacePath: [ns, "archive"],
    });
    assert.deepEqual(await db.tableNames([ns]), []);
    assert.deepEqual(await db.tableNames([ns, "archive"]), ["old_goods"]);
    const moved = await db.openTable("old_goods", [ns, "archive"]);
    assert.equal(await moved.countRows(), 11);
    await db.renameTable("old_goods", "goods", {
      namespacePath: [ns, "archive"],
      newNamespacePath: [ns],
    });
    assert.deepEqual(await db.tableNames([ns]), ["goods"]);
  });

  test("drop: the table is gone; a new table of that name starts empty", async () => {
    await db.dropTable("goods", [ns]);
    assert.deepEqual(await db.tableNames([ns]), []);
    await assert.rejects(db.openTable("goods", [ns]), /not found/i);
    fails(await http("POST", tableRoute([ns, "goods"], "describe"), { body: {} }), 404, 4);

    const again = await db.createTable("goods", rows(500, 2), [ns]);
    assert.equal(await again.countRows(), 2);
    assert.equal(await again.version(), 1);
    assert.deepEqual(await ids(await db.openTable("goods", [ns])), [500, 501]);
  });

  test("opening a missing table fails as not found", async () => {
    await assert.rejects(db.openTable("no_such_table", [ns]), /was not found/i);
    await assert.rejects(db.openTable("t", [`${ns}_missing`]), /not found/i);
    fails(await http("POST", tableRoute([ns, "no_such_table"], "describe"), { body: {} }), 404, 4);
    await assert.rejects(db.dropTable("no_such_table", [ns]), /not found/i);
  });

  test("a table created by the client is described with its location and managed versioning", async () => {
    const d = await describeTable([ns, "goods"]);
    assert.equal(typeof d.location, "string");
    assert.equal(d.managed_versioning, true);
  });

  describe("names with special characters", () => {
    const names = ["ümlaut", "a/b", "pct%41", "plus+sign", "hash#x", "q?x", "amp&x", "col:on", "dots.in.name", "emoji😀"];

    async function roundTrip(dir, name) {
      const created = await db.createTable(name, [{ a: 1 }], [ns, dir]);
      await created.add([{ a: 2 }]);
      const opened = await (await connect()).openTable(name, [ns, dir]);
      assert.equal(await opened.countRows(), 2, name);
      assert.equal(await opened.version(), 2, name);
      const { location } = await describeTable([ns, dir, name]);
      // the table's folder is in its namespace's folder, whatever the name
      assert.equal(path.dirname(path.resolve(location)), path.join(env.dataRoot, ns, dir), name);
      assertCatalogMatchesDisk(location, [1, 2]);
    }

    test("create, append, reopen; each in its namespace's folder", async () => {
      await db.createNamespace([ns, "names"]);
      for (const name of names) await roundTrip("names", name);
      assert.deepEqual(await db.tableNames([ns, "names"]), [...names].sort());
    });

    // The client sends a space in the path id as '+' (and a '+' as %2B).
    test("a name with a space", async () => {
      await db.createNamespace([ns, "spaced"]);
      await roundTrip("spaced", "with space");
    });
  });
});
