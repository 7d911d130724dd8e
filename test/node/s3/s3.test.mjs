// Tables on S3: the official client through the gateway on a catalog whose
// root is s3://lake/cat, served by s3rver behind the signature-checking
// proxy of ../s3server.mjs; commits, rollbacks and failures of the store
// checked against the bucket's objects.
//
// Besides env.mjs's variables: LANCE_S3_ENDPOINT (the proxy, e.g.
// http://127.0.0.1:9100), LANCE_S3_CONTROL (its control port's URL) and
// LANCE_S3_LOCAL (a folder in lance_namespace.local_roots of this database).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import { after, before, describe, test } from "node:test";
import aws4 from "aws4";
import {
  clientAdd,
  connect,
  describeTable,
  env,
  fails,
  http,
  itemRows,
  makeRole,
  manifestName,
  ok,
  post,
  psql,
  tableRoute,
  uniqueName,
} from "../lib.mjs";

for (const name of ["LANCE_S3_ENDPOINT", "LANCE_S3_CONTROL", "LANCE_S3_LOCAL"])
  if (!process.env[name]) throw new Error(`${name} is not set: scripts/test.sh sets it for these tests`);
const endpoint = process.env.LANCE_S3_ENDPOINT;
const control = process.env.LANCE_S3_CONTROL;
const localRoot = process.env.LANCE_S3_LOCAL;
const storeOptions = {
  aws_endpoint: endpoint,
  aws_region: "us-east-1",
  aws_access_key_id: "S3RVER",
  aws_secret_access_key: "S3RVER",
  allow_http: "true",
};

/** One signed request to the store; answers status and body text. */
async function s3(method, path) {
  const url = new URL(endpoint + path);
  const signed = aws4.sign(
    { method, host: url.host, path: url.pathname + url.search, service: "s3", region: "us-east-1" },
    { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  );
  const res = await fetch(url, { method, headers: signed.headers });
  return { status: res.status, text: await res.text() };
}

/** The keys of the bucket below `prefix`. */
async function listKeys(prefix) {
  const res = await s3("GET", `/lake?list-type=2&prefix=${encodeURIComponent(prefix)}`);
  assert.equal(res.status, 200, res.text);
  const entities = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
  const decode = (xml) =>
    xml.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (_, e) =>
      e[0] === "#" ? String.fromCodePoint(Number(e[1] === "x" ? `0${e.slice(1)}` : e.slice(1))) : entities[e],
    );
  return [...res.text.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => decode(m[1]));
}

/**
 * Run `check` until it passes, for at most 10 s: a version's staging object
 * is deleted after its commit has answered (in the background).
 */
async function eventually(check) {
  const end = Date.now() + 10_000;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > end) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

const keyOf = (location) => location.replace(/^s3:\/\/[^/]+\//, "");
const setMode = (mode) => fetch(`${control}/mode/${mode}`).then((r) => r.text());

/** The catalog's versions of a table (main), ascending: [{version, manifest_path}]. */
function versionRows(location) {
  return JSON.parse(
    psql(
      `SELECT coalesce(json_agg(json_build_object('version', v.version, 'manifest_path', v.manifest_path)
                                ORDER BY v.version), '[]')
         FROM lance_catalog.version v JOIN lance_catalog.object o ON o.id = v.table_id
        WHERE o.location = :'loc' AND v.branch = ''`,
      { loc: location },
    ),
  );
}

/** A Lance error from psql's stderr: {code, ms}. */
function sqlError(sql, vars = {}) {
  const start = Date.now();
  try {
    psql(sql, vars);
  } catch (e) {
    const m = /"code":\s*(\d+)/.exec(String(e.stderr));
    return { code: m ? Number(m[1]) : null, ms: Date.now() - start, text: String(e.stderr) };
  }
  assert.fail(`expected an error from: ${sql}`);
}

/**
 * A psql session whose statements run when `run` is called, so that a
 * transaction can stay open while the test acts elsewhere.  `run` answers
 * what psql printed (errors included).
 */
function psqlSession() {
  const child = spawn("psql", ["-X", "-q", "-t", "-A", ...env.psqlArgs], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  let n = 0;
  return {
    run(sql) {
      const marker = `done-${++n}`;
      const start = out.length;
      child.stdin.write(`${sql}\n\\echo ${marker}\n`);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`psql did not answer: ${out}`)), 30_000);
        const check = () => {
          if (out.indexOf(marker, start) >= 0) {
            clearTimeout(timer);
            child.stdout.off("data", check);
            resolve(out.slice(start));
          }
        };
        child.stdout.on("data", check);
        check();
      });
    },
    end() {
      child.stdin.end();
      child.kill();
    },
  };
}

