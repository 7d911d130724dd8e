// Fuzz driver of lance_namespace: sends generated requests to every lance_*
// SQL function and every lance_rest route of a database that run.sh
// prepared, and checks every answer:
//   - a SQL call answers a JSON object or raises a Lance error: SQLSTATE LN
//     and three digits, DETAIL {"code": N, "error": message} with N those
//     digits; lance_rest answers (it never raises) with a status that matches
//     the JSON error body, or 200 with a JSON object, or 204 without a body;
//   - code 18 (Internal) is a failure too: a client's input is never the
//     server's fault;
//   - every answer is valid UTF-8;
//   - a request that is refused changes nothing: a digest of the catalog's
//     tables and of every file under the root (and the "outside" folder) is
//     taken before and after it;
//   - a request holding a NUL, a lone surrogate or invalid UTF-8 in a name,
//     location, tag or property answers code 13, and nothing a request
//     writes into the catalog holds such a string;
//   - the connection survives every request (no backend crash), and the
//     server log gets no crash, PANIC, TRAP or leak line.
// Environment: PGHOST/PGPORT/PGUSER, FUZZ_DB, FUZZ_ROOT, FUZZ_OUTSIDE,
// FUZZ_SERVER_LOG, FUZZ_COUNT, FUZZ_SEED, FUZZ_FIXED_SEED, FUZZ_REPORT.
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import pg from "pg";
import { Gen, Rng, ser, isBad } from "./gen.mjs";

