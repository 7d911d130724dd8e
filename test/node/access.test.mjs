// Access control through the gateway: every request carries an API key
// (x-api-key, or Authorization: Bearer), the gateway's database role runs it
// as the key's role, and that role's grants decide what it sees and changes.
//
//   - without a key, or with one the catalog does not know (made up, revoked),
//     every route answers 401 with code 16, and nothing changes;
//   - the official client works with a key, and fails without one;
//   - a key whose role has read on one namespace reads there, cannot commit a
//     version or make anything there (403, code 15), and its listings hold
//     only what it may read; what it cannot read answers 404 (code 1 or 4),
//     as a name nobody uses;
//   - the key is the authority: the gateway's role is a member of no role.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  catalogVersions,
  clientAdd,
  connect,
  describeTable,
  env,
  fails,
  gatewayLogEntries,
  get,
  grant,
  http,
  itemRows as rows,
  makeRole,
  nsRoute,
  ok,
  post,
  psql,
  removeNamespace,
  tableRoute,
  uniqueName,
} from "./lib.mjs";

describe("access: API keys", { timeout: 120_000 }, () => {
  const ns = uniqueName("e2e_key");
  const madeUp = `lnk_${"0".repeat(12)}_${"0".repeat(64)}`;
  let revoked;

  before(async () => {
    ok(await post(nsRoute([ns], "create"), {}));
    const role = makeRole("e2e_key_gone");
    revoked = role.key;
    role.drop();
  });
  after(() => removeNamespace(ns));

  const requests = () => [
    ["GET", nsRoute([], "list"), undefined],
    ["GET", "/v1/table", undefined],
    ["POST", nsRoute([ns], "describe"), {}],
    ["POST", nsRoute([ns, "made"], "create"), {}],
    ["POST", tableRoute([ns, "t"], "declare"), {}],
  ];

  for (const [what, headers] of [
    ["no key", {}],
    ["an empty x-api-key", { "x-api-key": "" }],
    ["a made-up key", { "x-api-key": madeUp }],
    ["a made-up key as Bearer token", { authorization: `Bearer ${madeUp}` }],
    ["a revoked key", () => ({ "x-api-key": revoked })],
    ["a key with one character changed", () => ({ "x-api-key": revoked.slice(0, -1) + (revoked.endsWith("0") ? "1" : "0") })],
    ["Authorization that is not Bearer", () => ({ authorization: `Basic ${Buffer.from(`u:${revoked}`).toString("base64")}` })],
  ]) {
    test(`${what}: 401, code 16, on every route, and nothing changes`, async () => {
      const h = typeof headers === "function" ? headers() : headers;
      for (const [method, route, body] of requests()) {
        const res = await http(method, route, { body, headers: h, key: null });
        fails(res, 401, 16);
        assert.equal(typeof res.json.error, "string");
      }
      fails(await post(nsRoute([ns, "made"], "exists"), {}), 404, 1);
      fails(await post(tableRoute([ns, "t"], "exists"), {}), 404, 4);
    });
  }

  test("the administrator's key works as x-api-key and as Authorization: Bearer", async () => {
    const { apiKey } = env;
    ok(await http("GET", nsRoute([ns], "list"), { key: apiKey }));
    ok(await http("GET", nsRoute([ns], "list"), { key: null, headers: { authorization: `Bearer ${apiKey}` } }));
    ok(await http("GET", nsRoute([ns], "list"), { key: null, headers: { Authorization: `bearer  ${apiKey}` } }));
  });

  test("the official client works with a key and is refused without one", async () => {
    const db = await connect();
    await db.createNamespace([ns, "client"]);
    const t = await db.createTable("points", [{ id: 1, x: 0.5 }], [ns, "client"]);
    await t.add([{ id: 2, x: 1.5 }]);
    assert.equal(await t.version(), 2);
    assert.deepEqual(await db.tableNames([ns, "client"]), ["points"]);

    const anonymous = await connect(null);
    await assert.rejects(anonymous.listNamespaces([ns]), /401|API key|unauthenticated|authenticat/i);
    await assert.rejects(anonymous.createNamespace([ns, "anonymous"]), /401|API key|unauthenticated|authenticat/i);
    const stranger = await connect(madeUp);
    await assert.rejects(stranger.openTable("points", [ns, "client"]), /401|API key|unauthenticated|authenticat/i);
    fails(await post(nsRoute([ns, "anonymous"], "exists"), {}), 404, 1);
    assert.equal(await (await db.openTable("points", [ns, "client"])).countRows(), 2);
  });

  test("a key of a role the gateway's role is no member of works: the key is the authority", async () => {
    const role = makeRole("e2e_key_foreign");
    try {
      grant([ns], role.name, "read");
      ok(await http("POST", nsRoute([ns], "describe"), { body: {}, key: role.key }));
      fails(await http("POST", nsRoute([ns, "x"], "create"), { body: {}, key: role.key }), 403, 15);
    } finally {
      grant([ns], role.name, "read", { revoke: true });
      role.drop();
    }
  });
});

