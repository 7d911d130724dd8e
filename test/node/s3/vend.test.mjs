// Scoped credentials: what DescribeTable and DeclareTable hand a caller of a
// table on S3, by the storage setting's "vend" and the caller's privilege on
// the table, proved with the official client holding no keys of its own
// against ../s3server.mjs, which serves the token service's AssumeRole and
// lets a temporary key do only what its session policy allows (and a key of
// a "keys" setting only what the server was told it may).
//
// Environment: as s3.test.mjs (LANCE_S3_ENDPOINT, LANCE_S3_CONTROL).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import aws4 from "aws4";
import {
  connect,
  fails,
  grant,
  itemRows,
  makeRole,
  manifestName,
  nsRoute,
  ok,
  post,
  psql,
  tableRoute,
  uniqueName,
} from "../lib.mjs";

for (const name of ["LANCE_S3_ENDPOINT", "LANCE_S3_CONTROL"])
  if (!process.env[name]) throw new Error(`${name} is not set: scripts/test.sh sets it for these tests`);
const endpoint = process.env.LANCE_S3_ENDPOINT;
const control = process.env.LANCE_S3_CONTROL;
const catalogOptions = {
  aws_endpoint: endpoint,
  aws_region: "us-east-1",
  aws_access_key_id: "S3RVER",
  aws_secret_access_key: "S3RVER",
  allow_http: "true",
};
const ROLE_ARN = "arn:aws:iam::000000000000:role/lance-tables";

