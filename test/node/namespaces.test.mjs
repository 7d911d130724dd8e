// Namespaces through the official client: create, nested create, list with
// paging, describe, duplicates, drop (Restrict, Cascade, Skip).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { connect, fails, http, listAllPages, nsRoute, removeNamespace, uniqueName } from "./lib.mjs";

describe("namespaces", { timeout: 120_000 }, () => {
  const root = uniqueName("e2e_ns");
  let db;

  before(async () => {
    db = await connect();
  });
  after(() => removeNamespace(root));

  test("create answers the properties and describe returns them", async () => {
    const created = await db.createNamespace([root], { properties: { owner: "e2e", tier: "gold" } });
    assert.deepEqual(created.properties, { owner: "e2e", tier: "gold" });
    const described = await db.describeNamespace([root]);
    assert.deepEqual(described.properties, { owner: "e2e", tier: "gold" });
  });

  test("a new namespace is listed once among its parent's children (here the root's, paged through)", async () => {
    const { items } = await listAllPages(nsRoute([], "list"), "namespaces", { limit: 500 });
    assert.equal(items.filter((n) => n === root).length, 1);
  });

  test("nested create; a list holds direct children only, by name", async () => {
    assert.deepEqual((await db.createNamespace([root, "child"])).properties ?? {}, {});
    await db.createNamespace([root, "child", "grand"], { properties: { depth: "3" } });
    await db.createNamespace([root, "sibling"]);

    assert.deepEqual((await db.listNamespaces([root])).namespaces, ["child", "sibling"]);
    assert.deepEqual((await db.listNamespaces([root, "child"])).namespaces, ["grand"]);
    assert.deepEqual((await db.listNamespaces([root, "child", "grand"])).namespaces, []);
    assert.deepEqual((await db.describeNamespace([root, "child", "grand"])).properties, {
      depth: "3",
    });
  });

  test("listNamespaces pages with limit and pageToken: every child once, in order", async () => {
    const parent = [root, "paged"];
    const names = ["k", "c", "a", "i", "e", "g", "b"];
    await db.createNamespace(parent);
    for (const name of names) await db.createNamespace([...parent, name]);

    const seen = [];
    const tokens = new Set();
    let pageToken;
    let pages = 0;
    do {
      const page = await db.listNamespaces(parent, pageToken ? { limit: 3, pageToken } : { limit: 3 });
      assert.ok(page.namespaces.length <= 3, `page of ${page.namespaces.length} names`);
      seen.push(...page.namespaces);
      pageToken = page.pageToken;
      if (pageToken) {
        assert.ok(!tokens.has(pageToken), `token ${pageToken} returned twice`);
        tokens.add(pageToken);
      }
      assert.ok(++pages <= 10, "paging does not end");
    } while (pageToken);
    assert.deepEqual(seen, [...names].sort());
    assert.ok(pages >= 3, `7 names in pages of 3 took ${pages} pages`);

    // the same list without a limit
    assert.deepEqual((await db.listNamespaces(parent)).namespaces, [...names].sort());
  });

  test("creating an existing namespace fails: client error, HTTP 409 code 2", async () => {
    await assert.rejects(db.createNamespace([root]), /already exists/i);
    await assert.rejects(db.createNamespace([root, "child"]), /already exists/i);
    fails(await http("POST", nsRoute([root], "create"), { body: { id: [root] } }), 409, 2);

    // exist_ok keeps the existing namespace and its properties
    const again = await db.createNamespace([root], { mode: "exist_ok", properties: { x: "y" } });
    assert.deepEqual(again.properties, { owner: "e2e", tier: "gold" });
  });

  test("creating below a missing parent fails as not found (code 1)", async () => {
    await assert.rejects(db.createNamespace([root, "missing", "x"]), /not found|does not exist/i);
    fails(
      await http("POST", nsRoute([root, "missing", "x"], "create"), { body: {} }),
      404,
      1,
    );
    await assert.rejects(db.describeNamespace([root, "missing"]), /not found|does not exist/i);
  });

  test("drop Restrict refuses a namespace with children (code 3); Cascade drops the tree", async () => {
    const tree = [root, "tree"];
    await db.createNamespace(tree);
    await db.createNamespace([...tree, "a"]);
    await db.createNamespace([...tree, "a", "b"]);
    await db.createTable("t", [{ id: 1 }, { id: 2 }], [...tree, "a"]);

    await assert.rejects(db.dropNamespace(tree), /not empty/i);
    fails(await http("POST", nsRoute(tree, "drop"), { body: {} }), 409, 3);
    fails(await http("POST", nsRoute([...tree, "a"], "drop"), { body: {} }), 409, 3);
    assert.deepEqual((await db.listNamespaces(tree)).namespaces, ["a"]);

    await db.dropNamespace(tree, { behavior: "cascade" });

    await assert.rejects(db.describeNamespace(tree), /not found|does not exist/i);
    await assert.rejects(db.describeNamespace([...tree, "a", "b"]), /not found|does not exist/i);
    await assert.rejects(db.openTable("t", [...tree, "a"]), /not found/i);
    fails(await http("POST", nsRoute([...tree, "a"], "exists")), 404, 1);
    assert.ok(!(await db.listNamespaces([root])).namespaces.includes("tree"));
  });

  test("drop of an empty namespace; a missing one fails, or is skipped with mode skip", async () => {
    await db.createNamespace([root, "empty"]);
    await db.dropNamespace([root, "empty"]);
    await assert.rejects(db.describeNamespace([root, "empty"]), /not found|does not exist/i);

    await assert.rejects(db.dropNamespace([root, "empty"]), /not found|does not exist/i);
    fails(await http("POST", nsRoute([root, "empty"], "drop"), { body: {} }), 404, 1);
    await db.dropNamespace([root, "empty"], { mode: "skip" });
  });

  test("the root namespace cannot be created or dropped", async () => {
    fails(await http("POST", nsRoute([], "create"), { body: {} }), 409, 2);
    fails(await http("POST", nsRoute([], "drop"), { body: {} }), 400, 13);
  });
});
