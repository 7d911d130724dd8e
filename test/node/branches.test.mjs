// Branches made through the catalog are branches for the official client:
// CreateTableBranch writes Lance's own first manifest of the branch under
// tree/<branch>/_versions (the fork version's, finding its files through a
// base path) before the branch file, so the client lists the branch, checks
// it out, reads the fork's rows and commits on it.  The steps build on each
// other and run in order.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  connect,
  describeTable,
  http,
  itemRows as rows,
  localPath,
  ok,
  removeNamespace,
  tableRoute,
  uniqueName,
} from "./lib.mjs";

describe("branches", { timeout: 180_000 }, () => {
  const ns = uniqueName("e2e_branches");
  const id = [ns, "items"];
  let db;
  let table;
  let location;

  const createBranch = async (body) =>
    ok(await http("POST", tableRoute(id, "branches/create"), { body: { id, ...body } }));
  const branchVersions = async (branch) =>
    ok(await http("POST", tableRoute(id, "version/list"), { body: { id, branch } })).versions.map(
      (v) => v.version,
    );

  before(async () => {
    db = await connect();
    await db.createNamespace([ns]);
    table = await db.createTable("items", rows(1, 2), [ns]); // v1: 2 rows
    await table.add(rows(3, 3)); // v2: 5 rows
    await table.add(rows(6, 4)); // v3: 9 rows
    location = (await describeTable(id)).location;
  });
  after(() => removeNamespace(ns));

  test("a branch created through the catalog has Lance's first manifest", async () => {
    const created = await createBranch({ name: "dev", from_version: 2 });
    assert.equal(typeof created.transaction_id, "string");
    const dir = path.join(localPath(location), "tree", "dev", "_versions");
    const names = fs.readdirSync(dir).filter((n) => n.endsWith(".manifest"));
    assert.equal(names.length, 1, `one manifest in ${dir}: ${names}`);
    const bytes = fs.readFileSync(path.join(dir, names[0]));
    assert.equal(bytes.subarray(bytes.length - 4).toString(), "LANC");
    assert.deepEqual(await branchVersions("dev"), [2]);
  });

  test("the client lists it, checks it out and reads the fork's rows", async () => {
    const branches = await table.branches();
    const listed = await branches.list();
    assert.ok("dev" in listed, `listed: ${Object.keys(listed)}`);
    assert.equal(listed.dev.parentVersion, 2);

    const dev = await branches.checkout("dev");
    assert.equal(await dev.version(), 2);
    assert.equal(await dev.countRows(), 5);
    const ids = (await dev.query().toArray()).map((r) => r.id).sort((a, b) => a - b);
    assert.deepEqual(ids, [1, 2, 3, 4, 5]);
  });

  test("the client commits on it through the catalog, main is untouched", async () => {
    const dev = await (await table.branches()).checkout("dev");
    await dev.add(rows(100, 2));
    assert.equal(await dev.countRows(), 7);
    assert.deepEqual(await branchVersions("dev"), [2, 3]);
    await table.checkoutLatest();
    assert.equal(await table.countRows(), 9);

    const fresh = await (await (await connect()).openTable("items", [ns])).branches();
    assert.equal(await (await fresh.checkout("dev")).countRows(), 7);
  });

  test("a branch of that branch, made through the catalog, reads its rows", async () => {
    await createBranch({ name: "dev2", from_branch: "dev" });
    const dev2 = await (await table.branches()).checkout("dev2");
    assert.equal(await dev2.version(), 3);
    assert.equal(await dev2.countRows(), 7);
    await dev2.add(rows(200, 1));
    assert.equal(await dev2.countRows(), 8);
    assert.equal(await (await (await table.branches()).checkout("dev")).countRows(), 7);
  });
});
