// The REST binding with fetch, for what the official client never sends:
// batch-create, batch-commit, version delete, register/deregister, paging,
// id mismatch, unknown and data-plane routes, exists routes, DescribeTable
// query parameters.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  catalogVersions,
  describeTable,
  env,
  fails,
  get,
  http,
  listAllPages,
  manifestFiles,
  manifestName,
  nsRoute,
  ok,
  post,
  range,
  removeNamespace,
  tableRoute,
  uniqueName,
  writeStagingManifest,
} from "./lib.mjs";

const ns = uniqueName("e2e_http");
// tables at an object-store location: the catalog records their versions as sent
const remote = (name) => `s3://lance-e2e-bucket/${ns}/${name}.lance`;
const remotePath = (name, file) => `lance-e2e-bucket/${ns}/${name}.lance/_versions/${file}`;

async function register(name, location = remote(name)) {
  return ok(await post(tableRoute([ns, name], "register"), { id: [ns, name], location }));
}

async function versionNumbers(name) {
  const { items } = await listAllPages(
    { method: "POST", path: tableRoute([ns, name], "version/list") },
    "versions",
  );
  return items.map((v) => v.version).sort((a, b) => a - b);
}

async function createVersions(name, versions) {
  for (const version of versions)
    ok(
      await post(tableRoute([ns, name], "version/create"), {
        version,
        manifest_path: remotePath(name, `${version}.manifest-x`),
      }),
    );
}