const env = process.env;
const DB = env.FUZZ_DB || "lance_fuzz";
const ROOT = env.FUZZ_ROOT;
const OUTSIDE = env.FUZZ_OUTSIDE;
const LOG = env.FUZZ_SERVER_LOG || "";
const COUNT = Number(env.FUZZ_COUNT || 10000);
const FIXED_SEED = Number(env.FUZZ_FIXED_SEED || 20240601) >>> 0;
const SEED = (env.FUZZ_SEED ? Number(env.FUZZ_SEED) : crypto.randomInt(1, 2 ** 32 - 1)) >>> 0;
const REPORT = env.FUZZ_REPORT || "";
// an API key of the connecting role (run.sh makes one), sent with some REST requests
const API_KEY = env.FUZZ_API_KEY || undefined;
// statement_timeout: a request that runs past it is a FAIL (a hang, or work
// without a bound).  30 s is a margin for the slowest request on a loaded
// 2-core machine; test/memory, under valgrind, gives 60 s.
const TIMEOUT_MS = Number(env.FUZZ_STATEMENT_TIMEOUT_MS || 30000);
if (!ROOT || !OUTSIDE) {
  console.error("fuzz: FUZZ_ROOT and FUZZ_OUTSIDE must be set (run test/fuzz/run.sh)");
  process.exit(2);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const t0 = Date.now();

// ---------------------------------------------------------------------------
// Connection
// ---------------------------------------------------------------------------
let client = null;
async function connect() {
  const deadline = Date.now() + 60000;
  for (;;) {
    // query_timeout: a watchdog for a request that ignores statement_timeout
    const c = new pg.Client({ database: DB, application_name: "lance_fuzz", query_timeout: TIMEOUT_MS + 15000 });
    c.on("error", () => {}); // a lost connection shows up as a failed query
    try {
      await c.connect();
      await c.query(`SET statement_timeout = ${TIMEOUT_MS}`);
      client = c;
      return;
    } catch (e) {
      try {
        await c.end();
      } catch {}
      if (Date.now() > deadline) throw new Error(`cannot connect to the server: ${e.message}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
const isConnectionError = (e) => !e.code || /^(08|57P)/.test(e.code);
const isWatchdog = (e) => /Query read timeout/.test(e.message);

// End the backend of a request that ran past statement_timeout and past the
// watchdog: it does not check for interrupts.  False if it does not end.
async function killRunaway() {
  const pid = client.processID;
  const side = new pg.Client({ database: "postgres", application_name: "lance_fuzz_watchdog" });
  await side.connect();
  try {
    await side.query("SELECT pg_terminate_backend($1)", [pid]);
    for (let i = 0; i < 20; i++) {
      const { rows } = await side.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid]);
      if (!rows.length) return true;
      await new Promise((r) => setTimeout(r, 500));
    }
    return false;
  } finally {
    await side.end();
    try {
      await client.end();
    } catch {}
  }
}

// ---------------------------------------------------------------------------
// Files: owned like the root (the server runs as postgres, the driver often
// as root), and a digest of everything under ROOT and OUTSIDE.
// ---------------------------------------------------------------------------
const owner = fs.statSync(ROOT);
const asOwner = (p) => {
  if (process.getuid && process.getuid() === 0) fs.lchownSync(p, owner.uid, owner.gid);
};
function mkdirs(dir) {
  if (fs.existsSync(dir)) return;
  mkdirs(path.dirname(dir));
  fs.mkdirSync(dir);
  asOwner(dir);
}
function writeFile(file, text) {
  mkdirs(path.dirname(file));
  fs.writeFileSync(file, text);
  asOwner(file);
}

const hashCache = new Map(); // path -> [stat key, hash]
function fileDigest() {
  const entries = [];
  const walk = (dir, rel) => {
    let names;
    try {
      names = fs.readdirSync(dir).sort();
    } catch (e) {
      entries.push(`${rel}\0unreadable:${e.code}`);
      return;
    }
    for (const n of names) {
      const p = path.join(dir, n);
      const r = rel + "/" + n;
      let st;
      try {
        st = fs.lstatSync(p);
      } catch {
        continue;
      }
      if (st.isSymbolicLink()) entries.push(`${r}\0link\0${fs.readlinkSync(p)}`);
      else if (st.isDirectory()) {
        entries.push(`${r}\0dir\0${st.mode}`);
        walk(p, r);
      } else if (st.isFile()) {
        const key = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
        let h = hashCache.get(p);
        if (!h || h[0] !== key) {
          h = [key, crypto.createHash("sha1").update(fs.readFileSync(p)).digest("hex")];
          hashCache.set(p, h);
        }
        entries.push(`${r}\0file\0${st.mode}\0${h[1]}`);
      } else entries.push(`${r}\0other`);
    }
  };
  walk(ROOT, "root");
  walk(OUTSIDE, "outside");
  return entries;
}
// A real Lance manifest, written by the official client (branches fork from them).
const LANCE_MANIFEST = fs.readFileSync(new URL("../fixtures/lance.manifest", import.meta.url));
const timing = { request: 0, catalog: 0, files: 0, checks: 0 };
async function digest() {
  // The catalog first: the server answers it only once the request before
  // has ended, rollback and its undo on disk included (a client gets an
  // error before the server has rolled back), so the files are walked after.
  let t = performance.now();
  const { rows } = await client.query("SELECT fuzz.catalog_digest() AS d");
  timing.catalog += performance.now() - t;
  t = performance.now();
  const files = fileDigest();
  timing.files += performance.now() - t;
  return { catalog: rows[0].d, files };
}
function digestDiff(a, b) {
  const out = [];
  const [ca, cb] = [a.catalog.split(" "), b.catalog.split(" ")];
  ["object", "version", "change", "grant", "api_key"].forEach((t, i) => {
    if (ca[i] !== cb[i]) out.push(`lance_catalog.${t} changed (rows:hash ${ca[i]} -> ${cb[i]})`);
  });
  const sa = new Set(a.files);
  const sb = new Set(b.files);
  for (const f of a.files) if (!sb.has(f)) out.push(`file gone or changed: ${f.split("\0").slice(0, 2).join(" ")}`);
  for (const f of b.files) if (!sa.has(f)) out.push(`file new or changed: ${f.split("\0").slice(0, 2).join(" ")}`);
  return out.slice(0, 10);
}
const sameDigest = (a, b) => a.catalog === b.catalog && a.files.length === b.files.length && a.files.every((f, i) => f === b.files[i]);

// ---------------------------------------------------------------------------
// Calls
// ---------------------------------------------------------------------------
const buf = (s) => (s === null || s === undefined ? null : Buffer.from(s, "utf8"));

async function execute(q) {
  switch (q.kind) {
    case "sql":
      return (await client.query("SELECT * FROM fuzz.call($1, $2)", [q.fn, buf(q.body)])).rows[0];
    case "rest":
      return (await client.query("SELECT * FROM fuzz.rest($1, $2, $3, $4, $5)", [buf(q.method), buf(q.path), buf(q.query), buf(q.body), buf(q.headers)])).rows[0];
    case "changes":
      return (await client.query("SELECT * FROM fuzz.changes($1, $2, $3)", [q.nargs, buf(q.after), buf(q.max)])).rows[0];
    case "noarg": {
      // functions without arguments (lance_process_drops, lance_operations):
      // every row they answer, as JSON
      const { rows } = await client.query(`SELECT textsend(coalesce(json_agg(f), '[]')::text) AS answer, txid_current_if_assigned()::text AS xid FROM ${q.fn}() f`);
      return rows[0];
    }
    case "keyfn":
      return (await client.query("SELECT * FROM fuzz.keyfn($1, $2)", [q.fn, buf(q.a)])).rows[0];
    case "internal":
      return (await client.query("SELECT * FROM fuzz.internal($1, $2, $3)", [q.fn, buf(q.a), buf(q.b)])).rows[0];
  }
  throw new Error("unknown request kind " + q.kind);
}

const lit = (s) => (s === null || s === undefined ? "NULL" : "'" + s.replace(/'/g, "''") + "'");
function repro(q) {
  const pre = q.stage.length ? q.stage.map((f) => `-- first write a staging manifest: ${f}\n`).join("") : "";
  switch (q.kind) {
    case "sql":
      return pre + `SELECT ${q.fn}(${lit(q.body)});`;
    case "rest":
      return pre + `SELECT * FROM lance_rest(${lit(q.method)}, ${lit(q.path)}, ${lit(q.query)}, ${lit(q.body)}, ${q.headers === null ? "NULL" : lit(q.headers) + "::jsonb"});`;
    case "changes": {
      const args = [q.after, q.max].slice(0, q.nargs).map((a) => (a === null ? "NULL" : lit(a)));
      return `SELECT count(*) FROM lance_changes(${args.join(", ")});`;
    }
    case "noarg":
      return `SELECT * FROM ${q.fn}();`;
    case "keyfn":
      return `SELECT ${q.fn}(${lit(q.a)});`;
    case "internal":
      if (q.fn === "reconcile_versions") return `SELECT lance_reconcile_versions(${q.a ?? "NULL"}, ${q.b ?? "NULL"});`;
      return q.fn === "local_path" ? `SELECT lance_catalog.local_path(${lit(q.a)});` : `SELECT lance_catalog.change_in_flight(${q.a ?? "NULL"}, ${q.b ?? "NULL"});`;
  }
}
const short = (s, n = 1500) => (s.length > n ? s.slice(0, n) + ` ... [${s.length} chars]` : s);

// ---------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------
const STATUS_OF_CODE = { 0: 406, 1: 404, 4: 404, 6: 404, 8: 404, 10: 404, 11: 404, 12: 404, 22: 404, 2: 409, 3: 409, 5: 409, 7: 409, 9: 409, 14: 409, 19: 409, 23: 409, 13: 400, 20: 400, 15: 403, 16: 401, 17: 503, 21: 429, 18: 500 };
const UNSUPPORTED_OPS = /^(restore_table|update_table_schema_metadata|update_field_metadata|alter_table_|create_table_index|create_table_scalar_index|list_table_indices|describe_table_index_stats|drop_table_index)/;

function decodeJson(bytes, what) {
  let text;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { problem: `${what} is not valid UTF-8: ${short(bytes.toString("latin1"), 300)}` };
  }
  try {
    return { value: JSON.parse(text), text };
  } catch {
    return { problem: `${what} is not JSON: ${short(text, 300)}` };
  }
}
function hasNulOrSurrogate(v) {
  if (typeof v === "string") return isBad(v);
  if (Array.isArray(v)) return v.some(hasNulOrSurrogate);
  if (v && typeof v === "object") return Object.entries(v).some(([k, x]) => isBad(k) || hasNulOrSurrogate(x));
  return false;
}

// The outcome of one request: {outcome, rejected, code, fail?: [category, message], response}
function judgeSqlError(q, e) {
  if (e.code === "FZ001") return { outcome: "refused by PostgreSQL input", rejected: true };
  if (e.code === "57014") return { outcome: "FAIL", rejected: true, timeout: true, fail: [`request ran longer than statement_timeout (${TIMEOUT_MS} ms)`, e.message] };
  const text = `${e.code} ${e.message}${e.detail ? " DETAIL " + e.detail : ""}`;
  if (q.kind === "rest") return { outcome: "FAIL", rejected: true, fail: ["lance_rest raised instead of answering", text] };
  if (!/^LN\d{3}$/.test(e.code)) return { outcome: "FAIL", rejected: true, fail: [`SQLSTATE ${e.code} is not a Lance error`, text] };
  const code = Number(e.code.slice(2));
  if ((e.message + (e.detail ?? "")).includes("\ufffd")) return { outcome: "FAIL", rejected: true, code, fail: ["error message is not valid UTF-8", text] };
  let d;
  try {
    d = JSON.parse(e.detail);
  } catch {
    return { outcome: "FAIL", rejected: true, code, fail: ["Lance error without a JSON DETAIL", text] };
  }
  if (!d || d.code !== code || typeof d.error !== "string") return { outcome: "FAIL", rejected: true, code, fail: ["Lance error whose DETAIL is not {code, error} of its SQLSTATE", text] };
  if (code === 18) return { outcome: "FAIL", rejected: true, code, fail: ["internal error (code 18)", text] };
  return { outcome: `LN${String(code).padStart(3, "0")}`, rejected: true, code, msg: d.error };
}

function judgeAnswer(q, row) {
  if (q.kind === "rest") {
    const st = row.status;
    const body = row.body === null ? null : decodeJson(row.body, "response body");
    if (body?.problem) return { outcome: "FAIL", rejected: st >= 400, fail: ["REST answer " + st + ": " + body.problem.split(":")[0], body.problem] };
    const hdrs = decodeJson(row.hdrs, "response headers");
    if (hdrs.problem) return { outcome: "FAIL", rejected: st >= 400, fail: ["bad response headers", hdrs.problem] };
    if (body !== null && hdrs.value["content-type"] !== "application/json") return { outcome: "FAIL", rejected: st >= 400, fail: ["body without content-type application/json", hdrs.text] };
    if (st === 200 || st === 204) {
      if (st === 204 && body !== null) return { outcome: "FAIL", rejected: false, fail: ["204 with a body", body.text] };
      if (st === 200 && (body === null || typeof body.value !== "object" || body.value === null || Array.isArray(body.value))) return { outcome: "FAIL", rejected: false, fail: ["200 without a JSON object body", String(body?.text)] };
      return { outcome: `HTTP ${st}`, rejected: false, response: body?.value };
    }
    if (body === null) return { outcome: "FAIL", rejected: true, fail: [`status ${st} without a body`, ""] };
    const v = body.value;
    if (!v || typeof v !== "object" || !Number.isInteger(v.code) || typeof v.error !== "string") return { outcome: "FAIL", rejected: true, fail: [`status ${st} body is not {code, error}`, body.text] };
    const routeLevel = v.code === 0 && (st === 404 || st === 405);
    if (!routeLevel && STATUS_OF_CODE[v.code] !== st) return { outcome: "FAIL", rejected: true, code: v.code, fail: [`status ${st} does not match code ${v.code}`, body.text] };
    if (v.code === 18) return { outcome: "FAIL", rejected: true, code: 18, fail: ["internal error (500, code 18)", body.text] };
    return { outcome: `HTTP ${st} code ${v.code}`, rejected: true, code: v.code, routeLevel, msg: v.error };
  }
  if (row.answer === null) {
    if (q.kind === "sql" && q.body === null) return { outcome: "NULL for NULL", rejected: false };
    if (q.kind === "internal") return { outcome: "NULL (internal function)", rejected: false };
    return { outcome: "FAIL", rejected: false, fail: ["NULL answer", ""] };
  }
  const a = decodeJson(row.answer, "response");
  if (a.problem) return { outcome: "FAIL", rejected: false, fail: ["response: " + a.problem.split(":")[0], a.problem] };
  if (q.kind === "sql" && (typeof a.value !== "object" || a.value === null || Array.isArray(a.value))) return { outcome: "FAIL", rejected: false, fail: ["response is not a JSON object", a.text] };
  // a key function answers whether it made a well-formed key, or revoked one
  if (q.kind === "keyfn" && (typeof a.value !== "boolean" || (q.fn === "lance_create_api_key" && a.value !== true)))
    return { outcome: "FAIL", rejected: false, fail: [`${q.fn} answered ${a.text}`, a.text] };
  return { outcome: "response", rejected: false, response: a.value };
}

// ---------------------------------------------------------------------------
// Catalog pools for the generator
// ---------------------------------------------------------------------------
function localPath(loc) {
  if (typeof loc !== "string") return null;
  let p = loc.startsWith("file://") ? loc.slice(7) : loc;
  p = p.replace(/\/+$/, "");
  return p.startsWith(ROOT + "/") ? p : null;
}
async function refreshPools(gen) {
  const { rows } = await client.query(`
    WITH RECURSIVE p AS (
      SELECT id, kind, ARRAY[]::text[] COLLATE "C" AS path, location FROM lance_catalog.object WHERE id = 0
      UNION ALL
      SELECT o.id, o.kind, p.path || o.name, o.location
        FROM lance_catalog.object o JOIN p ON o.parent_id = p.id AND p.kind = 'namespace')
    SELECT kind, textsend(array_to_json(path)::text) AS path, textsend(location) AS location,
           (SELECT max(version) FROM lance_catalog.version v WHERE v.table_id = p.id AND v.branch = '')::text AS maxv
      FROM p ORDER BY random() LIMIT 600`);
  const namespaces = [];
  const tables = [];
  for (const r of rows) {
    let id, loc;
    try {
      id = JSON.parse(utf8.decode(r.path));
      loc = r.location ? utf8.decode(r.location) : null;
    } catch {
      continue; // a name that is not UTF-8 (a defect reported elsewhere)
    }
    if (id.some((s) => s.length > 300)) continue;
    if (r.kind === "namespace") namespaces.push(id);
    else {
      const lp = localPath(loc);
      tables.push({ id, location: loc, path: lp, managed: !!lp, maxv: r.maxv === null ? 0 : Number(r.maxv) });
    }
  }
  const tx = await client.query("SELECT transaction_id::text AS t FROM lance_catalog.change ORDER BY seq DESC LIMIT 30");
  gen.setPools({ namespaces, tables, txids: tx.rows.map((r) => r.t) });
}

// ---------------------------------------------------------------------------
// Seed: namespaces, managed and unmanaged tables, versions, a tag, a branch,
// symbolic links out of a table, so that requests reach deep code.
// ---------------------------------------------------------------------------
async function seed() {
  const call = async (fn, req) => (await client.query(`SELECT ${fn}($1::jsonb) AS r`, [JSON.stringify(req)])).rows[0].r;
  await call("lance_create_namespace", { id: ["ns1"], properties: { owner: "fuzz" } });
  await call("lance_create_namespace", { id: ["ns1", "sub"] });
  await call("lance_create_namespace", { id: ["ns2"], properties: { location: ROOT + "/ns2loc" } });
  await call("lance_create_namespace", { id: ["empty"] });
  const managed = [];
  for (const id of [["ns1", "t1"], ["ns1", "sub", "t2"], ["ns2", "t3"], ["rt"]]) {
    const d = await call("lance_declare_table", { id });
    managed.push([id, localPath(d.location)]);
  }
  await call("lance_register_table", { id: ["ns1", "s3t"], location: "s3://fuzz-bucket/s3t.lance" });
  for (let v = 1; v <= 5; v++) await call("lance_create_table_version", { id: ["ns1", "s3t"], version: v, manifest_path: `fuzz-bucket/s3t.lance/_versions/${v}.manifest` });
  await call("lance_register_table", { id: ["ns1", "reg"], location: ROOT + "/reg/seeded.lance" });
  managed.push([["ns1", "reg"], ROOT + "/reg/seeded.lance"]);
  // a table whose _versions and _refs are symbolic links out of the root
  const lnk = ROOT + "/lnk/lnk.lance";
  mkdirs(lnk);
  mkdirs(OUTSIDE + "/versions");
  mkdirs(OUTSIDE + "/refs");
  fs.symlinkSync(OUTSIDE + "/versions", lnk + "/_versions");
  asOwner(lnk + "/_versions");
  fs.symlinkSync(OUTSIDE + "/refs", lnk + "/_refs");
  asOwner(lnk + "/_refs");
  await call("lance_declare_table", { id: ["ns1", "lnk"], location: lnk });
  for (const [id, dir] of managed) {
    for (let v = 1; v <= 3; v++) {
      const f = `${dir}/_versions/${v}.manifest-seed${v}`;
      // a real Lance manifest: the seed forks a branch from one
      writeFile(f, LANCE_MANIFEST);
      await call("lance_create_table_version", { id, version: v, manifest_path: f.slice(1), naming_scheme: "V1" });
    }
  }
  await call("lance_create_table_tag", { id: ["ns1", "t1"], tag: "v1tag", version: 1 });
  await call("lance_create_table_branch", { id: ["ns1", "t1"], name: "dev", from_version: 2 });
  await call("lance_drop_table", { id: ["ns2", "t3"] }); // a queued drop for lance_process_drops
}

// ---------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------
const counts = new Map();
const debugMsgs = new Map();
const bump = (m, k, n = 1) => m.set(k, (m.get(k) ?? 0) + n);
const failures = new Map(); // signature -> {category, n, first: {i, seed, repro, message, extra}}
let failureCount = 0;
let lost = 0;
let sent = 0;

function fail(category, q, message, extra = "", where = "") {
  failureCount++;
  const what = q.kind === "rest" ? `lance_rest ${q.route}` : q.kind === "sql" || q.kind === "keyfn" ? q.fn : q.kind;
  const sig = `${category} | ${what} | ${message.replace(/"[^"]*"/g, '"…"').replace(/\d+/g, "N").slice(0, 160)}`;
  const f = failures.get(sig);
  if (f) f.n++;
  else failures.set(sig, { category, n: 1, first: { where, repro: repro(q), message, extra } });
}

const slowTimeouts = { changes: 0, internal: 0 };
function slowShape(q) {
  const big = (v) => {
    try {
      return BigInt(v);
    } catch {
      return 0n;
    }
  };
  if (q.kind === "changes") return q.nargs > 0 && big(q.after) < -1000000n;
  if (q.kind === "internal" && q.fn === "change_in_flight") return big(q.b) - big(q.a) > 1000000n;
  return false;
}

async function runPhase(name, seed, n, functions, noargFunctions) {
  const gen = new Gen(new Rng(seed), { root: ROOT, outside: OUTSIDE, functions, noargFunctions, apiKey: API_KEY });
  await refreshPools(gen);
  let before = await digest();
  for (let i = 0; i < n; i++) {
    let q = gen.next();
    // a request that makes the catalog check a huge gap of change numbers
    // runs until statement_timeout: after two of those, no more
    while (slowShape(q) && slowTimeouts[q.kind] >= 2) q = gen.next();
    const where = `${name} seed ${seed} request #${i + 1}`;
    if (i > 0 && i % 100 === 0) await refreshPools(gen);
    if (q.stage.length) {
      for (const f of q.stage) {
        try {
          writeFile(f, `fuzz staging manifest ${f}\n`);
        } catch {}
      }
      before = await digest();
    }
    sent++;
    bump(counts, `kind ${q.kind}`);
    let verdict;
    let row = null;
    try {
      const t = performance.now();
      try {
        row = await execute(q);
      } finally {
        timing.request += performance.now() - t;
      }
      verdict = judgeAnswer(q, row);
    } catch (e) {
      if (isWatchdog(e)) {
        bump(counts, "FAIL: request ignored statement_timeout");
        fail("request ignored statement_timeout and cancel", q, `still running ${TIMEOUT_MS + 15000} ms after it started`, "", where);
        if (!(await killRunaway())) throw new Error(`backend ${client.processID} ignores pg_terminate_backend too; giving up (it keeps running)`);
        await connect();
        before = await digest();
        continue;
      }
      if (isConnectionError(e)) {
        lost++;
        bump(counts, "FAIL: connection lost");
        fail("connection lost (server crash?)", q, e.message, "", where);
        if (lost > 20) throw new Error("lost the connection more than 20 times; giving up");
        await connect();
        before = await digest();
        continue;
      }
      verdict = judgeSqlError(q, e);
    }
    if (verdict.timeout && slowShape(q)) slowTimeouts[q.kind]++;
    if (verdict.fail) {
      bump(counts, `FAIL: ${verdict.fail[0]}`);
      fail(verdict.fail[0], q, verdict.fail[1], "", where);
    } else bump(counts, verdict.outcome);
    if (env.FUZZ_DEBUG && !verdict.rejected) bump(debugMsgs, `ok ${q.kind === "rest" ? q.route : q.fn}`);
    if (env.FUZZ_DEBUG && verdict.code !== undefined) bump(debugMsgs, `${verdict.code} ${(verdict.msg ?? "").replace(/"[^"]*"/g, "S").replace(/\d+/g, "N").slice(0, 90)}`);

    // a NUL, lone surrogate or invalid UTF-8 in a name, location, tag or
    // property must answer code 13 (unsupported operations, route-level
    // 404/405 and a request without a valid API key, 401 code 16, answer
    // before reading the request)
    if (q.badField && verdict.outcome !== "refused by PostgreSQL input" && !q.dataRoute) {
      const op = q.kind === "rest" ? q.op : q.fn.replace(/^lance_/, "");
      const unauthenticated = q.kind === "rest" && verdict.code === 16;
      if (!UNSUPPORTED_OPS.test(op ?? "") && !verdict.routeLevel && !unauthenticated && verdict.code !== 13 && !verdict.fail) {
        const cat = verdict.rejected ? `invalid string in ${q.badField} answered code ${verdict.code}, not 13` : `invalid string in ${q.badField} accepted (should be code 13)`;
        bump(counts, "FAIL: invalid string not refused with 13");
        fail(cat, q, verdict.rejected ? `code ${verdict.code}` : short(JSON.stringify(verdict.response ?? null), 300), "", where);
      }
    }

    let after;
    try {
      after = await digest();
      // what an accepted request wrote must be text the catalog can hold
      if (!verdict.rejected && row && row.xid) {
        const w = await client.query("SELECT * FROM fuzz.written_by($1)", [row.xid]);
        for (const r of w.rows) {
          let problem = null;
          try {
            const text = utf8.decode(r.val);
            if (r.json && hasNulOrSurrogate(JSON.parse(text))) problem = "holds a NUL or a lone surrogate";
          } catch {
            problem = "is not valid UTF-8";
          }
          if (problem) {
            bump(counts, "FAIL: stored invalid text");
            fail(`stored invalid text: ${r.col} ${problem}`, q, short(r.val.toString("latin1"), 200), "", where);
          }
        }
      }
    } catch (e) {
      if (!isConnectionError(e)) throw e;
      lost++;
      fail("connection lost (server crash?)", q, "after the request: " + e.message, "", where);
      await connect();
      after = await digest();
    }
    if (verdict.rejected && !sameDigest(before, after)) {
      bump(counts, "FAIL: refused request changed state");
      fail("refused request changed the catalog or files", q, digestDiff(before, after).join("; "), "", where);
    }
    // staging manifests the request left (refused, or not used) go, so that
    // the tree stays small; the digest drops them the same way
    const left = q.stage.filter((f) => fs.existsSync(f));
    if (left.length) {
      // named as the walk sees them (a staging folder can be a symbolic link)
      const real = left.map((f) => path.join(fs.realpathSync(path.dirname(f)), path.basename(f)));
      const rel = new Set(real.map((f) => (f.startsWith(ROOT + "/") ? "root" + f.slice(ROOT.length) : "outside" + f.slice(OUTSIDE.length))));
      for (const f of left) fs.rmSync(f, { force: true });
      after = { catalog: after.catalog, files: after.files.filter((e) => !rel.has(e.split("\0")[0])) };
    }
    before = after;
    if (!verdict.rejected && verdict.response) gen.observe(verdict.response);
  }
}

function logSize() {
  try {
    return fs.statSync(LOG).size;
  } catch {
    return null;
  }
}
function logProblems(from) {
  const fd = fs.openSync(LOG, "r");
  const size = fs.fstatSync(fd).size;
  const b = Buffer.alloc(Math.max(0, size - from));
  fs.readSync(fd, b, 0, b.length, from);
  fs.closeSync(fd);
  const bad = /terminated by signal|PANIC|TRAP:|was terminated by exception|server process .* exited with exit code|leak|problem in alloc set|resource was not closed|unrecognized win32 error|out of memory/i;
  return b.toString("latin1").split("\n").filter((l) => bad.test(l));
}

async function main() {
  await connect();
  const { rows: fns } = await client.query(`
    SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, p.pronargs
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE p.proname LIKE 'lance\\_%' AND pg_function_is_visible(p.oid) ORDER BY 1`);
  const jsonFns = fns.filter((f) => f.args === "request jsonb").map((f) => f.proname);
  const known = new Set(["lance_rest", "lance_changes", "lance_create_api_key", "lance_revoke_api_key", "lance_reconcile_versions"]);
  const noarg = fns.filter((f) => !known.has(f.proname) && f.pronargs === 0).map((f) => f.proname);
  const uncovered = fns.filter((f) => f.args !== "request jsonb" && !known.has(f.proname) && !noarg.includes(f.proname));
  const logStart = LOG ? logSize() : null;
  console.log(`fuzz: ${fns.length} lance_* functions (${jsonFns.length} taking a request; ${[...known, ...noarg].join(", ")}), database ${DB}, root ${ROOT}`);
  console.log(`fuzz: server log ${LOG && logStart !== null ? LOG : "not found: the crash check relies on lost connections only"}`);
  await seed();
  const fixedN = Math.ceil(COUNT / 2);
  console.log(`fuzz: seeds: fixed ${FIXED_SEED} (${fixedN} requests), random ${SEED} (${COUNT - fixedN} requests)`);
  console.log(`fuzz: to reproduce: FUZZ_COUNT=${COUNT} FUZZ_FIXED_SEED=${FIXED_SEED} FUZZ_SEED=${SEED} test/fuzz/run.sh`);
  await runPhase("fixed", FIXED_SEED, fixedN, jsonFns, noarg);
  await runPhase("random", SEED, COUNT - fixedN, jsonFns, noarg);

  // the server is still up and answers
  const problems = [];
  try {
    await client.query("SELECT 1");
  } catch (e) {
    problems.push(`server does not answer after the run: ${e.message}`);
  }
  for (const f of uncovered) problems.push(`function ${f.proname}(${f.args}) is not covered by the fuzzer`);
  if (LOG && logStart !== null) for (const l of logProblems(logStart)) problems.push(`server log: ${l}`);
  await client.end();

  // report
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  console.log(`\nfuzz: ${sent} requests in ${secs} s`);
  for (const [k, v] of [...counts].sort()) console.log(`  ${String(v).padStart(6)}  ${k}`);
  const report = [];
  if (failures.size) {
    console.log(`\nfuzz: ${failureCount} failed checks, ${failures.size} distinct; first of each:`);
    let i = 0;
    for (const [sig, f] of [...failures].sort((a, b) => a[1].category.localeCompare(b[1].category))) {
      i++;
      const head = `[${i}] ${f.category} (${f.n}x) at ${f.first.where}`;
      console.log(`\n${head}\n    ${short(f.first.message, 600)}\n    ${short(f.first.repro)}`);
      report.push(`-- ${head}\n-- ${sig}\n-- ${f.first.message.replace(/\n/g, " ")}\n${f.first.repro}\n`);
    }
  }
  if (env.FUZZ_DEBUG) console.log("timing (s):", Object.entries(timing).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`).join(", "));
  if (env.FUZZ_DEBUG) for (const [k, v] of [...debugMsgs].sort((a, b) => b[1] - a[1])) console.log(`  ${String(v).padStart(6)}  ${k}`);
  for (const p of problems) console.log(`\nfuzz: FAIL: ${p}`);
  if (REPORT) fs.writeFileSync(REPORT, report.join("\n"));
  const ok = failures.size === 0 && problems.length === 0;
  console.log(`\nfuzz: seeds fixed ${FIXED_SEED}, random ${SEED}; ${ok ? "all checks passed" : "FAILED"}`);
  process.exit(ok ? 0 : 1);
}

main().catch((e) => {
  console.error("fuzz: aborted:", e.stack || e);
  process.exit(2);
});