const stats = () => fetch(`${control}/stats`).then((r) => r.json());
const keyOf = (location) => location.replace(/^s3:\/\/[^/]+\//, "");

/** One request to the store signed with `options`' keys (and session token), as a client holding them would send. */
async function asHolder(options, method, path, body) {
  const url = new URL(endpoint + path);
  const signed = aws4.sign(
    { method, host: url.host, path: url.pathname + url.search, body, service: "s3", region: "us-east-1" },
    {
      accessKeyId: options.aws_access_key_id,
      secretAccessKey: options.aws_secret_access_key,
      sessionToken: options.aws_session_token,
    },
  );
  const res = await fetch(url, { method, headers: signed.headers, body });
  return { status: res.status, text: await res.text() };
}
const objectPath = (key) => `/lake/${key.split("/").map(encodeURIComponent).join("/")}`;
const listPath = (prefix) => `/lake?list-type=2&prefix=${encodeURIComponent(prefix)}`;

/** A storage setting for `location` with the catalog's keys and `vend`. */
function setStorage(location, vend) {
  return JSON.parse(
    psql(`SELECT lance_set_storage(:'req'::jsonb)`, {
      req: JSON.stringify({ location, options: catalogOptions, ...(vend ? { vend } : {}) }),
    }),
  );
}

/** The storage options DescribeTable hands the holder of API key `key`. */
async function vended(id, key) {
  return ok(await post(tableRoute(id, "describe"), { id }, { key })).storage_options;
}

describe("scoped credentials", { timeout: 300_000 }, () => {
  const stsNs = uniqueName("vsts");
  const keysNs = uniqueName("vkeys");
  const noneNs = uniqueName("vnone");
  let admin;
  let reader;
  let writer;
  let locA;
  let locB;

  before(async () => {
    setStorage("s3://lake/vsts", { mode: "sts", role_arn: ROLE_ARN, sts_endpoint: endpoint, external_id: "ext-1" });
    // the keys a "keys" setting hands out, and what the store lets each do
    const bucket = "arn:aws:s3:::lake";
    const list = { Effect: "Allow", Action: "s3:ListBucket", Resource: bucket, Condition: { StringLike: { "s3:prefix": ["vkeys", "vkeys/*"] } } };
    const get = { Effect: "Allow", Action: "s3:GetObject", Resource: `${bucket}/vkeys/*` };
    const put = { Effect: "Allow", Action: ["s3:PutObject", "s3:DeleteObject"], Resource: `${bucket}/vkeys/*` };
    for (const [id, statements] of [
      ["VREADER", [list, get]],
      ["VWRITER", [list, get, put]],
    ])
      await fetch(`${control}/keys`, {
        method: "POST",
        body: JSON.stringify({ id, secret: `${id}-secret/+=`, policy: { Version: "2012-10-17", Statement: statements } }),
      });
    setStorage("s3://lake/vkeys", {
      mode: "keys",
      read: { aws_access_key_id: "VREADER", aws_secret_access_key: "VREADER-secret/+=" },
      write: { aws_access_key_id: "VWRITER", aws_secret_access_key: "VWRITER-secret/+=" },
    });
    setStorage("s3://lake/vnone");
    admin = await connect();
    for (const [ns, where] of [
      [stsNs, "vsts"],
      [keysNs, "vkeys"],
      [noneNs, "vnone"],
    ])
      ok(await post(nsRoute([ns], "create"), { id: [ns], properties: { location: `s3://lake/${where}/${ns}` } }));
    // the administrator (a writer) makes the tables with vended credentials too
    await admin.createTable("a", itemRows(0, 5), [stsNs]);
    await admin.createTable("b", itemRows(0, 3), [stsNs]);
    await admin.createTable("k", itemRows(0, 4), [keysNs]);
    locA = ok(await post(tableRoute([stsNs, "a"], "describe"), { id: [stsNs, "a"] })).location;
    locB = ok(await post(tableRoute([stsNs, "b"], "describe"), { id: [stsNs, "b"] })).location;
    reader = makeRole("vreader");
    writer = makeRole("vwriter");
    grant([stsNs, "a"], reader.name, "read");
    grant([keysNs, "k"], reader.name, "read");
    grant([stsNs, "a"], writer.name, "write");
    grant([stsNs, "b"], writer.name, "read");
    grant([keysNs, "k"], writer.name, "write");
  });
  after(async () => {
    await fetch(`${control}/sts/lifetime/0`);
    reader?.drop();
    writer?.drop();
  });

  test("sts: a reader's credentials read its table through the client, and write nothing, tags included", async () => {
    const opts = await vended([stsNs, "a"], reader.key);
    assert.match(opts.aws_access_key_id, /^ASIA/);
    assert.notEqual(opts.aws_secret_access_key, "S3RVER");
    assert.ok(opts.aws_session_token);
    assert.equal(opts.aws_endpoint, endpoint);
    assert.equal(opts.aws_region, "us-east-1");
    assert.ok(Number(opts.expires_at_millis) > Date.now(), opts.expires_at_millis);
    const db = await connect(reader.key);
    const t = await db.openTable("a", [stsNs]);
    assert.equal(await t.countRows(), 5);
    const deniedBefore = (await stats()).denied;
    await assert.rejects(() => t.add(itemRows(100, 1)));
    await assert.rejects(async () => (await t.tags()).create("mine", 1));
    assert.ok((await stats()).denied > deniedBefore, "the store refused the reader's writes");
    const versions = ok(await post(tableRoute([stsNs, "a"], "version/list"), { id: [stsNs, "a"] }));
    assert.equal(versions.versions.length, 1);
    // its keys, used directly: its table only, reading only
    assert.equal((await asHolder(opts, "GET", listPath(`${keyOf(locA)}/`))).status, 200);
    for (const [method, path] of [
      ["PUT", objectPath(`${keyOf(locA)}/data/planted.lance`)],
      ["DELETE", objectPath(`${keyOf(locA)}/_versions/${manifestName(1)}`)],
      ["GET", listPath(`${keyOf(locB)}/`)],
      ["GET", listPath("vsts/")],
    ]) {
      const res = await asHolder(opts, method, path, method === "PUT" ? "x" : undefined);
      assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
      assert.match(res.text, /AccessDenied/);
    }
    // nor another table's objects, which it cannot even describe
    assert.equal((await asHolder(opts, "GET", objectPath(`${keyOf(locB)}/_versions/${manifestName(1)}`))).status, 403);
    fails(await post(tableRoute([stsNs, "b"], "describe"), { id: [stsNs, "b"] }, { key: reader.key }), 404, 4);
  });

  test("sts: a writer appends to its table through the client, and touches no other table nor a final manifest", async () => {
    const db = await connect(writer.key);
    const t = await db.openTable("a", [stsNs]);
    await t.add(itemRows(5, 2));
    assert.equal(await t.countRows(), 7);
    const opts = await vended([stsNs, "a"], writer.key);
    const readOnB = await vended([stsNs, "b"], writer.key);
    assert.notEqual(readOnB.aws_access_key_id, opts.aws_access_key_id);
    for (const [method, path] of [
      ["PUT", objectPath(`${keyOf(locB)}/data/planted.lance`)],
      ["DELETE", objectPath(`${keyOf(locB)}/_versions/${manifestName(1)}`)],
      ["PUT", objectPath(`${keyOf(locA)}/_versions/${manifestName(9)}`)],
      ["DELETE", objectPath(`${keyOf(locA)}/_versions/${manifestName(1)}`)],
      ["PUT", objectPath(`${keyOf(locA)}/tree/dev/_versions/${manifestName(1)}`)],
    ]) {
      const res = await asHolder(opts, method, path, method === "PUT" ? "x" : undefined);
      assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
    }
    // below its table it may write what the client writes
    assert.equal((await asHolder(opts, "PUT", objectPath(`${keyOf(locA)}/_versions/stage.manifest-w`), "m")).status, 200);
    assert.equal((await asHolder(opts, "DELETE", objectPath(`${keyOf(locA)}/_versions/stage.manifest-w`))).status, 204);
    // its read credentials on b read b and write nothing there
    assert.equal((await asHolder(readOnB, "GET", objectPath(`${keyOf(locB)}/_versions/${manifestName(1)}`))).status, 200);
    assert.equal((await asHolder(readOnB, "PUT", objectPath(`${keyOf(locB)}/data/x`), "x")).status, 403);
  });

  test("sts: AssumeRole is signed with the setting's keys and carries the table's scoped policy", async () => {
    const before = (await stats()).sts.length;
    // a new backend, so none kept: one AssumeRole for read, one for write
    psql(`SET ROLE :"r"; SELECT lance_describe_table(:'req'::jsonb) IS NOT NULL;`, {
      r: reader.name,
      req: JSON.stringify({ id: [stsNs, "a"] }),
    });
    psql(`SET ROLE :"r"; SELECT lance_describe_table(:'req'::jsonb) IS NOT NULL;`, {
      r: writer.name,
      req: JSON.stringify({ id: [stsNs, "a"] }),
    });
    const calls = (await stats()).sts.slice(before);
    assert.equal(calls.length, 2, JSON.stringify(calls));
    const key = keyOf(locA);
    const arn = "arn:aws:s3:::lake";
    for (const [call, write] of [
      [calls[0], false],
      [calls[1], true],
    ]) {
      assert.equal(call.signedBy, "S3RVER");
      assert.equal(call.service, "sts");
      assert.equal(call.roleArn, ROLE_ARN);
      assert.equal(call.externalId, "ext-1");
      assert.equal(call.durationSeconds, 900);
      assert.match(call.sessionName, write ? /^lance-write-/ : /^lance-read-/);
      const byAction = (a) => call.policy.Statement.filter((s) => [].concat(s.Action).includes(a));
      assert.deepEqual(byAction("s3:ListBucket").map((s) => [s.Effect, s.Resource, s.Condition]), [
        ["Allow", arn, { StringLike: { "s3:prefix": [key, `${key}/*`] } }],
      ]);
      assert.deepEqual(byAction("s3:GetObject").map((s) => [s.Effect, s.Resource]), [["Allow", `${arn}/${key}/*`]]);
      assert.deepEqual(
        byAction("s3:PutObject").map((s) => [s.Effect, s.Resource]),
        write
          ? [
              ["Allow", `${arn}/${key}/*`],
              ["Deny", [`${arn}/${key}/_versions/*.manifest`, `${arn}/${key}/tree/*/_versions/*.manifest`]],
            ]
          : [],
      );
    }
  });

  test("sts: credentials are kept per table and privilege: a second DescribeTable of a backend asks the service nothing", async () => {
    const before = (await stats()).sts.length;
    const out = psql(
      `SET ROLE :"r";
       SELECT lance_describe_table(:'req'::jsonb) -> 'storage_options' ->> 'aws_access_key_id';
       SELECT lance_describe_table(:'req'::jsonb) -> 'storage_options' ->> 'aws_access_key_id';`,
      { r: reader.name, req: JSON.stringify({ id: [stsNs, "a"] }) },
    ).split("\n");
    assert.equal(out.length, 2);
    assert.equal(out[0], out[1]);
    assert.equal((await stats()).sts.length - before, 1);
  });

  test("sts: expired credentials are refused, and the next DescribeTable hands out fresh ones", async () => {
    // a table of its own: no backend of the gateway keeps credentials for it yet
    await admin.createTable("c", itemRows(0, 1), [stsNs]);
    grant([stsNs, "c"], reader.name, "read");
    const locC = ok(await post(tableRoute([stsNs, "c"], "describe"), { id: [stsNs, "c"] })).location;
    await fetch(`${control}/sts/lifetime/2`);
    let opts;
    try {
      opts = await vended([stsNs, "c"], reader.key);
    } finally {
      await fetch(`${control}/sts/lifetime/0`);
    }
    const path = objectPath(`${keyOf(locC)}/_versions/${manifestName(1)}`);
    assert.equal((await asHolder(opts, "GET", path)).status, 200);
    // the store refuses them once they expire (within 2 s; bounded by attempts)
    let refused;
    for (let i = 0; i < 100 && !refused; i++) {
      const res = await asHolder(opts, "GET", path);
      if (res.status !== 200) refused = res;
      else await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(refused, "the credentials never expired");
    assert.equal(refused.status, 400);
    assert.match(refused.text, /ExpiredToken/);
    const fresh = await vended([stsNs, "c"], reader.key);
    assert.notEqual(fresh.aws_access_key_id, opts.aws_access_key_id);
    assert.equal((await asHolder(fresh, "GET", path)).status, 200);
  });

  test("sts: the token service's failures answer 21 (throttled), 15 (denied) and 17 (unreachable), with no secret", async () => {
    const id = [stsNs, "b"];
    psql(`SELECT lance_set_storage(:'req'::jsonb)`, {
      req: JSON.stringify({
        location: "s3://lake/vdown",
        options: catalogOptions,
        vend: { mode: "sts", role_arn: ROLE_ARN, sts_endpoint: "http://127.0.0.1:1" },
      }),
    });
    const name = uniqueName("down");
    const e = (() => {
      try {
        psql(`SELECT lance_register_table(:'reg'::jsonb); SELECT lance_describe_table(:'req'::jsonb);`, {
          reg: JSON.stringify({ id: [stsNs, name], location: `s3://lake/vdown/${name}.lance` }),
          req: JSON.stringify({ id: [stsNs, name] }),
        });
      } catch (err) {
        return String(err.stderr);
      }
      assert.fail("DescribeTable with an unreachable token service succeeded");
    })();
    assert.match(e, /"code":\s*17/);
    assert.doesNotMatch(e, /S3RVER/);
    psql(`SELECT lance_deregister_table(:'req'::jsonb); SELECT lance_remove_storage('{"location": "s3://lake/vdown"}');`, {
      req: JSON.stringify({ id: [stsNs, name] }),
    });
    // each psql is a new backend, which has kept no credentials: its DescribeTable calls the service
    for (const [inject, code] of [
      ["1/400/Throttling", 21],
      ["1/403/AccessDenied", 15],
    ]) {
      await fetch(`${control}/mode/error/${inject}`);
      let text = "";
      try {
        psql(`SET ROLE :"r"; SELECT lance_describe_table(:'req'::jsonb);`, { r: writer.name, req: JSON.stringify({ id }) });
      } catch (err) {
        text = String(err.stderr);
      }
      await fetch(`${control}/mode/error/0/503`);
      assert.match(text, new RegExp(`"code":\\s*${code}`), text);
      assert.doesNotMatch(text, /S3RVER/);
    }
  });

  test("keys: a reader gets the readers' pair and a writer the writers', which the store holds to what each may do", async () => {
    const r = await vended([keysNs, "k"], reader.key);
    const w = await vended([keysNs, "k"], writer.key);
    assert.equal(r.aws_access_key_id, "VREADER");
    assert.equal(w.aws_access_key_id, "VWRITER");
    const rt = await (await connect(reader.key)).openTable("k", [keysNs]);
    assert.equal(await rt.countRows(), 4);
    await assert.rejects(() => rt.add(itemRows(50, 1)));
    const wt = await (await connect(writer.key)).openTable("k", [keysNs]);
    await wt.add(itemRows(50, 1));
    assert.equal(await wt.countRows(), 5);
    // neither reaches beyond what the store grants it
    assert.equal((await asHolder(w, "GET", listPath("cat/"))).status, 403);
  });

  test("none: no keys at all, but the region and the endpoint", async () => {
    const d = ok(await post(tableRoute([noneNs, "t"], "declare"), { id: [noneNs, "t"] }));
    assert.deepEqual(d.storage_options, { aws_region: "us-east-1", aws_endpoint: endpoint, allow_http: "true" });
    const listing = psql("SELECT lance_list_storage()::text");
    assert.doesNotMatch(listing, /VREADER-secret|VWRITER-secret|ext-1/);
    assert.match(listing, /"mode": "sts"/);
  });
});