describe("access: a read-only key", { timeout: 180_000 }, () => {
  const ns = uniqueName("e2e_ro");
  const other = uniqueName("e2e_ro_other");
  const open = [ns, "open"];
  let reader;
  let admin;
  let location;

  before(async () => {
    admin = await connect();
    await admin.createNamespace([ns]);
    await admin.createNamespace(open);
    await admin.createNamespace([ns, "closed"]);
    await admin.createNamespace([other]);
    const t = await admin.createTable("items", rows(1, 3), open);
    await t.add(rows(4, 2));
    await admin.createTable("secret", rows(1, 1), [ns, "closed"]);
    await admin.createTable("top", rows(1, 1), [ns]);
    await admin.createTable("elsewhere", rows(1, 1), [other]);
    location = (await describeTable([...open, "items"])).location;
    reader = makeRole("e2e_reader");
    const granted = grant(open, reader.name, "read");
    assert.equal(granted.privilege, "read");
  });
  after(async () => {
    try {
      await removeNamespace(ns);
      await removeNamespace(other);
    } finally {
      reader?.drop();
    }
  });

  test("it reads what it was granted, with the official client too", async () => {
    ok(await http("POST", nsRoute(open, "describe"), { body: {}, key: reader.key }));
    const described = ok(await http("POST", tableRoute([...open, "items"], "describe"), { body: {}, key: reader.key }));
    assert.equal(described.location, location);
    const db = await connect(reader.key);
    const t = await db.openTable("items", open);
    assert.equal(await t.countRows(), 5);
    assert.equal(await t.version(), 2);
    assert.deepEqual(await db.tableNames(open), ["items"]);
  });

  test("it cannot commit a version: 403, code 15, and the catalog keeps its versions", async () => {
    const before = catalogVersions(location).map((v) => v.version);
    assert.deepEqual(before, [1, 2]);
    const res = await http("POST", tableRoute([...open, "items"], "version/create"), {
      body: { version: 3, manifest_path: `${location.replace(/^\/+/, "")}/_versions/3.manifest` },
      key: reader.key,
    });
    fails(res, 403, 15);
    fails(
      await http("POST", "/v1/table/version/batch-create", {
        body: { entries: [{ id: [...open, "items"], version: 3, manifest_path: "x/_versions/3.manifest" }] },
        key: reader.key,
      }),
      403,
      15,
    );

    // the official client: it writes its data files, then the catalog refuses
    // the commit (the client retries that for minutes: it is stopped after 12 s)
    const logged = gatewayLogEntries()?.length;
    const added = await clientAdd(open, "items", 100, 2, reader.key);
    assert.ok(!added.out.startsWith("committed"), `the read-only client committed: ${added.out}`);
    assert.ok(added.stopped || /403|permission|may not write/i.test(added.out), added.out);
    assert.deepEqual(catalogVersions(location).map((v) => v.version), before);
    const refused = gatewayLogEntries()
      ?.slice(logged)
      .filter((e) => e.method === "POST" && /^\/v1\/table\/.*\/version\/create$/.test(e.path) && e.status === 403);
    if (refused) {
      assert.ok(refused.length >= 1, "the client's commit never reached the catalog");
      for (const e of refused) {
        assert.equal(e.key_id, reader.keyId, JSON.stringify(e));
        assert.equal(e.operation, "CreateTableVersion", JSON.stringify(e));
        assert.equal(e.code, 15, JSON.stringify(e));
      }
    }
    const fresh = await (await connect()).openTable("items", open);
    assert.equal(await fresh.version(), 2);
    assert.equal(await fresh.countRows(), 5);
  });

  test("it cannot create a namespace or a table there, nor drop what is there: 403, code 15", async () => {
    fails(await http("POST", nsRoute([...open, "sub"], "create"), { body: {}, key: reader.key }), 403, 15);
    // the root exists for every caller: a top-level namespace is refused as such (403), in
    // the official client too, never "namespace $ does not exist"
    const top = uniqueName("top");
    fails(await http("POST", nsRoute([top], "create"), { body: {}, key: reader.key }), 403, 15);
    await assert.rejects((await connect(reader.key)).createNamespace([top]), (e) => !/does not exist/.test(String(e?.message)) && /403|permission|may not write/i.test(String(e?.message)));
    fails(await http("POST", tableRoute([...open, "new"], "declare"), { body: {}, key: reader.key }), 403, 15);
    fails(await http("POST", tableRoute([...open, "items"], "drop"), { body: {}, key: reader.key }), 403, 15);
    fails(await http("POST", nsRoute(open, "drop"), { body: {}, key: reader.key }), 403, 15);
    await assert.rejects((await connect(reader.key)).createNamespace([...open, "sub2"]), /403|permission|may not write/i);
    fails(await post(nsRoute([...open, "sub"], "exists"), {}), 404, 1);
    fails(await post(tableRoute([...open, "new"], "exists"), {}), 404, 4);
    ok(await post(tableRoute([...open, "items"], "describe"), {}));
  });

  test("its listings hold only what it may read", async () => {
    const list = async (route, key) => ok(await get(route, {}, { key }));
    // the namespace it was granted lies below one it cannot read: that one does not exist for it,
    // listed or described, and the root lists neither
    fails(await http("GET", nsRoute([ns], "list"), { key: reader.key }), 404, 1);
    fails(await http("POST", nsRoute([ns], "describe"), { body: {}, key: reader.key }), 404, 1);
    assert.deepEqual((await list(nsRoute([ns], "list"))).namespaces, ["closed", "open"]);
    // nothing of the others from the root
    const rootNames = (await list(nsRoute([], "list"), reader.key)).namespaces;
    assert.ok(!rootNames.includes(other), `root listing shows ${other}: ${rootNames}`);
    assert.ok(!rootNames.includes(ns), `root listing shows what the reader cannot read: ${rootNames}`);
    // tables
    assert.deepEqual((await list(nsRoute(open, "table/list"), reader.key)).tables, ["items"]);
    fails(await http("GET", nsRoute([ns], "table/list"), { key: reader.key }), 404, 1);
    assert.deepEqual((await list(nsRoute([ns], "table/list"))).tables, ["top"]);
    assert.deepEqual((await list("/v1/table", reader.key)).tables, [`${ns}$open$items`]);
    const all = (await list("/v1/table")).tables;
    for (const t of [`${ns}$open$items`, `${ns}$closed$secret`, `${ns}$top`, `${other}$elsewhere`]) assert.ok(all.includes(t), t);
    // the official client lists the same
    const db = await connect(reader.key);
    assert.deepEqual((await db.listNamespaces([...open])).namespaces, []);
    assert.deepEqual(await db.tableNames([...open]), ["items"]);
    await assert.rejects(db.listNamespaces([ns]), /404|not exist|not found/i);
  });

  test("what it cannot read does not exist for it: 404, code 1 or 4", async () => {
    const as = (method, route, body) => http(method, route, { body, key: reader.key });
    fails(await as("POST", tableRoute([ns, "closed", "secret"], "describe"), {}), 404, 4);
    fails(await as("POST", tableRoute([ns, "top"], "describe"), {}), 404, 4);
    fails(await as("POST", tableRoute([other, "elsewhere"], "describe"), {}), 404, 4);
    fails(await as("POST", tableRoute([ns, "top"], "exists"), {}), 404, 4);
    fails(await as("POST", tableRoute([ns, "top"], "version/list"), {}), 404, 4);
    fails(await as("POST", nsRoute([ns, "closed"], "describe"), {}), 404, 1);
    fails(await as("GET", nsRoute([ns, "closed"], "table/list")), 404, 1);
    fails(await as("POST", nsRoute([other], "describe"), {}), 404, 1);
    // the same answer as for a name nobody uses, so that names do not leak
    fails(await as("POST", tableRoute([ns, "closed", "nobody"], "describe"), {}), 404, 4);
    // writes there are not-found too, never 403
    fails(await as("POST", tableRoute([ns, "closed", "secret"], "version/create"), { version: 2, manifest_path: "x" }), 404, 4);
    fails(await as("POST", nsRoute([ns, "closed", "sub"], "create"), {}), 404, 1);
    await assert.rejects((await connect(reader.key)).openTable("secret", [ns, "closed"]), /404|not (found|exist)/i);
  });

  test("write granted: it commits; revoked: it cannot again", async () => {
    grant(open, reader.name, "write");
    try {
      const t = await (await connect(reader.key)).openTable("items", open);
      await t.add(rows(10, 1));
      assert.equal(await t.version(), 3);
      assert.deepEqual(catalogVersions(location).map((v) => v.version), [1, 2, 3]);
    } finally {
      grant(open, reader.name, "write", { revoke: true });
    }
    fails(
      await http("POST", tableRoute([...open, "items"], "version/create"), {
        body: { version: 4, manifest_path: `${location.replace(/^\/+/, "")}/_versions/4.manifest` },
        key: reader.key,
      }),
      403,
      15,
    );
    assert.deepEqual(catalogVersions(location).map((v) => v.version), [1, 2, 3]);
    // the change log names the reader's role as the one who committed version 3
    const by = psql(
      `SELECT role FROM lance_catalog.change WHERE operation = 'CreateTableVersion' AND objects = ARRAY[:'t'] ORDER BY seq DESC LIMIT 1`,
      { t: `${ns}$open$items` },
    );
    assert.equal(by, reader.name);
  });
});