async function putObject(key, body) {
  const url = new URL(`${endpoint}/lake/${key.split("/").map(encodeURIComponent).join("/")}`);
  const signed = aws4.sign(
    { method: "PUT", host: url.host, path: url.pathname, body, service: "s3", region: "us-east-1" },
    { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  );
  const res = await fetch(url, { method: "PUT", headers: signed.headers, body });
  assert.equal(res.status, 200, await res.text());
}

describe("tables on S3", { timeout: 300_000 }, () => {
  const ns = uniqueName("s3");
  let db;
  let table;
  let location;
  let rejectedBefore;

  before(async () => {
    rejectedBefore = (await fetch(`${control}/stats`).then((r) => r.json())).rejected;
    // the client holds no keys of its own: it is handed temporary ones of its table (vend.test.mjs)
    psql(`SELECT lance_set_storage(:'req'::jsonb)`, {
      req: JSON.stringify({
        location: "s3://lake/cat",
        options: storeOptions,
        vend: { mode: "sts", role_arn: "arn:aws:iam::000000000000:role/lance-tables", sts_endpoint: endpoint },
      }),
    });
    db = await connect();
    await db.createNamespace([ns]);
  });
  after(async () => {
    await setMode("up");
  });

  test("the client creates a table on S3 through the catalog and appends to it", async () => {
    table = await db.createTable("items", itemRows(0, 5), [ns]);
    const d = await describeTable([ns, "items"]);
    location = d.location;
    assert.match(location, new RegExp(`^s3://lake/cat/${ns}/items_[0-9a-f]{8}\\.lance$`));
    assert.equal(d.managed_versioning, true);
    const { aws_access_key_id: keyId, aws_secret_access_key: secret, aws_session_token: token, expires_at_millis: expires, ...where } =
      d.storage_options;
    assert.deepEqual(where, { aws_endpoint: endpoint, aws_region: "us-east-1", allow_http: "true" });
    assert.match(keyId, /^ASIA/);
    assert.ok(secret && token && secret !== "S3RVER" && Number(expires) > Date.now(), JSON.stringify(d.storage_options));
    await table.add(itemRows(5, 3));
    await table.add(itemRows(8, 2));
    assert.equal(await table.version(), 3);
    const reopened = await db.openTable("items", [ns]);
    assert.equal(await reopened.countRows(), 10);
    await reopened.checkout(1);
    assert.equal(await reopened.countRows(), 5);
  });

  test("the bucket's _versions objects are the catalog's versions, and no staging object is left", async () => {
    const rows = versionRows(location);
    assert.deepEqual(rows.map((r) => r.version), [1, 2, 3]);
    await eventually(async () => {
      const keys = (await listKeys(`${keyOf(location)}/_versions/`)).sort();
      assert.deepEqual(keys, rows.map((r) => `${keyOf(location)}/_versions/${manifestName(r.version)}`).sort());
    });
    for (const r of rows) assert.equal(r.manifest_path, `${keyOf(location)}/_versions/${manifestName(r.version)}`);
  });

  test("tags are kept in the bucket's _refs and the client checks them out", async () => {
    ok(await post(tableRoute([ns, "items"], "tags/create"), { id: [ns, "items"], tag: "first", version: 1 }));
    const keys = await listKeys(`${keyOf(location)}/_refs/tags/`);
    assert.deepEqual(keys, [`${keyOf(location)}/_refs/tags/first.json`]);
    const t = await db.openTable("items", [ns]);
    assert.deepEqual(Object.keys(await (await t.tags()).list()), ["first"]);
    await t.checkout("first");
    assert.equal(await t.countRows(), 5);
    ok(await post(tableRoute([ns, "items"], "tags/delete"), { id: [ns, "items"], tag: "first" }));
    assert.deepEqual(await listKeys(`${keyOf(location)}/_refs/tags/`), []);
  });

  test("eight concurrent appenders get gap-free versions and lose no rows", async () => {
    const name = "busy";
    await db.createTable(name, itemRows(0, 1), [ns]);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => clientAdd([ns], name, 1000 + i * 10, 10, env.apiKey, { seconds: 120 })),
    );
    for (const r of results) assert.match(r.out, /^committed \d+$/, r.out);
    const loc = (await describeTable([ns, name])).location;
    assert.deepEqual(versionRows(loc).map((r) => r.version), Array.from({ length: 9 }, (_, i) => i + 1));
    const t = await db.openTable(name, [ns]);
    assert.equal(await t.countRows(), 81);
    await eventually(async () => assert.equal((await listKeys(`${keyOf(loc)}/_versions/`)).length, 9));
  });

  test("branches live in the bucket: the client checks one out, commits on it, and a deletion removes its objects", async () => {
    const name = "branchy";
    const t = await db.createTable(name, itemRows(0, 2), [ns]); // v1
    await t.add(itemRows(2, 3)); // v2: 5 rows
    const id = [ns, name];
    const loc = (await describeTable(id)).location;
    ok(await post(tableRoute(id, "branches/create"), { id, name: "dev", from_version: 1 }));
    const treeKeys = await listKeys(`${keyOf(loc)}/tree/dev/_versions/`);
    assert.deepEqual(treeKeys, [`${keyOf(loc)}/tree/dev/_versions/${manifestName(1)}`]);
    assert.deepEqual(await listKeys(`${keyOf(loc)}/_refs/branches/`), [`${keyOf(loc)}/_refs/branches/dev.json`]);
    const dev = await (await t.branches()).checkout("dev");
    assert.equal(await dev.countRows(), 2);
    await dev.add(itemRows(100, 1));
    assert.equal(await dev.countRows(), 3);
    await t.checkoutLatest();
    assert.equal(await t.countRows(), 5);
    ok(await post(tableRoute(id, "branches/delete"), { id, name: "dev" }));
    assert.deepEqual(await listKeys(`${keyOf(loc)}/_refs/branches/`), []);
    // the branch's objects go once the deletion has committed
    assert.deepEqual(await listKeys(`${keyOf(loc)}/tree/dev/`), []);
  });

  test("a branch deleted and made again in one transaction keeps its new objects", async () => {
    const id = [ns, "branchy"];
    const loc = (await describeTable(id)).location;
    ok(await post(tableRoute(id, "branches/create"), { id, name: "again", from_version: 1 }));
    psql(
      `BEGIN;
       SELECT lance_delete_table_branch(:'del'::jsonb) IS NOT NULL;
       SELECT lance_create_table_branch(:'mk'::jsonb) IS NOT NULL;
       COMMIT;`,
      { del: JSON.stringify({ id, name: "again" }), mk: JSON.stringify({ id, name: "again", from_version: 1 }) },
    );
    assert.deepEqual(await listKeys(`${keyOf(loc)}/tree/again/_versions/`), [
      `${keyOf(loc)}/tree/again/_versions/${manifestName(1)}`,
    ]);
    const again = await (await (await db.openTable("branchy", [ns])).branches()).checkout("again");
    assert.equal(await again.countRows(), 2);
  });

  test("tags of a transaction that rolls back never reach the bucket, and a commit that fails puts them back", async () => {
    const id = [ns, "busy"];
    const loc = (await describeTable(id)).location;
    const tagKey = `${keyOf(loc)}/_refs/tags/kept.json`;
    ok(await post(tableRoute(id, "tags/create"), { id, tag: "kept", version: 2 }));
    psql(
      `BEGIN;
       SELECT lance_create_table_tag(:'mk'::jsonb) IS NOT NULL;
       SELECT lance_delete_table_tag(:'rm'::jsonb) IS NOT NULL;
       ROLLBACK;`,
      {
        mk: JSON.stringify({ id, tag: "gone", version: 1 }),
        rm: JSON.stringify({ id, tag: "kept" }),
      },
    );
    assert.deepEqual(await listKeys(`${keyOf(loc)}/_refs/tags/`), [tagKey]);
    // a commit that fails after it wrote some refs puts them back: "gone" is
    // created in the bucket behind the catalog's back while the transaction
    // runs, so that its commit deletes "kept" and then fails to create "gone"
    const session = psqlSession();
    let out;
    try {
      await session.run(`BEGIN;
        SELECT lance_delete_table_tag('${JSON.stringify({ id, tag: "kept" })}'::jsonb) IS NOT NULL;
        SELECT lance_create_table_tag('${JSON.stringify({ id, tag: "gone", version: 1 })}'::jsonb) IS NOT NULL;`);
      await putObject(`${keyOf(loc)}/_refs/tags/gone.json`, "{}");
      out = await session.run("COMMIT;");
    } finally {
      session.end();
    }
    assert.match(out, /created by another writer/);
    assert.deepEqual((await listKeys(`${keyOf(loc)}/_refs/tags/`)).sort(), [`${keyOf(loc)}/_refs/tags/gone.json`, tagKey]);
    assert.equal((await s3("GET", `/lake/${tagKey}`)).status, 200);
    await s3("DELETE", `/lake/${keyOf(loc)}/_refs/tags/gone.json`);
    const tags = ok(await post(tableRoute(id, "tags/list"), { id })).tags;
    assert.deepEqual(Object.keys(tags), ["kept"]);
  });

  test("a store down during a rollback: the next maintenance round removes the final object and puts a deleted tag back", async () => {
    const id = [ns, uniqueName("undo")];
    const loc = ok(await post(tableRoute(id, "declare"), { id })).location;
    const key = keyOf(loc);
    const finalKey = (v) => `${key}/_versions/${manifestName(v)}`;
    const tagKey = `${key}/_refs/tags/kept.json`;
    const version = (v) => JSON.stringify({ id, version: v, manifest_path: `${key}/_versions/stage-${v}` });
    await putObject(`${key}/_versions/stage-1`, "manifest one");
    await putObject(`${key}/_versions/stage-2`, "manifest two");
    psql(`SELECT lance_create_table_version(:'req'::jsonb)`, { req: version(1) });
    ok(await post(tableRoute(id, "tags/create"), { id, tag: "kept", version: 1 }));
    const keptContent = (await s3("GET", `/lake/${tagKey}`)).text;

    // version 2's final object is made, and the store is down when the transaction rolls back
    const session = psqlSession();
    try {
      await session.run(`SET lance_namespace.storage_timeout = '2s'; BEGIN;
        SELECT lance_create_table_version('${version(2)}'::jsonb) IS NOT NULL;`);
      await setMode("down");
      await session.run("ROLLBACK;");
      await setMode("up");
      // a commit that deletes "kept" and then fails (the store stops after the two requests
      // of the deletion), with the store still down for its undo
      await session.run(`BEGIN;
        SELECT lance_delete_table_tag('${JSON.stringify({ id, tag: "kept" })}'::jsonb) IS NOT NULL;
        SELECT lance_create_table_tag('${JSON.stringify({ id, tag: "other", version: 1 })}'::jsonb) IS NOT NULL;`);
      await setMode("down-after/2");
      const out = await session.run("COMMIT;");
      assert.match(out, /"code": ?17/, out);
    } finally {
      await setMode("up");
      session.end();
    }
    assert.deepEqual(versionRows(loc).map((r) => r.version), [1]);
    assert.equal((await s3("HEAD", `/lake/${finalKey(2)}`)).status, 200, "the undo could not delete it");
    assert.equal((await s3("HEAD", `/lake/${tagKey}`)).status, 404, "the undo could not put it back");

    // the next maintenance round: the bucket matches the catalog
    psql("SELECT lance_sweep_leftovers()");
    assert.equal((await s3("HEAD", `/lake/${finalKey(2)}`)).status, 404);
    assert.equal((await s3("HEAD", `/lake/${finalKey(1)}`)).status, 200);
    const kept = await s3("GET", `/lake/${tagKey}`);
    assert.equal(kept.status, 200);
    assert.equal(kept.text, keptContent);
    assert.equal((await s3("HEAD", `/lake/${key}/_refs/tags/other.json`)).status, 404);
    assert.deepEqual(Object.keys(ok(await post(tableRoute(id, "tags/list"), { id })).tags), ["kept"]);
    assert.equal(psql("SELECT count(*) FROM lance_catalog.storage_undo"), "0");
    // version 2 can be created again, and a later round leaves it alone
    psql(`SELECT lance_create_table_version(:'req'::jsonb)`, { req: version(2) });
    psql("SELECT lance_sweep_leftovers()");
    assert.equal((await s3("HEAD", `/lake/${finalKey(2)}`)).status, 200);
  });

  test("a rename keeps the table's objects, and a drop removes them once processed", async () => {
    ok(
      await post(tableRoute([ns, "items"], "rename"), {
        id: [ns, "items"],
        new_table_name: "renamed",
      }),
    );
    const t = await db.openTable("renamed", [ns]);
    assert.equal(await t.countRows(), 10);
    await db.dropTable("renamed", [ns]);
    assert.ok((await listKeys(`${keyOf(location)}/`)).length > 0);
    psql("SELECT lance_process_drops()");
    assert.deepEqual(await listKeys(`${keyOf(location)}/`), []);
  });

  test("a rolled-back batch over an S3 table and a local one, or a rolled-back savepoint, leaves no final manifest; a second writer of a version gets 14", async () => {
    const s3Table = uniqueName("rb");
    const s3Loc = ok(await post(tableRoute([ns, s3Table], "declare"), { id: [ns, s3Table] })).location;
    const localLoc = `${localRoot}/${uniqueName("local")}`;
    fs.mkdirSync(`${localLoc}/_versions`, { recursive: true });
    fs.chmodSync(localLoc, 0o777);
    fs.chmodSync(`${localLoc}/_versions`, 0o777);
    ok(await post(tableRoute([ns, "loc"], "declare"), { id: [ns, "loc"], location: localLoc }));
    await putObject(`${keyOf(s3Loc)}/_versions/stage.manifest-1`, "s3 manifest");
    fs.writeFileSync(`${localLoc}/_versions/stage.manifest-1`, "local manifest");
    const out = psql(
      `BEGIN;
       SELECT lance_batch_create_table_versions(:'req'::jsonb) IS NOT NULL;
       ROLLBACK;`,
      {
        req: JSON.stringify({
          entries: [
            { id: [ns, s3Table], version: 1, manifest_path: `${keyOf(s3Loc)}/_versions/stage.manifest-1` },
            { id: [ns, "loc"], version: 1, manifest_path: `${localLoc.slice(1)}/_versions/stage.manifest-1` },
          ],
        }),
      },
    );
    assert.equal(out, "t");
    assert.deepEqual(await listKeys(`${keyOf(s3Loc)}/_versions/`), [`${keyOf(s3Loc)}/_versions/stage.manifest-1`]);
    assert.deepEqual(fs.readdirSync(`${localLoc}/_versions`), ["stage.manifest-1"]);
    assert.deepEqual(versionRows(s3Loc), []);

    // a savepoint rolled back undoes its copy at once
    const versions = `${keyOf(s3Loc)}/_versions/`;
    const entry = { id: [ns, s3Table], version: 1, manifest_path: `${versions}stage.manifest-1` };
    psql(
      `BEGIN;
       SAVEPOINT s;
       SELECT lance_create_table_version(:'v'::jsonb) IS NOT NULL;
       ROLLBACK TO s;
       COMMIT;`,
      { v: JSON.stringify(entry) },
    );
    assert.deepEqual(await listKeys(versions), [`${versions}stage.manifest-1`]);
    assert.deepEqual(versionRows(s3Loc), []);
    // BatchCommitTables makes it
    psql(`SELECT lance_batch_commit_tables(:'req'::jsonb) IS NOT NULL`, {
      req: JSON.stringify({ operations: [{ create_table_version: entry }] }),
    });
    await eventually(async () => assert.deepEqual(await listKeys(versions), [`${versions}${manifestName(1)}`]));
    // a second writer of that version gets 14, and the committed manifest stays as it is
    await putObject(`${versions}stage.manifest-2`, "another writer's");
    fails(
      await post(tableRoute([ns, s3Table], "version/create"), { ...entry, manifest_path: `${versions}stage.manifest-2` }),
      409,
      14,
    );
    assert.equal((await s3("GET", `/lake/${versions}${manifestName(1)}`)).text, "s3 manifest");
    assert.deepEqual(versionRows(s3Loc).map((r) => r.version), [1]);
  });

  test("a missing staging object or bucket answers 13, wrong credentials 15, and nothing changes", async () => {
    const t = uniqueName("fail");
    const loc = ok(await post(tableRoute([ns, t], "declare"), { id: [ns, t] })).location;
    const missing = await post(tableRoute([ns, t], "version/create"), {
      id: [ns, t],
      version: 1,
      manifest_path: `${keyOf(loc)}/_versions/nothing.manifest-x`,
    });
    fails(missing, 400, 13);
    assert.match(missing.json.error, /does not exist/);

    psql(`SELECT lance_set_storage(:'req'::jsonb)`, {
      req: JSON.stringify({ location: "s3://nosuchbucket", options: storeOptions }),
    });
    psql(`SELECT lance_set_storage(:'req'::jsonb)`, {
      req: JSON.stringify({ location: "s3://lake/badkey", options: { ...storeOptions, aws_secret_access_key: "wrong" } }),
    });
    for (const [base, code, status] of [
      ["s3://nosuchbucket", 13, 400],
      ["s3://lake/badkey", 15, 403],
    ]) {
      const name = uniqueName("f");
      const where = `${base}/${name}.lance`;
      ok(await post(tableRoute([ns, name], "declare"), { id: [ns, name], location: where }));
      const res = await post(tableRoute([ns, name], "version/create"), {
        id: [ns, name],
        version: 1,
        manifest_path: `${keyOf(where)}/_versions/stage.manifest-1`,
      });
      fails(res, status, code);
      assert.deepEqual(versionRows(where), []);
    }
    assert.deepEqual(versionRows(loc), []);
  });

  test("a store that stops answering fails the commit with 17 within the timeout, and the next commit works", async () => {
    const t = uniqueName("stall");
    const loc = ok(await post(tableRoute([ns, t], "declare"), { id: [ns, t] })).location;
    await putObject(`${keyOf(loc)}/_versions/stage.manifest-1`, "manifest one");
    const req = JSON.stringify({ id: [ns, t], version: 1, manifest_path: `${keyOf(loc)}/_versions/stage.manifest-1` });
    for (const mode of ["stall", "down"]) {
      await setMode(mode);
      const e = sqlError(
        `SET lance_namespace.storage_timeout = '2s'; SELECT lance_create_table_version(:'req'::jsonb);`,
        { req },
      );
      await setMode("up");
      assert.equal(e.code, 17, e.text);
      assert.ok(e.ms < 10_000, `took ${e.ms} ms`);
      assert.deepEqual(versionRows(loc), []);
    }
    // statement_timeout cancels a request the store holds, long before storage_timeout
    await setMode("stall");
    const cancelled = sqlError(
      `SET lance_namespace.storage_timeout = '60s'; SET statement_timeout = '1s';
       SELECT lance_create_table_version(:'req'::jsonb);`,
      { req },
    );
    await setMode("up");
    assert.match(cancelled.text, /canceling statement due to statement timeout/);
    assert.ok(cancelled.ms < 5_000, `took ${cancelled.ms} ms: ${cancelled.text}`);
    // lance_rest, what the gateway calls, is cancelled as well: the statement ends, rather than
    // answer 503 and go on
    await setMode("stall");
    const viaRest = sqlError(
      `SET lance_namespace.storage_timeout = '60s'; SET statement_timeout = '1s';
       SELECT status FROM lance_rest('POST', :'path', '', :'req', jsonb_build_object('x-api-key', :'key'));`,
      { path: tableRoute([ns, t], "version/create"), req, key: env.apiKey },
    );
    await setMode("up");
    assert.match(viaRest.text, /canceling statement due to statement timeout/);
    assert.deepEqual(versionRows(loc), []);
    psql(`SELECT lance_create_table_version(:'req'::jsonb)`, { req });
    assert.deepEqual(versionRows(loc).map((r) => r.version), [1]);
    await eventually(async () =>
      assert.deepEqual(await listKeys(`${keyOf(loc)}/_versions/`), [`${keyOf(loc)}/_versions/${manifestName(1)}`]),
    );
  });

  test("a store that stops between the copies of a batch: 17, no version, and the batch succeeds once it is back", async () => {
    const names = [uniqueName("mid"), uniqueName("mid")];
    const locs = [];
    for (const name of names) {
      const loc = ok(await post(tableRoute([ns, name], "declare"), { id: [ns, name] })).location;
      await putObject(`${keyOf(loc)}/_versions/stage.manifest-1`, `manifest of ${name}`);
      locs.push(loc);
    }
    const req = JSON.stringify({
      entries: names.map((name, i) => ({
        id: [ns, name],
        version: 1,
        manifest_path: `${keyOf(locs[i])}/_versions/stage.manifest-1`,
        manifest_size: Buffer.byteLength(`manifest of ${name}`),
      })),
    });
    // the first copy is served, then the store is gone
    await setMode("down-after/1");
    const e = sqlError(
      `SET lance_namespace.storage_timeout = '3s'; SELECT lance_batch_create_table_versions(:'req'::jsonb);`,
      { req },
    );
    await setMode("up");
    assert.equal(e.code, 17, e.text);
    for (const loc of locs) assert.deepEqual(versionRows(loc), []);
    psql(`SELECT lance_batch_create_table_versions(:'req'::jsonb) IS NOT NULL`, { req });
    for (const loc of locs) {
      assert.deepEqual(versionRows(loc).map((r) => r.version), [1]);
      await eventually(async () =>
        assert.deepEqual(await listKeys(`${keyOf(loc)}/_versions/`), [`${keyOf(loc)}/_versions/${manifestName(1)}`]),
      );
    }
  });

  test("the copy path Lance takes (the size given, no look-up): a missing staging object 13, wrong keys 15 with the store's reason, a stalled store 17", async () => {
    const name = uniqueName("copy");
    const loc = ok(await post(tableRoute([ns, name], "declare"), { id: [ns, name] })).location;
    const create = (extra) =>
      post(tableRoute([ns, name], "version/create"), { id: [ns, name], version: 1, manifest_size: 9, ...extra });
    const missing = await create({ manifest_path: `${keyOf(loc)}/_versions/none.manifest-1` });
    fails(missing, 400, 13);
    assert.match(missing.json.error, /does not exist/);

    const bad = uniqueName("badcopy");
    const where = `s3://lake/badkey/${bad}.lance`;
    ok(await post(tableRoute([ns, bad], "declare"), { id: [ns, bad], location: where }));
    const refused = await post(tableRoute([ns, bad], "version/create"), {
      id: [ns, bad],
      version: 1,
      manifest_path: `${keyOf(where)}/_versions/stage.manifest-1`,
      manifest_size: 9,
    });
    fails(refused, 403, 15);
    assert.match(refused.json.error, /SignatureDoesNotMatch/);

    await putObject(`${keyOf(loc)}/_versions/stage.manifest-1`, "manifest!");
    const req = JSON.stringify({ id: [ns, name], version: 1, manifest_path: `${keyOf(loc)}/_versions/stage.manifest-1`, manifest_size: 9 });
    await setMode("stall");
    const stalled = sqlError(`SET lance_namespace.storage_timeout = '2s'; SELECT lance_create_table_version(:'req'::jsonb);`, { req });
    await setMode("up");
    assert.equal(stalled.code, 17, stalled.text);
    assert.deepEqual(versionRows(loc), []);
    // a staging name that is a committed version's final name is refused
    psql(`SELECT lance_create_table_version(:'req'::jsonb) IS NOT NULL`, { req });
    const reuse = await create({ version: 2, manifest_path: `${keyOf(loc)}/_versions/${manifestName(1)}` });
    fails(reuse, 400, 13);
    assert.match(reuse.json.error, /final name of another version/);
    assert.equal((await s3("GET", `/lake/${keyOf(loc)}/_versions/${manifestName(1)}`)).text, "manifest!");
  });

  test("pg_cancel_backend stops a call the store holds, at once", async () => {
    const name = uniqueName("cancel");
    const loc = ok(await post(tableRoute([ns, name], "declare"), { id: [ns, name] })).location;
    await putObject(`${keyOf(loc)}/_versions/stage.manifest-1`, "manifest");
    const session = psqlSession();
    try {
      const pid = (await session.run("SELECT pg_backend_pid();")).trim().split("\n")[0];
      await setMode("stall");
      const call = session.run(
        `SET lance_namespace.storage_timeout = '60s';
         SELECT lance_create_table_version('${JSON.stringify({ id: [ns, name], version: 1, manifest_path: `${keyOf(loc)}/_versions/stage.manifest-1` })}'::jsonb);`,
      );
      // once the request is in the store's hands
      await eventually(async () => {
        const stats = await fetch(`${control}/stats`).then((r) => r.json());
        assert.ok(stats.requests.at(-1).includes(`${keyOf(loc)}/_versions/stage.manifest-1`), stats.requests.at(-1));
      });
      const start = Date.now();
      psql(`SELECT pg_cancel_backend(${Number(pid)})`);
      const out = await call;
      assert.match(out, /canceling statement due to user request/);
      assert.ok(Date.now() - start < 2_000, `took ${Date.now() - start} ms`);
    } finally {
      await setMode("up");
      session.end();
    }
    assert.deepEqual(versionRows(loc), []);
  });

  test("a cancelled CreateTableVersion waits for its copy: the store never lands it over the next writer's manifest", async () => {
    const name = uniqueName("late");
    const loc = ok(await post(tableRoute([ns, name], "declare"), { id: [ns, name] })).location;
    const versions = `${keyOf(loc)}/_versions/`;
    const content = { a: "manifest of the cancelled writer", b: "manifest of the second writer" };
    for (const who of ["a", "b"]) await putObject(`${versions}${who}.manifest-1`, content[who]);
    // the size given: the copy is the first request, no look-up
    const req = (who) =>
      JSON.stringify({
        id: [ns, name],
        version: 1,
        manifest_path: `${versions}${who}.manifest-1`,
        manifest_size: Buffer.byteLength(content[who]),
      });
    const stats = () => fetch(`${control}/stats`).then((r) => r.json());
    const held = (await stats()).delayedCopies;
    // the store takes 3 s over the first writer's copy; its statement is cancelled after 1 s
    await fetch(`${control}/mode/delay-copy/3000`);
    const first = sqlError(
      `SET lance_namespace.storage_timeout = '60s'; SET statement_timeout = '1s';
       SELECT lance_create_table_version(:'req'::jsonb);`,
      { req: req("a") },
    );
    assert.match(first.text, /canceling statement due to statement timeout/);
    assert.equal((await stats()).delayedCopies.held, held.held + 1);
    // the next writer of that version commits
    psql(`SELECT lance_create_table_version(:'req'::jsonb) IS NOT NULL`, { req: req("b") });
    assert.deepEqual(versionRows(loc).map((r) => r.version), [1]);
    // once the store has made the delayed copy, the committed manifest is still the second writer's
    await eventually(async () => assert.equal((await stats()).delayedCopies.done, held.done + 1));
    assert.equal((await s3("GET", `/lake/${versions}${manifestName(1)}`)).text, content.b);
    await eventually(async () =>
      assert.deepEqual((await listKeys(versions)).sort(), [`${versions}a.manifest-1`, `${versions}${manifestName(1)}`].sort()),
    );
  });

  test("what may be retried is (503 twice, then the commit goes through); a 400 is not, and throttling answers 21", async () => {
    const name = uniqueName("retry");
    const loc = ok(await post(tableRoute([ns, name], "declare"), { id: [ns, name] })).location;
    await putObject(`${keyOf(loc)}/_versions/s1.manifest-1`, "one");
    await putObject(`${keyOf(loc)}/_versions/s2.manifest-1`, "two");
    const version = (v) =>
      JSON.stringify({ id: [ns, name], version: v, manifest_path: `${keyOf(loc)}/_versions/s${v}.manifest-1`, manifest_size: 3 });
    const count = async () => (await fetch(`${control}/stats`).then((r) => r.json())).total;
    await fetch(`${control}/mode/error/2/503`);
    psql(`SELECT lance_create_table_version(:'req'::jsonb) IS NOT NULL`, { req: version(1) });
    assert.deepEqual(versionRows(loc).map((r) => r.version), [1]);
    await fetch(`${control}/mode/error/3/503`);
    const throttled = sqlError(`SELECT lance_create_table_version(:'req'::jsonb)`, { req: version(2) });
    assert.equal(throttled.code, 21, throttled.text);
    await fetch(`${control}/mode/error/1/400`);
    const before = await count();
    const bad = sqlError(`SELECT lance_create_table_version(:'req'::jsonb)`, { req: version(2) });
    assert.equal(bad.code, 18, bad.text);
    // the copy is sent once; then its undo deletes what it may have made
    const stats = await fetch(`${control}/stats`).then((r) => r.json());
    const sent = stats.requests.slice(-(stats.total - before));
    assert.deepEqual(
      sent.map((r) => r.split(" ")[0]),
      ["PUT", "DELETE"],
      sent.join("\n"),
    );
    assert.deepEqual(versionRows(loc).map((r) => r.version), [1]);
  });

  test("a drop removes more than a thousand objects (listing and deleting page by page)", async () => {
    const name = uniqueName("many");
    const loc = ok(await post(tableRoute([ns, name], "declare"), { id: [ns, name] })).location;
    for (let i = 0; i < 1010; i += 50)
      await Promise.all(Array.from({ length: Math.min(50, 1010 - i) }, (_, j) => putObject(`${keyOf(loc)}/data/f${i + j}`, "x")));
    assert.equal((await listKeys(`${keyOf(loc)}/`)).length, 1000); // a page
    ok(await post(tableRoute([ns, name], "drop"), { id: [ns, name] }));
    psql("SELECT lance_process_drops()");
    assert.deepEqual(await listKeys(`${keyOf(loc)}/`), []);
  });

  test("storage options go only to callers that may read the table, and never into the feed or a listing", async () => {
    const reader = makeRole("s3_reader");
    const stranger = makeRole("s3_stranger");
    try {
      psql(`SELECT lance_grant(:'req'::jsonb)`, {
        req: JSON.stringify({ id: [ns], role: reader.name, privilege: "read" }),
      });
      const id = [ns, "busy"];
      const read = ok(await post(tableRoute(id, "describe"), { id }, { key: reader.key }));
      assert.match(read.storage_options.aws_access_key_id, /^ASIA/);
      assert.doesNotMatch(JSON.stringify(read.storage_options), /S3RVER/);
      const noCreds = ok(await post(tableRoute(id, "describe"), { id, vend_credentials: false }, { key: reader.key }));
      assert.deepEqual(noCreds.storage_options, {});
      const denied = await post(tableRoute(id, "describe"), { id }, { key: stranger.key });
      assert.equal(denied.status, 404);
      assert.doesNotMatch(denied.text, /S3RVER|aws_/);
      const feed = psql("SELECT json_agg(c)::text FROM lance_changes(0, 100000) c");
      assert.doesNotMatch(feed, /aws_secret_access_key|"S3RVER"/);
      const listing = psql("SELECT lance_list_storage()::text");
      assert.match(listing, /"aws_secret_access_key": "\*\*\*\*"/);
      assert.doesNotMatch(listing, /"aws_secret_access_key": "S3RVER"/);
      const asReader = sqlError(`SET ROLE :"r"; SELECT lance_list_storage();`, { r: reader.name });
      assert.match(asReader.text, /permission denied|lance_admin/);
    } finally {
      reader.drop();
      stranger.drop();
    }
  });

  test("keys with special characters and a session token: every call of the catalog is signed right", async () => {
    // catalog_keys: the setting's own options go to callers, as an administrator asked
    psql(`SELECT lance_set_storage(:'req'::jsonb)`, {
      req: JSON.stringify({
        location: "s3://lake/tok",
        options: { ...storeOptions, aws_session_token: "tok/en+=x" },
        vend: { mode: "catalog_keys" },
      }),
    });
    const name = uniqueName("sp");
    const where = `s3://lake/tok/${encodeURIComponent(`a b(é)!~'*_${name}`)}.lance`;
    const id = [ns, name];
    const d = ok(await post(tableRoute(id, "declare"), { id, location: where }));
    assert.equal(d.storage_options.aws_session_token, "tok/en+=x");
    const key = `tok/a b(é)!~'*_${name}.lance`;
    await putObject(`${key}/_versions/stage.manifest-1`, "manifest with special key");
    const v = ok(
      await post(tableRoute(id, "version/create"), {
        id,
        version: 1,
        manifest_path: `${key}/_versions/stage.manifest-1`,
      }),
    );
    assert.equal(v.version.manifest_path, `${key}/_versions/${manifestName(1)}`);
    await eventually(async () => assert.deepEqual(await listKeys(`${key}/`), [`${key}/_versions/${manifestName(1)}`]));
    ok(await post(tableRoute(id, "tags/create"), { id, tag: "t.1", version: 1 }));
    assert.deepEqual(ok(await post(tableRoute(id, "tags/list"), { id })).tags["t.1"].version, 1);
    ok(await post(tableRoute(id, "deregister"), { id }));
    // registered at a location it chose: the drop leaves the objects
    psql("SELECT lance_process_drops()");
    assert.equal((await listKeys(`${key}/`)).length, 2);
  });

  test("a storage setting without keys: the catalog's calls go unsigned, and a commit works where the store lets anyone in", async () => {
    psql(`SELECT lance_set_storage(:'req'::jsonb)`, {
      req: JSON.stringify({ location: "s3://lake/anon", options: { aws_endpoint: endpoint, allow_http: "true" } }),
    });
    const name = uniqueName("anon");
    const where = `s3://lake/anon/${name}.lance`;
    const id = [ns, name];
    const d = ok(await post(tableRoute(id, "declare"), { id, location: where }));
    assert.equal(d.managed_versioning, true);
    // no vend: no keys, but the region (the default) with the endpoint
    assert.deepEqual(d.storage_options, { aws_endpoint: endpoint, allow_http: "true", aws_region: "us-east-1" });
    const before = (await fetch(`${control}/stats`).then((r) => r.json())).anonymous;
    await putObject(`anon/${name}.lance/_versions/stage.manifest-1`, "anonymous manifest");
    psql(`SELECT lance_create_table_version(:'req'::jsonb) IS NOT NULL`, {
      req: JSON.stringify({ id, version: 1, manifest_path: `anon/${name}.lance/_versions/stage.manifest-1` }),
    });
    ok(await post(tableRoute(id, "tags/create"), { id, tag: "a", version: 1 }));
    await eventually(async () =>
      assert.deepEqual((await listKeys(`anon/${name}.lance/`)).sort(), [
        `anon/${name}.lance/_refs/tags/a.json`,
        `anon/${name}.lance/_versions/${manifestName(1)}`,
      ]),
    );
    const stats = await fetch(`${control}/stats`).then((r) => r.json());
    assert.ok(stats.anonymous - before >= 4, JSON.stringify(stats));
    psql(`SELECT lance_remove_storage('{"location": "s3://lake/anon"}') IS NOT NULL`);
  });

  test("the catalog follows the client's clean-up of old versions on S3", async () => {
    // Keys of the table's privilege (STS) may not delete final manifests, which the catalog alone
    // writes: a client that cleans up needs a setting that hands it keys that may (here the
    // catalog's own), in a namespace of its own below it.
    const cleanNs = `${ns}_clean`;
    psql(`SELECT lance_set_storage(:'req'::jsonb)`, {
      req: JSON.stringify({ location: "s3://lake/cleanup", options: storeOptions, vend: { mode: "catalog_keys" } }),
    });
    await db.createNamespace([cleanNs], { properties: { location: `s3://lake/cleanup/${cleanNs}` } });
    const cleaned = await db.createTable("cleaned", itemRows(0, 2), [cleanNs]);
    await cleaned.add(itemRows(2, 2));
    await cleaned.add(itemRows(4, 2));
    const id = [cleanNs, "cleaned"];
    const key = (await describeTable(id)).location.replace(/^s3:\/\/lake\//, "");
    const list = async () =>
      ok(await http("POST", tableRoute(id, "version/list"), { body: { id } })).versions
        .map((v) => v.version)
        .sort((a, b) => a - b);
    assert.deepEqual(await list(), [1, 2, 3]);
    await cleaned.optimize({ cleanupOlderThan: new Date(Date.now() + 1000), deleteUnverified: true });
    const latest = await cleaned.version();
    const u64 = 2n ** 64n - 1n;
    const stored = (await listKeys(`${key}/_versions/`))
      .map((k) => /\/(\d{20})\.manifest$/.exec(k))
      .filter(Boolean)
      .map((m) => Number(u64 - BigInt(m[1])))
      .sort((a, b) => a - b);
    assert.ok(!stored.includes(1) && stored.includes(latest), `manifests left: ${stored}`);
    assert.ok((await list()).includes(1), "the catalog lists what the client removed until a round");
    const answer = JSON.parse(psql("SELECT lance_reconcile_versions()"));
    assert.ok(answer.removed >= 1, JSON.stringify(answer));
    assert.deepEqual(await list(), stored);
    for (const v of stored) {
      await cleaned.checkout(v);
      assert.ok((await cleaned.countRows()) > 0);
    }
  });

  test("every request the catalog and the client sent carried a valid Signature V4", async () => {
    const stats = await fetch(`${control}/stats`).then((r) => r.json());
    assert.ok(stats.verified > 50, JSON.stringify(stats));
    // the requests signed with the wrong secret above are the only ones refused: a look-up, and a
    // copy with the delete of its undo
    assert.equal(stats.rejected - rejectedBefore, 3, JSON.stringify(stats));
  });
});