describe("REST binding", { timeout: 120_000 }, () => {
  before(async () => {
    ok(await post(nsRoute([ns], "create"), { id: [ns] }));
  });
  after(() => removeNamespace(ns));

  describe("routes", () => {
    test("an unknown route is 404 with an ErrorResponse", async () => {
      for (const [method, route] of [
        ["GET", "/v1/nope"],
        ["POST", `/v1/namespace/${ns}/frobnicate`],
        ["POST", `/v1/table/${ns}%24t/version/frobnicate`],
      ]) {
        const res = await http(method, route, method === "POST" ? { body: {} } : {});
        assert.equal(res.status, 404, `${method} ${route}: ${res.text}`);
        assert.equal(typeof res.json?.code, "number", res.text);
      }
    });

    test("data-plane routes are 406 code 0: the catalog does not serve table data", async () => {
      const id = [ns, "t"];
      fails(
        await http("POST", tableRoute(id, "insert"), {
          body: "arrow bytes",
          headers: { "content-type": "application/vnd.apache.arrow.stream" },
        }),
        406,
        0,
      );
      fails(await post(tableRoute(id, "count_rows"), { id }), 406, 0);
      fails(await post(tableRoute(id, "query"), { id, k: 1, vector: [1] }), 406, 0);
    });

    test("the path's id wins; a different id in the body is 400 code 13 and changes nothing", async () => {
      fails(await post(nsRoute([ns, "a"], "create"), { id: [ns, "b"] }), 400, 13);
      fails(await post(nsRoute([ns, "a"], "exists")), 404, 1);
      fails(await post(nsRoute([ns, "b"], "exists")), 404, 1);

      fails(
        await post(tableRoute([ns, "t1"], "register"), { id: [ns, "t2"], location: remote("t1") }),
        400,
        13,
      );
      fails(await post(tableRoute([ns, "t1"], "exists")), 404, 4);
      fails(await post(tableRoute([ns, "t2"], "exists")), 404, 4);

      // a body without id, or with the same id, is fine
      ok(await post(nsRoute([ns, "a"], "create"), {}));
      ok(await post(nsRoute([ns, "a"], "describe"), { id: [ns, "a"] }));
      ok(await post(nsRoute([ns, "a"], "drop"), { id: [ns, "a"] }));
    });
  });

  describe("exists", () => {
    test("an existing namespace or table: 2xx without a body", async () => {
      ok(await post(nsRoute([ns, "ex"], "create"), {}));
      await register("ex_t");
      for (const route of [
        nsRoute([], "exists"),
        nsRoute([ns], "exists"),
        nsRoute([ns, "ex"], "exists"),
        tableRoute([ns, "ex_t"], "exists"),
      ]) {
        const res = await post(route, {});
        assert.ok(res.status >= 200 && res.status < 300, `${route}: ${res.status} ${res.text}`);
        assert.equal(res.text, "", `${route} answered a body`);
      }
      // without a body, as some clients send it
      const res = await http("POST", tableRoute([ns, "ex_t"], "exists"));
      assert.ok(res.status >= 200 && res.status < 300, res.text);
    });

    test("a missing namespace or table: 404 with the code", async () => {
      fails(await post(nsRoute([ns, "missing"], "exists"), {}), 404, 1);
      fails(await post(tableRoute([ns, "missing"], "exists"), {}), 404, 4);
      fails(await post(tableRoute([ns, "missing", "t"], "exists"), {}), 404, 1);
      // a namespace is not a table, nor a table a namespace
      fails(await post(tableRoute([ns, "ex"], "exists"), {}), 404, 4);
      fails(await post(nsRoute([ns, "ex_t"], "exists"), {}), 404, 1);
    });
  });

  describe("DescribeTable query parameters", () => {
    test("with_table_uri, check_declared, load_detailed_metadata", async () => {
      const id = [ns, "declared"];
      const declared = ok(await post(tableRoute(id, "declare"), { id }));
      assert.equal(declared.managed_versioning, true);
      assert.ok(path.resolve(declared.location).startsWith(env.dataRoot + path.sep));

      const plain = await describeTable(id);
      assert.equal(plain.location, declared.location);
      assert.equal(plain.table_uri, undefined);
      assert.equal(plain.is_only_declared, undefined);

      const d = await describeTable(id, {
        with_table_uri: true,
        check_declared: true,
        load_detailed_metadata: true,
      });
      assert.equal(d.location, declared.location);
      assert.equal(d.table_uri, new URL(`file://${declared.location}`).href);
      assert.equal(d.is_only_declared, true);
      assert.equal(d.table, "declared");
      assert.deepEqual(d.namespace, [ns]);

      assert.equal((await describeTable(id, { with_table_uri: "false" })).table_uri, undefined);

      // once a version exists, the table is no longer only declared
      const staging = writeStagingManifest(d.location, 1, "v1");
      ok(await post(tableRoute(id, "version/create"), { version: 1, manifest_path: staging.manifestPath }));
      assert.equal((await describeTable(id, { check_declared: true })).is_only_declared, false);

      fails(await post(tableRoute(id, "describe"), {}, { query: { check_declared: "maybe" } }), 400, 13);
    });

    test("another delimiter in the query", async () => {
      await register("dot");
      const res = await post(`/v1/table/${ns}.dot/describe`, {}, { query: { delimiter: "." } });
      assert.equal(ok(res).location, remote("dot"));
      const list = ok(await get(`/v1/namespace/${ns}/table/list`, { delimiter: "." }));
      assert.ok(list.tables.includes("dot"));
    });

    test("a registered table: a location, no versions, and version/list with a null body", async () => {
      await register("plain");
      const d = await describeTable([ns, "plain"], { check_declared: true, with_table_uri: true });
      assert.equal(d.location, remote("plain"));
      assert.equal(d.table_uri, remote("plain"));
      assert.equal(d.is_only_declared, false);
      assert.equal(d.managed_versioning, false);
      const list = ok(
        await post(tableRoute([ns, "plain"], "version/list"), "null", {
          query: { limit: 1, descending: true },
        }),
      );
      assert.deepEqual(list.versions, []);
    });
  });

  describe("register / deregister", () => {
    test("register, describe, register again (5), overwrite, deregister, register back", async () => {
      const id = [ns, "reg"];
      const r = await register("reg");
      assert.equal(r.location, remote("reg"));
      assert.equal((await describeTable(id)).location, remote("reg"));
      assert.ok(ok(await get(nsRoute([ns], "table/list"))).tables.includes("reg"));

      fails(await post(tableRoute(id, "register"), { location: remote("other") }), 409, 5);
      const over = ok(
        await post(tableRoute(id, "register"), { location: remote("other"), mode: "Overwrite" }),
      );
      assert.equal(over.location, remote("other"));
      assert.equal((await describeTable(id)).location, remote("other"));

      const gone = ok(await post(tableRoute(id, "deregister"), { id }));
      assert.deepEqual(gone.id, id);
      assert.equal(gone.location, remote("other"));
      fails(await post(tableRoute(id, "describe"), {}), 404, 4);
      fails(await post(tableRoute(id, "deregister"), {}), 404, 4);
      assert.ok(!ok(await get(nsRoute([ns], "table/list"))).tables.includes("reg"));

      assert.equal((await register("reg", remote("other"))).location, remote("other"));
    });

    test("register errors: no location (13), missing namespace (1), name of a namespace (5)", async () => {
      fails(await post(tableRoute([ns, "noloc"], "register"), {}), 400, 13);
      fails(await post(tableRoute([ns, "nons", "t"], "register"), { location: remote("x") }), 404, 1);
      ok(await post(nsRoute([ns, "taken"], "create"), {}));
      fails(await post(tableRoute([ns, "taken"], "register"), { location: remote("x") }), 409, 5);
      fails(await post(tableRoute([ns, "missing"], "deregister"), {}), 404, 4);
    });
  });

  describe("pagination", () => {
    const parent = [ns, "pages"];
    const children = range(11).map((i) => `c${String(i).padStart(2, "0")}`);
    const tables = range(9).map((i) => `t${i}`);

    before(async () => {
      ok(await post(nsRoute(parent, "create"), {}));
      for (const c of [...children].reverse()) ok(await post(nsRoute([...parent, c], "create"), {}));
      for (const t of tables)
        ok(await post(tableRoute([...parent, t], "register"), { location: remote(`p_${t}`) }));
    });

    test("namespaces: following page_token returns every child once, in order", async () => {
      for (const limit of [1, 4, 11, 50]) {
        const { items, pages } = await listAllPages(nsRoute(parent, "list"), "namespaces", { limit });
        assert.deepEqual(items, children, `limit ${limit}`);
        assert.ok(pages.length >= Math.ceil(children.length / limit), `limit ${limit}`);
      }
      const empty = ok(await get(nsRoute(parent, "list"), { limit: 0 }));
      assert.deepEqual(empty.namespaces, []);
      assert.ok(!empty.page_token, "limit 0 gave a page token");
      fails(await get(nsRoute(parent, "list"), { limit: -1 }), 400, 13);
    });

    test("children added or removed ahead of the cursor between pages are seen as they are then", async () => {
      const first = ok(await get(nsRoute(parent, "list"), { limit: 3 }));
      assert.deepEqual(first.namespaces, children.slice(0, 3));
      ok(await post(nsRoute([...parent, "c99"], "create"), {}));
      ok(await post(nsRoute([...parent, "c05"], "drop"), {}));
      const rest = await listAllPages(nsRoute(parent, "list"), "namespaces", {
        limit: 3,
        query: { page_token: first.page_token },
      });
      assert.deepEqual(
        [...first.namespaces, ...rest.items],
        [...children.filter((c) => c !== "c05"), "c99"],
      );
      ok(await post(nsRoute([...parent, "c99"], "drop"), {}));
      ok(await post(nsRoute([...parent, "c05"], "create"), {}));
    });

    test("tables: following page_token returns every table once", async () => {
      for (const limit of [2, 9, 100]) {
        const { items } = await listAllPages(nsRoute(parent, "table/list"), "tables", { limit });
        assert.deepEqual(items, tables, `limit ${limit}`);
      }
    });

    test("all tables (GET /v1/table): ours appear once each, as full ids", async () => {
      const { items } = await listAllPages("/v1/table", "tables", { limit: 25 });
      const ours = items.filter((t) => t.startsWith(`${ns}$pages$`));
      assert.deepEqual(ours.sort(), tables.map((t) => `${ns}$pages$${t}`).sort());
    });

    test("versions: pages in both directions", async () => {
      await register("paged_versions");
      await createVersions("paged_versions", range(7, 1));
      const route = { method: "POST", path: tableRoute([ns, "paged_versions"], "version/list") };
      const up = await listAllPages(route, "versions", { limit: 3 });
      assert.deepEqual(up.items.map((v) => v.version), range(7, 1));
      const down = await listAllPages(route, "versions", { limit: 2, query: { descending: true } });
      assert.deepEqual(down.items.map((v) => v.version), range(7, 1).reverse());
      fails(await post(route.path, null, { query: { page_token: "not-a-token" } }), 400, 13);
    });
  });

  describe("table versions", () => {
    test("create, conflict (409 code 14), describe, missing version (404 code 11)", async () => {
      const id = [ns, "vers"];
      await register("vers");
      const created = ok(
        await post(tableRoute(id, "version/create"), {
          id,
          version: 1,
          manifest_path: remotePath("vers", "1.manifest-a"),
          manifest_size: 10,
          e_tag: "e1",
          metadata: { k: "v" },
        }),
      );
      assert.equal(created.version.version, 1);
      assert.equal(created.version.manifest_path, remotePath("vers", "1.manifest-a"));
      assert.equal(created.version.manifest_size, 10);

      fails(
        await post(tableRoute(id, "version/create"), {
          version: 1,
          manifest_path: remotePath("vers", "1.manifest-b"),
        }),
        409,
        14,
      );
      const d = ok(await post(tableRoute(id, "version/describe"), { version: 1 }));
      assert.equal(d.version.manifest_path, remotePath("vers", "1.manifest-a"));
      fails(await post(tableRoute(id, "version/describe"), { version: 2 }), 404, 11);
      fails(await post(tableRoute([ns, "nope"], "version/describe"), { version: 1 }), 404, 4);
      fails(await post(tableRoute(id, "version/create"), { version: 2 }), 400, 13);
    });

    test("version delete: ranges are start-inclusive, end-exclusive; -1 runs to the latest", async () => {
      const id = [ns, "del"];
      await register("del");
      await createVersions("del", range(6, 1));

      assert.equal(
        ok(await post(tableRoute(id, "version/delete"), { ranges: [{ start_version: 2, end_version: 4 }] }))
          .deleted_count,
        2,
      );
      assert.deepEqual(await versionNumbers("del"), [1, 4, 5, 6]);

      const two = ok(
        await post(tableRoute(id, "version/delete"), {
          ranges: [
            { start_version: 1, end_version: 2 },
            { start_version: 6, end_version: -1 },
          ],
        }),
      );
      assert.equal(two.deleted_count, 2);
      assert.deepEqual(await versionNumbers("del"), [4, 5]);

      // nothing in range: deletes nothing
      assert.equal(
        ok(await post(tableRoute(id, "version/delete"), { ranges: [{ start_version: 10, end_version: 20 }] }))
          .deleted_count,
        0,
      );
      assert.equal(
        ok(await post(tableRoute(id, "version/delete"), { ranges: [{ start_version: 0, end_version: -1 }] }))
          .deleted_count,
        2,
      );
      assert.deepEqual(await versionNumbers("del"), []);

      fails(await post(tableRoute(id, "version/delete"), {}), 400, 13);
      fails(
        await post(tableRoute([ns, "nope"], "version/delete"), { ranges: [{ start_version: 0, end_version: -1 }] }),
        404,
        4,
      );
    });
  });

  describe("batch-create", () => {
    test("versions of several tables at once, answered in request order", async () => {
      await register("ba");
      await register("bb");
      const res = ok(
        await post("/v1/table/version/batch-create", {
          entries: [
            { id: [ns, "bb"], version: 1, manifest_path: remotePath("bb", "1.manifest-x") },
            { id: [ns, "ba"], version: 1, manifest_path: remotePath("ba", "1.manifest-x") },
            { id: [ns, "bb"], version: 2, manifest_path: remotePath("bb", "2.manifest-x") },
          ],
        }),
      );
      assert.deepEqual(
        res.versions.map((v) => [v.version, v.manifest_path]),
        [
          [1, remotePath("bb", "1.manifest-x")],
          [1, remotePath("ba", "1.manifest-x")],
          [2, remotePath("bb", "2.manifest-x")],
        ],
      );
      assert.deepEqual(await versionNumbers("ba"), [1]);
      assert.deepEqual(await versionNumbers("bb"), [1, 2]);
    });

    test("all or nothing: one taken version (409 code 14) or one missing table (404 code 4)", async () => {
      fails(
        await post("/v1/table/version/batch-create", {
          entries: [
            { id: [ns, "ba"], version: 2, manifest_path: remotePath("ba", "2.manifest-x") },
            { id: [ns, "bb"], version: 2, manifest_path: remotePath("bb", "2.manifest-y") },
          ],
        }),
        409,
        14,
      );
      fails(
        await post("/v1/table/version/batch-create", {
          entries: [
            { id: [ns, "ba"], version: 2, manifest_path: remotePath("ba", "2.manifest-x") },
            { id: [ns, "nope"], version: 1, manifest_path: remotePath("nope", "1.manifest-x") },
          ],
        }),
        404,
        4,
      );
      assert.deepEqual(await versionNumbers("ba"), [1]);
      assert.deepEqual(await versionNumbers("bb"), [1, 2]);
      fails(await post("/v1/table/version/batch-create", {}), 400, 13);
    });

    test("managed tables: staging manifests become final ones, or none on failure", async () => {
      const ids = [[ns, "ma"], [ns, "mb"]];
      const locations = [];
      for (const id of ids) locations.push(ok(await post(tableRoute(id, "declare"), {})).location);
      const a1 = writeStagingManifest(locations[0], 1, "manifest a1");
      const b1 = writeStagingManifest(locations[1], 1, "manifest b1 longer");
      const b2 = writeStagingManifest(locations[1], 2, "manifest b2");

      const res = ok(
        await post("/v1/table/version/batch-create", {
          entries: [
            { id: ids[0], version: 1, manifest_path: a1.manifestPath, naming_scheme: "V2" },
            { id: ids[1], version: 1, manifest_path: b1.manifestPath, naming_scheme: "V2" },
            { id: ids[1], version: 2, manifest_path: b2.manifestPath, naming_scheme: "V2" },
          ],
        }),
      );
      assert.deepEqual(res.versions.map((v) => v.manifest_size), [11, 18, 11]);
      assert.deepEqual(
        res.versions.map((v) => path.basename(v.manifest_path)),
        [manifestName(1), manifestName(1), manifestName(2)],
      );
      for (const [i, expected] of [[0, { 1: "manifest a1" }], [1, { 1: "manifest b1 longer", 2: "manifest b2" }]]) {
        const { finals, staging } = manifestFiles(locations[i]);
        assert.deepEqual(staging, []);
        assert.deepEqual([...finals.keys()].sort(), Object.keys(expected).map(Number));
        for (const [v, content] of Object.entries(expected))
          assert.equal(fs.readFileSync(finals.get(Number(v)).file, "utf8"), content);
        assert.deepEqual(
          catalogVersions(locations[i]).map((r) => [r.version, r.manifest_size]),
          Object.entries(expected).map(([v, c]) => [Number(v), c.length]),
        );
      }

      // a batch with a taken version writes no final manifest for the other entry
      const a2 = writeStagingManifest(locations[0], 2, "manifest a2");
      const b2again = writeStagingManifest(locations[1], 2, "manifest b2 again");
      fails(
        await post("/v1/table/version/batch-create", {
          entries: [
            { id: ids[0], version: 2, manifest_path: a2.manifestPath },
            { id: ids[1], version: 2, manifest_path: b2again.manifestPath },
          ],
        }),
        409,
        14,
      );
      assert.deepEqual([...manifestFiles(locations[0]).finals.keys()], [1]);
      assert.equal(fs.readFileSync(manifestFiles(locations[1]).finals.get(2).file, "utf8"), "manifest b2");
      assert.deepEqual(catalogVersions(locations[0]).map((r) => r.version), [1]);
      fs.rmSync(a2.file);
      fs.rmSync(b2again.file);
    });
  });

  describe("batch-commit", () => {
    test("declare, create versions and deregister in one request, results in request order", async () => {
      await register("bc_old");
      const res = ok(
        await post("/v1/table/batch-commit", {
          operations: [
            { declare_table: { id: [ns, "bc_new"], location: remote("bc_new") } },
            {
              create_table_version: {
                id: [ns, "bc_new"],
                version: 1,
                manifest_path: remotePath("bc_new", "1.manifest-x"),
              },
            },
            { deregister_table: { id: [ns, "bc_old"] } },
          ],
        }),
      );
      assert.equal(res.results.length, 3);
      assert.equal(res.results[0].declare_table.location, remote("bc_new"));
      assert.equal(res.results[1].create_table_version.version.version, 1);
      assert.deepEqual(res.results[2].deregister_table.id, [ns, "bc_old"]);
      assert.equal(res.results[2].deregister_table.location, remote("bc_old"));

      assert.equal((await describeTable([ns, "bc_new"], { check_declared: true })).is_only_declared, false);
      assert.deepEqual(await versionNumbers("bc_new"), [1]);
      fails(await post(tableRoute([ns, "bc_old"], "exists")), 404, 4);

      // delete_table_versions
      const del = ok(
        await post("/v1/table/batch-commit", {
          operations: [
            {
              delete_table_versions: {
                id: [ns, "bc_new"],
                ranges: [{ start_version: 0, end_version: -1 }],
              },
            },
          ],
        }),
      );
      assert.equal(del.results[0].delete_table_versions.deleted_count, 1);
      assert.deepEqual(await versionNumbers("bc_new"), []);
    });

    test("all or nothing: a failing operation undoes the others", async () => {
      await register("bc_keep");
      const res = fails(
        await post("/v1/table/batch-commit", {
          operations: [
            { declare_table: { id: [ns, "bc_ghost"], location: remote("bc_ghost") } },
            { deregister_table: { id: [ns, "bc_keep"] } },
            {
              create_table_version: {
                id: [ns, "bc_missing"],
                version: 1,
                manifest_path: remotePath("bc_missing", "1.manifest-x"),
              },
            },
          ],
        }),
        404,
        4,
      );
      assert.match(res.error ?? "", /bc_missing/);
      fails(await post(tableRoute([ns, "bc_ghost"], "exists")), 404, 4);
      assert.equal((await describeTable([ns, "bc_keep"])).location, remote("bc_keep"));

      // a name taken twice in one batch
      fails(
        await post("/v1/table/batch-commit", {
          operations: [
            { declare_table: { id: [ns, "bc_twice"], location: remote("bc_twice") } },
            { declare_table: { id: [ns, "bc_twice"], location: remote("bc_twice") } },
          ],
        }),
        409,
        5,
      );
      fails(await post(tableRoute([ns, "bc_twice"], "exists")), 404, 4);
      fails(await post("/v1/table/batch-commit", {}), 400, 13);
      fails(await post("/v1/table/batch-commit", { operations: [{}] }), 400, 13);
    });
  });
});
