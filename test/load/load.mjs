// Load test driver: writers on connections that come and go send a mix of
// version commits, batches and reads, through the SQL functions and through
// lance_rest(), and check every answer against its request.  Started by
// run.sh, which owns the cluster; see run.sh for the environment.
//
//   node load.mjs            the orchestrator (set-up, writers, final checks)
//   node load.mjs writer N   writer N (forked by the orchestrator)
//
// The issue this guards against: under load, acknowledged
// BatchCreateTableVersions and BatchCommitTables answered a manifest_path
// that was empty or garbage while the catalog rows were right (memory freed
// by SPI_finish and reused).  So nothing here trusts an answer: every
// version in every answer is checked against what the request asked for or,
// for versions other writers made, against what its own record says (the
// manifest path and size of a version follow from its table, its number and
// the token in its metadata), and at the end every token any answer showed
// must belong to an acknowledged commit of that very table and version.
//
// Tables (namespace "load"): managed tables m0..m4 (naming scheme V2) and
// m5 (V1) under lance_namespace.local_roots, whose manifests the catalog
// materializes from the writers' staging files; unmanaged tables u0..u3
// (s3://, gs://) whose versions are records answered as given.  Namespace
// "wide" holds WIDE_TABLES (70) tables, some only declared, for ListTables
// and ListAllTables with more than 60 tables under one namespace; namespace
// "decl" gets the tables writers declare in their batch commits.
//
// Versions: a writer commits version guess + 1 of a table, its guess being
// the highest version it has seen; other writers race for the same numbers,
// and the loser gets LN014 (counted as a conflict, not a failure).  A writer
// deletes only versions it made itself, never its highest of a table, so
// the versions it knows are live stay live until it deletes them.
import { fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client, ServerError, lit } from "../crash/pgwire.mjs";

const env = process.env;
const need = (name) => {
  const v = env[name];
  if (!v) throw new Error(`${name} is not set (run test/load/run.sh)`);
  return v;
};
const cfg = {
  port: Number(need("LOAD_PORT")),
  sockdir: need("LOAD_SOCKDIR"),
  db: need("LOAD_DB"),
  root: need("LOAD_ROOT"),
  workdir: need("LOAD_WORK"),
  pgUid: Number(need("LOAD_PG_UID")),
  pgGid: Number(need("LOAD_PG_GID")),
  apiKey: need("LOAD_API_KEY"),
  seconds: Number(env.LOAD_SECONDS || 60),
  writers: Math.max(1, Number(env.LOAD_WRITERS || 4)),
  reconnectEvery: Math.max(1, Number(env.LOAD_RECONNECT || 400)),
  wideTables: Math.max(61, Number(env.LOAD_WIDE_TABLES || 70)),
  maxPrinted: Number(env.LOAD_MAX_PRINTED || 15),
};
const SETUP_FILE = path.join(cfg.workdir, "setup.json");
const U64_MAX = (1n << 64n) - 1n;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// ---------------------------------------------------------------------------
// What a version's record must be, from its table, number and token
// ---------------------------------------------------------------------------
function finalName(version, scheme) {
  return scheme === "V1"
    ? `${version}.manifest`
    : `${(U64_MAX - BigInt(version)).toString().padStart(20, "0")}.manifest`;
}
// Lance sends object store paths: no leading slash.
const lancePath = (p) => p.replace(/^\/+/, "");
const finalFile = (t, version) => path.join(t.location, "_versions", finalName(version, t.scheme));
const stagingFile = (t, version, token) => `${finalFile(t, version)}-${token}`;
function manifestContent(t, version, token) {
  const pad = parseInt(token.slice(-3), 16) % 300;
  return `lance load test manifest\ntable=${t.name} version=${version} token=${token}\n${"#".repeat(pad)}\n`;
}
const managedSize = (t, version, token) => Buffer.byteLength(manifestContent(t, version, token));
const unmanagedPath = (t, version, token) => `lance-load/${t.name}.lance/_versions/${version}-${token}.manifest`;
const unmanagedSize = (token) => 1000 + parseInt(token.slice(-4), 16);
const eTag = (token) => `etag-${token.slice(0, 8)}`;
const expectedPath = (t, version, token) =>
  t.managed ? lancePath(finalFile(t, version)) : unmanagedPath(t, version, token);
const expectedSize = (t, version, token) => (t.managed ? managedSize(t, version, token) : unmanagedSize(token));

// The request entry of one new version (CreateTableVersion, an entry of
// BatchCreateTableVersions, a create_table_version of BatchCommitTables).
function versionRequest(t, version, token, writer) {
  const r = { id: [t.ns, t.name], version, metadata: { token, writer: String(writer) } };
  if (t.managed) {
    r.manifest_path = lancePath(stagingFile(t, version, token));
    if (t.scheme === "V1") r.naming_scheme = "V1";
    // the catalog answers the real size: sometimes send it, never wrong
    if (parseInt(token[0], 16) % 2) r.manifest_size = managedSize(t, version, token);
  } else {
    r.manifest_path = unmanagedPath(t, version, token);
    r.manifest_size = unmanagedSize(token);
    r.e_tag = eTag(token);
  }
  return r;
}

// null when `rec` is a right record of table t (and, with `want`, exactly
// the version {version, token} asked for); else what is wrong.
function checkRecord(t, rec, want, t0) {
  if (rec === null || typeof rec !== "object" || Array.isArray(rec)) return `not a version record: ${JSON.stringify(rec)}`;
  const v = rec.version;
  if (!Number.isSafeInteger(v) || v < 1) return `bad version number ${JSON.stringify(v)}`;
  if (want && v !== want.version) return `version ${v}, asked for ${want.version}`;
  const token = rec.metadata?.token;
  if (typeof token !== "string" || !UUID_RE.test(token)) return `version ${v}: metadata ${JSON.stringify(rec.metadata)} has no token`;
  if (want && token !== want.token) return `version ${v}: token ${token}, asked for ${want.token}`;
  if (typeof rec.manifest_path !== "string" || rec.manifest_path === "") return `version ${v}: empty manifest_path ${JSON.stringify(rec.manifest_path)}`;
  const p = expectedPath(t, v, token);
  if (rec.manifest_path !== p) return `version ${v}: manifest_path ${JSON.stringify(rec.manifest_path)}, expected ${JSON.stringify(p)}`;
  const size = expectedSize(t, v, token);
  if (rec.manifest_size !== size) return `version ${v}: manifest_size ${JSON.stringify(rec.manifest_size)}, expected ${size}`;
  if (!t.managed && rec.e_tag !== eTag(token)) return `version ${v}: e_tag ${JSON.stringify(rec.e_tag)}, expected ${eTag(token)}`;
  const ts = rec.timestamp_millis;
  if (!Number.isSafeInteger(ts) || ts < t0 - 3600e3 || ts > Date.now() + 3600e3) return `version ${v}: timestamp_millis ${JSON.stringify(ts)}`;
  return null;
}

function describeExpectation(t) {
  return { location: t.location, managed: t.managed, onlyDeclared: t.onlyDeclared };
}
function checkDescribeTable(t, resp, req) {
  const e = describeExpectation(t);
  if (resp?.location !== e.location) return `location ${JSON.stringify(resp?.location)}, expected ${JSON.stringify(e.location)}`;
  if (resp.managed_versioning !== e.managed) return `managed_versioning ${resp.managed_versioning}, expected ${e.managed}`;
  if (JSON.stringify(resp.properties) !== "{}" || JSON.stringify(resp.storage_options) !== "{}")
    return `properties ${JSON.stringify(resp.properties)} storage_options ${JSON.stringify(resp.storage_options)}`;
  if (req.with_table_uri) {
    const uri = e.location.startsWith("/") ? `file://${e.location}` : e.location;
    if (resp.table_uri !== uri) return `table_uri ${JSON.stringify(resp.table_uri)}, expected ${JSON.stringify(uri)}`;
  } else if ("table_uri" in resp) return `table_uri ${JSON.stringify(resp.table_uri)} not asked for`;
  if (req.check_declared) {
    if (resp.is_only_declared !== e.onlyDeclared) return `is_only_declared ${resp.is_only_declared}, expected ${e.onlyDeclared}`;
  } else if ("is_only_declared" in resp) return `is_only_declared not asked for`;
  return null;
}

// ---------------------------------------------------------------------------
// Transport: the SQL functions, or lance_rest() as a gateway calls it
// ---------------------------------------------------------------------------
const encId = (id) => id.map((p) => encodeURIComponent(p)).join("%24");
const SQL_FN = {
  CreateTableVersion: "lance_create_table_version",
  BatchCreateTableVersions: "lance_batch_create_table_versions",
  BatchCommitTables: "lance_batch_commit_tables",
  ListTableVersions: "lance_list_table_versions",
  DescribeTableVersion: "lance_describe_table_version",
  DescribeTable: "lance_describe_table",
  ListAllTables: "lance_list_all_tables",
  ListTables: "lance_list_tables",
};
// The REST request of an operation: [method, path, query, body]
function restRequest(op, req) {
  const { id, ...rest } = req;
  const body = () => JSON.stringify(rest);
  switch (op) {
    case "CreateTableVersion":
      return ["POST", `/v1/table/${encId(id)}/version/create`, null, body()];
    case "BatchCreateTableVersions":
      return ["POST", "/v1/table/version/batch-create", null, JSON.stringify(req)];
    case "BatchCommitTables":
      return ["POST", "/v1/table/batch-commit", null, JSON.stringify(req)];
    case "ListTableVersions": {
      // paging parameters in the query string, the rest in the body
      const q = new URLSearchParams();
      if (rest.limit !== undefined) q.set("limit", String(rest.limit));
      if (rest.page_token !== undefined) q.set("page_token", rest.page_token);
      const b = { ...rest };
      delete b.limit;
      delete b.page_token;
      return ["POST", `/v1/table/${encId(id)}/version/list`, q.toString() || null, JSON.stringify(b)];
    }
    case "DescribeTableVersion":
      return ["POST", `/v1/table/${encId(id)}/version/describe`, null, body()];
    case "DescribeTable":
      return ["POST", `/v1/table/${encId(id)}/describe`, null, body()];
    case "ListAllTables":
    case "ListTables": {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(rest)) q.set(k, String(v));
      const p = op === "ListTables" ? `/v1/namespace/${encId(id)}/table/list` : "/v1/table";
      return ["GET", p, q.toString() || null, null];
    }
    default:
      throw new Error(`no REST route for ${op}`);
  }
}

// An error answer: { code: "LN014", message } (both transports), or a thrown
// Error for what is neither an answer nor an error answer.
class Refused {
  constructor(code, message, status) {
    this.code = code;
    this.message = message;
    this.status = status;
  }
}
async function call(conn, via, op, req) {
  if (via === "sql") {
    try {
      const rows = await conn.query(`SELECT ${SQL_FN[op]}(${lit(JSON.stringify(req))})`);
      if (rows.length !== 1 || rows[0].length !== 1) throw new Error(`${rows.length} rows answered`);
      const text = rows[0][0];
      if (text === null || text === "") throw new Error(`empty answer ${JSON.stringify(text)}`);
      return JSON.parse(text);
    } catch (err) {
      if (err instanceof ServerError) return new Refused(err.code, err.message, null);
      throw err;
    }
  }
  const [method, p, query, body] = restRequest(op, req);
  const rows = await conn.query(
    `SELECT status, response_body FROM lance_rest(${lit(method)}, ${lit(p)}, ${query === null ? "NULL" : lit(query)}, ` +
      `${body === null ? "NULL" : lit(body)}, ${lit(JSON.stringify({ "x-load-test": "1", "x-api-key": cfg.apiKey }))})`,
  );
  if (rows.length !== 1) throw new Error(`${rows.length} rows answered`);
  const status = Number(rows[0][0]);
  const text = rows[0][1];
  if (text === null || text === "") throw new Error(`status ${status} with empty body ${JSON.stringify(text)}`);
  const resp = JSON.parse(text);
  if (status === 200) return resp;
  if (!Number.isInteger(resp?.code) || typeof resp.error !== "string" || resp.error === "")
    throw new Error(`status ${status} with body ${text}`);
  const code = `LN${String(resp.code).padStart(3, "0")}`;
  const wantStatus = { LN004: 404, LN011: 404, LN014: 409, LN013: 400 }[code];
  if (wantStatus && wantStatus !== status) throw new Error(`status ${status} for code ${code}: ${text}`);
  return new Refused(code, resp.error, status);
}

// ---------------------------------------------------------------------------
// Writer process
// ---------------------------------------------------------------------------
const rand = (n) => Math.floor(Math.random() * n);
const pick = (a) => a[rand(a.length)];
function shuffle(a) {
  const b = [...a];
  for (let i = b.length - 1; i > 0; i--) {
    const j = rand(i + 1);
    [b[i], b[j]] = [b[j], b[i]];
  }
  return b;
}

async function writerMain(idx) {
  const setup = JSON.parse(fs.readFileSync(SETUP_FILE, "utf8"));
  const t0 = setup.t0;
  const TABLES = setup.tables; // versioned tables of namespace "load"
  const TABLE = Object.fromEntries(TABLES.map((t) => [t.name, t]));
  const wide = setup.wide; // [{name, onlyDeclared, location}] in creation order
  const staticAll = setup.allTables; // [{key: [ns, name], id, onlyDeclared}] in id order
  const idOf = new Map(staticAll.map((s) => [s.key.join("\u0000"), s.id]));
  const deadline = Date.now() + cfg.seconds * 1000;

  const stats = {
    requests: {}, // "<Op> <via>" -> n
    acked: 0,
    conflicts: 0,
    notFound: 0,
    mismatches: 0,
    unexpected: 0,
    connections: 0,
    total: 0,
  };
  const printed = [];
  let printedMismatches = 0;
  let printedOther = 0;
  const fail = (kind, op, via, req, what) => {
    if (kind === "mismatch") stats.mismatches++;
    else stats.unexpected++;
    // mismatches first: a lost connection makes many errors after it
    if (kind === "mismatch" ? printedMismatches++ < cfg.maxPrinted : printedOther++ < 5)
      printed.push(`writer ${idx} ${kind}: ${op} via ${via}: ${what}\n    request: ${JSON.stringify(req).slice(0, 1500)}`);
  };
  // what the end checks need
  const created = []; // [table, version, token] acknowledged
  const deleted = []; // [table, version] acknowledged
  const declared = []; // [name, location] acknowledged
  const observed = new Map(); // "table/version/token" -> 1: every version any answer showed
  const pageTokens = new Map(); // "ns\0name" -> token, ListAllTables
  const listedDecl = new Set();

  const guess = Object.fromEntries(TABLES.map((t) => [t.name, 1]));
  const live = Object.fromEntries(TABLES.map((t) => [t.name, new Map()])); // own live versions: v -> token
  const ownDecl = []; // {name, location, managed} acknowledged
  let declSeq = 0;

  const see = (t, rec) => {
    if (rec?.metadata?.token) observed.set(`${t.name}/${rec.version}/${rec.metadata.token}`, 1);
    if (Number.isSafeInteger(rec?.version) && rec.version > guess[t.name]) guess[t.name] = rec.version;
  };

  let conn = null;
  let sinceConnect = 0;
  const request = async (op, req, via = Math.random() < 0.5 ? "sql" : "rest") => {
    if (!conn || sinceConnect >= cfg.reconnectEvery) {
      conn?.close();
      conn = await new Client({
        host: cfg.sockdir,
        port: cfg.port,
        user: "postgres",
        database: cfg.db,
        application_name: `load-writer-${idx}`,
      }).connect();
      stats.connections++;
      sinceConnect = 0;
    }
    sinceConnect++;
    stats.total++;
    const k = `${op} ${via}`;
    stats.requests[k] = (stats.requests[k] ?? 0) + 1;
    try {
      return { via, resp: await call(conn, via, op, req) };
    } catch (err) {
      // the next request connects again (a failed connect ends the writer)
      if (conn.closed) conn = null;
      return { via, broken: `${err.name}: ${err.message}` };
    }
  };

  // ---- writes ----
  const writeStaging = (t, version, token) => {
    if (t.managed) fs.writeFileSync(stagingFile(t, version, token), manifestContent(t, version, token), { mode: 0o644 });
  };
  const dropStaging = (entries) => {
    for (const e of entries) if (e.t.managed) fs.rmSync(stagingFile(e.t, e.version, e.token), { force: true });
  };
  // after a conflict, the latest version of each table, checked like any answer
  const refresh = async (names) => {
    for (const n of names) await latest(TABLE[n]);
  };
  const newEntries = (tables, twice) => {
    // latest + 1 as Lance does, or a little beyond it (the catalog does
    // not require latest + 1), so that not every write of a busy table
    // races the other writers for the same number
    const entries = tables.map((t) => ({ t, version: guess[t.name] + 1 + (Math.random() < 0.5 ? 0 : rand(3)), token: randomUUID() }));
    if (twice) entries.splice(1, 0, { t: entries[0].t, version: entries[0].version + 1, token: randomUUID() });
    for (const e of entries) writeStaging(e.t, e.version, e.token);
    return entries;
  };
  const ackEntries = (entries) => {
    for (const e of entries) {
      created.push([e.t.name, e.version, e.token]);
      live[e.t.name].set(e.version, e.token);
      if (e.version > guess[e.t.name]) guess[e.t.name] = e.version;
      observed.set(`${e.t.name}/${e.version}/${e.token}`, 1);
    }
  };
  // the answer of a refused write: LN014 is a conflict, anything else a failure
  const refusedWrite = async (op, via, req, r, entries) => {
    dropStaging(entries);
    if (r.code === "LN014") {
      stats.conflicts++;
      await refresh([...new Set(entries.map((e) => e.t.name))]);
    } else fail("unexpected", op, via, req, `${r.code} ${r.message}`);
  };

  const createOne = async () => {
    const t = Math.random() < 0.6 ? pick(TABLES.filter((x) => x.managed)) : pick(TABLES.filter((x) => !x.managed));
    const [e] = newEntries([t], false);
    const req = versionRequest(t, e.version, e.token, idx);
    const op = "CreateTableVersion";
    const { via, resp, broken } = await request(op, req);
    if (broken) return fail("unexpected", op, via, req, broken), dropStaging([e]);
    if (resp instanceof Refused) return refusedWrite(op, via, req, resp, [e]);
    stats.acked++;
    ackEntries([e]);
    const bad = checkRecord(t, resp.version, e, t0) ?? checkTxn(resp);
    if (bad) fail("mismatch", op, via, req, `${bad}\n    answer: ${JSON.stringify(resp)}`);
  };
  const checkTxn = (resp) => (UUID_RE.test(resp?.transaction_id ?? "") ? null : `transaction_id ${JSON.stringify(resp?.transaction_id)}`);

  const batchCreate = async () => {
    const n = 2 + rand(5); // 2..6 entries
    const twice = Math.random() < 0.3;
    const tables = shuffle(TABLES).slice(0, twice ? n - 1 : n);
    const entries = newEntries(tables, twice);
    const req = { entries: entries.map((e) => versionRequest(e.t, e.version, e.token, idx)) };
    const op = "BatchCreateTableVersions";
    const { via, resp, broken } = await request(op, req);
    if (broken) return fail("unexpected", op, via, req, broken), dropStaging(entries);
    if (resp instanceof Refused) return refusedWrite(op, via, req, resp, entries);
    stats.acked++;
    ackEntries(entries);
    let bad = checkTxn(resp);
    if (!Array.isArray(resp.versions) || resp.versions.length !== entries.length)
      bad = `${resp.versions?.length} versions answered for ${entries.length} entries`;
    else
      for (let i = 0; i < entries.length && !bad; i++) {
        const b = checkRecord(entries[i].t, resp.versions[i], entries[i], t0);
        if (b) bad = `versions[${i}] (${entries[i].t.name}): ${b}`;
      }
    if (bad) fail("mismatch", op, via, req, `${bad}\n    answer: ${JSON.stringify(resp)}`);
  };

  const batchCommit = async () => {
    const ops = [];
    // a declaration (an s3 table, or a managed one under the local root)
    if (Math.random() < 0.25) {
      const name = `w${idx}_${++declSeq}`;
      const managed = Math.random() < 0.5;
      const location = managed ? path.join(cfg.root, "decl", `${name}.lance`) : `s3://lance-load/decl/${name}.lance`;
      ops.push({ kind: "declare", name, location, managed });
    }
    // new versions of 1..4 tables
    const n = 1 + rand(4);
    const entries = newEntries(shuffle(TABLES).slice(0, n), Math.random() < 0.2);
    for (const e of entries) ops.push({ kind: "create", e });
    // deletions of own versions that are not the own highest of their table
    const deletable = TABLES.filter((t) => live[t.name].size > 1);
    for (const t of shuffle(deletable).slice(0, rand(3))) {
      const vs = [...live[t.name].keys()].sort((a, b) => a - b);
      const v = vs[rand(vs.length - 1)];
      ops.push({ kind: "delete", t, version: v });
    }
    // the declaration first or anywhere; versions of one table keep their order
    const order = shuffle(ops.map((_, i) => i));
    const ordered = [];
    const byTable = new Map();
    for (const o of ops) if (o.kind === "create") (byTable.get(o.e.t.name) ?? byTable.set(o.e.t.name, []).get(o.e.t.name)).push(o);
    const seen = new Map();
    for (const i of order) {
      const o = ops[i];
      if (o.kind === "create") {
        const list = byTable.get(o.e.t.name);
        const k = seen.get(o.e.t.name) ?? 0;
        seen.set(o.e.t.name, k + 1);
        ordered.push(list[k]);
      } else ordered.push(o);
    }
    const req = {
      operations: ordered.map((o) =>
        o.kind === "declare"
          ? { declare_table: { id: ["decl", o.name], location: o.location } }
          : o.kind === "create"
            ? { create_table_version: versionRequest(o.e.t, o.e.version, o.e.token, idx) }
            : { delete_table_versions: { id: [o.t.ns, o.t.name], ranges: [{ start_version: o.version, end_version: o.version + 1 }] } },
      ),
    };
    const op = "BatchCommitTables";
    const { via, resp, broken } = await request(op, req);
    if (broken) return fail("unexpected", op, via, req, broken), dropStaging(entries);
    if (resp instanceof Refused) return refusedWrite(op, via, req, resp, entries);
    stats.acked++;
    ackEntries(entries);
    for (const o of ordered) {
      if (o.kind === "declare") {
        ownDecl.push({ name: o.name, location: o.location, managed: o.managed, onlyDeclared: true });
        declared.push([o.name, o.location]);
      } else if (o.kind === "delete") {
        live[o.t.name].delete(o.version);
        deleted.push([o.t.name, o.version]);
      }
    }
    let bad = checkTxn(resp);
    if (!Array.isArray(resp.results) || resp.results.length !== ordered.length)
      bad = `${resp.results?.length} results answered for ${ordered.length} operations`;
    else
      for (let i = 0; i < ordered.length && !bad; i++) {
        const o = ordered[i];
        const r = resp.results[i];
        let b = null;
        if (o.kind === "declare") {
          const d = r?.declare_table;
          if (d?.location !== o.location) b = `location ${JSON.stringify(d?.location)}, expected ${JSON.stringify(o.location)}`;
          else if (d.managed_versioning !== o.managed) b = `managed_versioning ${d.managed_versioning}`;
        } else if (o.kind === "create") {
          b = checkRecord(o.e.t, r?.create_table_version?.version, o.e, t0);
        } else if (r?.delete_table_versions?.deleted_count !== 1) {
          b = `deleted_count ${JSON.stringify(r?.delete_table_versions?.deleted_count)}, expected 1`;
        }
        if (!b && Object.keys(r ?? {}).length !== 1) b = `result has keys ${Object.keys(r ?? {})}`;
        if (b) bad = `results[${i}] (${o.kind}): ${b}`;
      }
    if (bad) fail("mismatch", op, via, req, `${bad}\n    answer: ${JSON.stringify(resp)}`);
  };

  // ---- reads ----
  const latest = async (t) => {
    const req = { id: [t.ns, t.name], descending: true, limit: 1 };
    const op = "ListTableVersions";
    const { via, resp, broken } = await request(op, req);
    if (broken) return fail("unexpected", op, via, req, broken);
    if (resp instanceof Refused) return fail("unexpected", op, via, req, `${resp.code} ${resp.message}`);
    const own = Math.max(0, ...live[t.name].keys());
    const rec = resp.versions?.[0];
    let bad = resp.versions?.length === 1 ? checkRecord(t, rec, null, t0) : `${resp.versions?.length} versions`;
    if (!bad && rec.version < own) bad = `latest is ${rec.version}, but own version ${own} is live`;
    if (!bad && resp.page_token !== String(rec.version)) bad = `page_token ${JSON.stringify(resp.page_token)} after version ${rec.version}`;
    if (bad) return fail("mismatch", op, via, req, `${bad}\n    answer: ${JSON.stringify(resp)}`);
    see(t, rec);
  };

  const listVersions = async () => {
    const t = pick(TABLES);
    if (Math.random() < 0.3) return latest(t);
    const descending = Math.random() < 0.5;
    const limit = Math.random() < 0.15 ? undefined : 1 + rand(12);
    const ownBefore = new Map(live[t.name]);
    let token;
    const seenV = new Set();
    let prev = null;
    let low = -Infinity; // the versions the pages cover, to check completeness
    let high = Infinity;
    const pages = 1 + rand(4);
    for (let page = 0; page < pages; page++) {
      const req = { id: [t.ns, t.name] };
      if (descending || Math.random() < 0.5) req.descending = descending;
      if (limit !== undefined) req.limit = limit;
      if (token !== undefined) req.page_token = token;
      const op = "ListTableVersions";
      const { via, resp, broken } = await request(op, req);
      if (broken) return fail("unexpected", op, via, req, broken);
      if (resp instanceof Refused) return fail("unexpected", op, via, req, `${resp.code} ${resp.message}`);
      const vs = resp.versions;
      let bad = Array.isArray(vs) ? null : `versions ${JSON.stringify(vs)}`;
      for (let i = 0; !bad && i < vs.length; i++) {
        const rec = vs[i];
        bad = checkRecord(t, rec, null, t0);
        if (bad) bad = `versions[${i}]: ${bad}`;
        else if (prev !== null && (descending ? rec.version >= prev : rec.version <= prev))
          bad = `versions[${i}] is ${rec.version} after ${prev} (descending ${descending})`;
        else if (seenV.has(rec.version)) bad = `version ${rec.version} listed twice`;
        else if (ownBefore.has(rec.version) && ownBefore.get(rec.version) !== rec.metadata.token)
          bad = `version ${rec.version} has token ${rec.metadata.token}, own acknowledged ${ownBefore.get(rec.version)}`;
        if (!bad) {
          prev = rec.version;
          seenV.add(rec.version);
          see(t, rec);
        }
      }
      const full = vs?.length === (limit ?? 1000); // the default limit is 1000
      if (!bad && full && resp.page_token !== String(vs[vs.length - 1].version))
        bad = `full page of ${vs.length} with page_token ${JSON.stringify(resp.page_token)}`;
      if (!bad && !full && resp.page_token !== undefined) bad = `page of ${vs.length} (limit ${limit}) with page_token ${JSON.stringify(resp.page_token)}`;
      // (a later page may be empty: the page before was full, and its last version the oldest)
      if (!bad && limit === undefined && page === 0 && vs.length === 0) bad = "no versions at all";
      if (bad) return fail("mismatch", op, via, req, `${bad}\n    answer: ${JSON.stringify(resp).slice(0, 1500)}`);
      token = resp.page_token;
      if (token === undefined) break;
    }
    // every own live version the pages cover is listed
    if (token !== undefined) {
      if (descending) low = Number(token);
      else high = Number(token);
    }
    for (const [v] of ownBefore)
      if (v >= low && v <= high && !seenV.has(v))
        return fail("mismatch", "ListTableVersions", "-", { id: [t.ns, t.name], descending, limit },
          `own acknowledged version ${v} missing from the pages (covering ${low}..${high})`);
  };

  const describeVersion = async () => {
    const t = pick(TABLES);
    const own = [...live[t.name].entries()];
    const r = Math.random();
    const req = { id: [t.ns, t.name] };
    let want = null;
    if (r < 0.45 && own.length) {
      const [v, token] = pick(own);
      req.version = v;
      want = { version: v, token };
    } else if (r < 0.75) req.version = 1 + rand(guess[t.name]);
    const op = "DescribeTableVersion";
    const { via, resp, broken } = await request(op, req);
    if (broken) return fail("unexpected", op, via, req, broken);
    if (resp instanceof Refused) {
      // a version that is not the writer's own may have been deleted
      if (resp.code === "LN011" && req.version !== undefined && !want) return void stats.notFound++;
      return fail("unexpected", op, via, req, `${resp.code} ${resp.message}`);
    }
    let bad = checkRecord(t, resp.version, want, t0);
    if (!bad && req.version !== undefined && resp.version.version !== req.version) bad = `version ${resp.version.version}, asked for ${req.version}`;
    const ownMax = Math.max(0, ...live[t.name].keys());
    if (!bad && req.version === undefined && resp.version.version < ownMax) bad = `latest is ${resp.version.version}, own version ${ownMax} is live`;
    if (bad) return fail("mismatch", op, via, req, `${bad}\n    answer: ${JSON.stringify(resp)}`);
    see(t, resp.version);
  };

  const describeTable = async () => {
    const r = Math.random();
    let t;
    if (r < 0.5) t = pick(TABLES);
    else if (r < 0.8 || !ownDecl.length) t = { ns: "wide", ...pick(wide) };
    else t = { ns: "decl", ...pick(ownDecl) };
    const req = { id: [t.ns, t.name] };
    if (Math.random() < 0.5) req.with_table_uri = true;
    if (Math.random() < 0.5) req.check_declared = true;
    const op = "DescribeTable";
    const { via, resp, broken } = await request(op, req);
    if (broken) return fail("unexpected", op, via, req, broken);
    if (resp instanceof Refused) return fail("unexpected", op, via, req, `${resp.code} ${resp.message}`);
    const bad = checkDescribeTable(t, resp, req);
    if (bad) fail("mismatch", op, via, req, `${bad}\n    answer: ${JSON.stringify(resp)}`);
  };

  // ListAllTables, every page.  Without declared tables the answer is exact
  // (writers only declare); with them, the static tables in the order they
  // were made, the writer's own declarations, and declarations of others.
  const listAll = async () => {
    const includeDeclared = Math.random() < 0.5;
    const limit = pick([undefined, 13, 25, 40, 64, 100, 250]);
    const delimiter = pick([undefined, ".", "/", "::"]);
    const ownBefore = ownDecl.map((d) => d.name);
    const names = [];
    let token;
    const via = Math.random() < 0.5 ? "sql" : "rest";
    const op = "ListAllTables";
    for (let page = 0; ; page++) {
      const req = {};
      if (page === 1000) return fail("mismatch", op, via, req, "ListAllTables does not end after 1000 pages");
      if (!includeDeclared) req.include_declared = false;
      if (limit !== undefined) req.limit = limit;
      if (delimiter !== undefined) req.delimiter = delimiter;
      if (token !== undefined) req.page_token = token;
      const { resp, broken } = await request(op, req, via);
      if (broken) return fail("unexpected", op, via, req, broken);
      if (resp instanceof Refused) return fail("unexpected", op, via, req, `${resp.code} ${resp.message}`);
      const tables = resp.tables;
      let bad = Array.isArray(tables) && tables.every((s) => typeof s === "string" && s !== "") ? null : `tables ${JSON.stringify(tables)}`;
      if (!bad && limit !== undefined && tables.length > limit) bad = `${tables.length} names for limit ${limit}`;
      if (!bad && resp.page_token !== undefined) {
        if (tables.length !== (limit ?? 1000) || !/^[0-9a-f]{32}$/.test(resp.page_token)) bad = `page_token ${JSON.stringify(resp.page_token)} on a page of ${tables.length}`;
      }
      if (bad) return fail("mismatch", op, via, req, `${bad}\n    answer: ${JSON.stringify(resp).slice(0, 1500)}`);
      const split = tables.map((s) => s.split(delimiter ?? "$"));
      for (const k of split) names.push(k);
      if (resp.page_token !== undefined) {
        // a token seals the last table's id: the same table, the same token
        const last = split[split.length - 1].join("\u0000");
        const before = pageTokens.get(last);
        if (before !== undefined && before !== resp.page_token)
          return fail("mismatch", op, via, req, `page_token ${resp.page_token} after ${last.replace("\u0000", ".")}, which had ${before}`);
        pageTokens.set(last, resp.page_token);
      }
      token = resp.page_token;
      if (token === undefined) break;
    }
    const req = { include_declared: includeDeclared, limit, delimiter };
    const keys = names.map((k) => k.join("\u0000"));
    if (new Set(keys).size !== keys.length) return fail("mismatch", op, via, req, `a name listed twice: ${keys.join(" ").replaceAll("\u0000", ".")}`);
    // the static tables, in the order they were made
    const want = staticAll.filter((s) => includeDeclared || !s.onlyDeclared).map((s) => s.key.join("\u0000"));
    const got = keys.filter((k) => idOf.has(k));
    if (got.join("\n") !== want.join("\n"))
      return fail("mismatch", op, via, req, `static tables listed: ${got.length} of ${want.length}, or out of order:\n    got  ${got.join(" ").replaceAll("\u0000", ".")}\n    want ${want.join(" ").replaceAll("\u0000", ".")}`);
    const others = names.filter((k) => !idOf.has(k.join("\u0000")));
    for (const k of others) {
      if (!includeDeclared || k.length !== 2 || k[0] !== "decl" || !/^w\d+_\d+$/.test(k[1]))
        return fail("mismatch", op, via, req, `unexpected name ${JSON.stringify(k)}`);
      listedDecl.add(k[1]);
    }
    if (includeDeclared) {
      const listed = new Set(others.map((k) => k[1]));
      const missing = ownBefore.filter((n) => !listed.has(n));
      if (missing.length) return fail("mismatch", op, via, req, `own declared tables missing: ${missing.join(" ")}`);
    }
  };

  // ListTables of a namespace of static tables: exact, in byte order.
  const listTables = async () => {
    const ns = Math.random() < 0.8 ? "wide" : "load";
    const includeDeclared = Math.random() < 0.5;
    const all = ns === "wide" ? wide : TABLES.map((t) => ({ name: t.name, onlyDeclared: false }));
    const want = all
      .filter((x) => includeDeclared || !x.onlyDeclared)
      .map((x) => x.name)
      .sort((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b))));
    const limit = pick([undefined, 1, 5, 10, 16, 33, 70, 100]);
    const via = Math.random() < 0.5 ? "sql" : "rest";
    const op = "ListTables";
    let token;
    let pos = 0;
    for (let page = 0; ; page++) {
      const req = { id: [ns] };
      if (page === 1000) return fail("mismatch", op, via, req, "ListTables does not end after 1000 pages");
      if (!includeDeclared) req.include_declared = false;
      if (limit !== undefined) req.limit = limit;
      if (token !== undefined) req.page_token = token;
      const { resp, broken } = await request(op, req, via);
      if (broken) return fail("unexpected", op, via, req, broken);
      if (resp instanceof Refused) return fail("unexpected", op, via, req, `${resp.code} ${resp.message}`);
      const expectPage = want.slice(pos, limit === undefined ? undefined : pos + limit);
      pos += expectPage.length;
      const expectToken = pos < want.length ? expectPage[expectPage.length - 1] : undefined;
      if (JSON.stringify(resp.tables) !== JSON.stringify(expectPage) || resp.page_token !== expectToken)
        return fail("mismatch", op, via, req,
          `expected ${JSON.stringify(expectPage)} token ${JSON.stringify(expectToken)}\n    answer: ${JSON.stringify(resp)}`);
      token = resp.page_token;
      if (token === undefined) break;
    }
  };

  const KINDS = [
    [0.16, createOne],
    [0.18, batchCreate],
    [0.14, batchCommit],
    [0.16, listVersions],
    [0.14, describeVersion],
    [0.1, describeTable],
    [0.06, listAll],
    [0.06, listTables],
  ];
  const total = KINDS.reduce((s, [w]) => s + w, 0);
  let fatal = null;
  try {
    while (Date.now() < deadline) {
      let r = Math.random() * total;
      const [, fn] = KINDS.find(([w]) => (r -= w) < 0) ?? KINDS[0];
      await fn();
    }
  } catch (err) {
    fatal = `${err.stack ?? err}`;
  }
  conn?.close();
  // a file, not an IPC message: a large message may not be sent before exit
  const out = JSON.stringify({
    done: idx,
    stats,
    printed,
    fatal,
    created,
    deleted,
    declared,
    observed: [...observed.keys()],
    pageTokens: [...pageTokens.entries()],
    listedDecl: [...listedDecl],
  });
  fs.writeFileSync(resultFile(idx), out);
  process.exit(0);
}
const resultFile = (idx) => path.join(cfg.workdir, `writer-${idx}.json`);

// ---------------------------------------------------------------------------
// Orchestrator
// ---------------------------------------------------------------------------
function newClient(appName) {
  return new Client({ host: cfg.sockdir, port: cfg.port, user: "postgres", database: cfg.db, application_name: appName });
}
async function connectRetry(appName) {
  const t0 = Date.now();
  for (;;) {
    try {
      return await newClient(appName).connect();
    } catch (err) {
      if (Date.now() - t0 > 30000) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
async function q1(conn, sql) {
  const rows = await conn.query(sql);
  return rows[0]?.[0] == null ? null : JSON.parse(rows[0][0]);
}

async function setup(conn) {
  const t0 = Date.now();
  const mkdirPg = (d) => {
    fs.mkdirSync(d, { recursive: true, mode: 0o755 });
    fs.chownSync(d, cfg.pgUid, cfg.pgGid);
  };
  mkdirPg(path.join(cfg.root, "decl"));
  for (const ns of ["load", "wide", "decl"]) await q1(conn, `SELECT lance_create_namespace(${lit(JSON.stringify({ id: [ns] }))})`);
  const tables = [];
  for (let i = 0; i < 6; i++) {
    const d = await q1(conn, `SELECT lance_declare_table(${lit(JSON.stringify({ id: ["load", `m${i}`] }))})`);
    if (!d.managed_versioning) throw new Error(`m${i} is not managed: ${JSON.stringify(d)}`);
    for (const sub of [path.dirname(d.location), d.location, path.join(d.location, "_versions")]) mkdirPg(sub);
    tables.push({ ns: "load", name: `m${i}`, managed: true, scheme: i === 5 ? "V1" : "V2", location: d.location, onlyDeclared: false });
  }
  for (let i = 0; i < 4; i++) {
    const location = i === 3 ? `gs://lance-load/u${i}.lance` : `s3://lance-load/u${i}.lance`;
    const req = { id: ["load", `u${i}`], location };
    // u3 is declared, the others registered: both get versions
    const fn = i === 3 ? "lance_declare_table" : "lance_register_table";
    const d = await q1(conn, `SELECT ${fn}(${lit(JSON.stringify(req))})`);
    if (d.location !== location) throw new Error(`u${i}: ${JSON.stringify(d)}`);
    tables.push({ ns: "load", name: `u${i}`, managed: false, scheme: "V2", location, onlyDeclared: false });
  }
  // version 1 of every versioned table
  const created = [];
  for (const t of tables) {
    const token = randomUUID();
    if (t.managed) fs.writeFileSync(stagingFile(t, 1, token), manifestContent(t, 1, token), { mode: 0o644 });
    const r = await q1(conn, `SELECT lance_create_table_version(${lit(JSON.stringify(versionRequest(t, 1, token, "setup")))})`);
    const bad = checkRecord(t, r.version, { version: 1, token }, t0);
    if (bad) throw new Error(`set-up version of ${t.name}: ${bad}`);
    created.push([t.name, 1, token]);
  }
  // namespace "wide": WIDE_TABLES tables, every fourth only declared
  const wide = [];
  for (let i = 0; i < cfg.wideTables; i++) {
    const name = `t${String((i * 37) % cfg.wideTables).padStart(3, "0")}`; // not made in name order
    const location = `s3://lance-load/wide/${name}.lance`;
    const onlyDeclared = i % 4 === 1;
    const fn = onlyDeclared ? "lance_declare_table" : "lance_register_table";
    await q1(conn, `SELECT ${fn}(${lit(JSON.stringify({ id: ["wide", name], location }))})`);
    wide.push({ name, location, onlyDeclared, managed: false });
  }
  const rows = await conn.query(
    `SELECT t.id, n.name, t.name, t.declared FROM lance_catalog.object t JOIN lance_catalog.object n ON n.id = t.parent_id
      WHERE t.kind = 'table' ORDER BY t.id`,
  );
  const allTables = rows.map((r) => ({ id: Number(r[0]), key: [r[1], r[2]], onlyDeclared: r[3] === "t" }));
  for (const s of allTables) {
    const w = s.key[0] === "wide" ? wide.find((x) => x.name === s.key[1]) : tables.find((x) => x.name === s.key[1]);
    if (!w || w.onlyDeclared !== s.onlyDeclared) throw new Error(`set-up: ${JSON.stringify(s)} unexpected`);
  }
  fs.writeFileSync(SETUP_FILE, JSON.stringify({ t0, tables, wide, allTables }));
  return { tables, created, allTables };
}

async function orchestrate() {
  const started = Date.now();
  const conn = await newClient("load-orchestrator").connect();
  const { tables, created: setupCreated, allTables } = await setup(conn);
  conn.close();
  console.log(
    `load: ${cfg.writers} writers for ${cfg.seconds} s, reconnecting every ${cfg.reconnectEvery} requests; ` +
      `${tables.filter((t) => t.managed).length} managed and ${tables.filter((t) => !t.managed).length} unmanaged tables, ` +
      `${cfg.wideTables} tables in namespace "wide"`,
  );

  const results = await Promise.all(
    Array.from({ length: cfg.writers }, (_, i) =>
      new Promise((resolve) => {
        const child = fork(fileURLToPath(import.meta.url), ["writer", String(i)], { stdio: "inherit" });
        const watchdog = setTimeout(() => {
          child.kill("SIGKILL");
        }, (cfg.seconds + 90) * 1000);
        child.on("exit", (code, sig) => {
          clearTimeout(watchdog);
          let result = null;
          try {
            result = JSON.parse(fs.readFileSync(resultFile(i), "utf8"));
          } catch {
            /* none */
          }
          resolve(result ?? { done: i, fatal: `writer ${i} exited (${code ?? sig}) without a result` });
        });
      })),
  );

  // ---- figures ----
  const sum = (f) => results.reduce((s, r) => s + (r.stats ? f(r.stats) : 0), 0);
  const perKind = {};
  for (const r of results)
    for (const [k, n] of Object.entries(r.stats?.requests ?? {})) {
      const [op, via] = k.split(" ");
      perKind[op] ??= { sql: 0, rest: 0 };
      perKind[op][via] += n;
    }
  const total = sum((s) => s.total);
  const secs = (Date.now() - started) / 1000;
  console.log(`load: requests per kind (sql + rest):`);
  for (const op of Object.keys(SQL_FN))
    console.log(`load:   ${op.padEnd(26)} ${String((perKind[op]?.sql ?? 0) + (perKind[op]?.rest ?? 0)).padStart(7)}  (${perKind[op]?.sql ?? 0} + ${perKind[op]?.rest ?? 0})`);
  const mismatches = sum((s) => s.mismatches);
  const unexpected = sum((s) => s.unexpected);
  console.log(`load: requests ${total} (${Math.round(total / cfg.seconds)}/s), connections ${sum((s) => s.connections)}`);
  console.log(`load: acknowledged writes ${sum((s) => s.acked)}, conflicts (LN014) ${sum((s) => s.conflicts)}, ` +
    `versions not found (LN011, deleted meanwhile) ${sum((s) => s.notFound)}`);
  console.log(`load: mismatches ${mismatches}, unexpected errors ${unexpected}`);
  for (const r of results) for (const p of r.printed ?? []) console.log(`load: ${p}`);

  // ---- end checks ----
  const checks = [];
  const check = (label, bad) => checks.push([label, bad]);
  const fatal = results.filter((r) => r.fatal).map((r) => r.fatal);
  check("every writer ran to the end", fatal.length ? fatal.join("\n") : null);
  check("every answer matched its request (mismatches = 0)", mismatches ? `${mismatches} mismatches` : null);
  check("no unexpected errors", unexpected ? `${unexpected} unexpected errors` : null);
  const missingKinds = Object.keys(SQL_FN).flatMap((op) =>
    ["sql", "rest"].filter((v) => !(perKind[op]?.[v] > 0)).map((v) => `${op} via ${v}`));
  check("every kind of request went through SQL and through lance_rest", missingKinds.length ? `never sent: ${missingKinds.join(", ")}` : null);
  const reconnects = sum((s) => s.connections);
  check(`writers reconnected every ${cfg.reconnectEvery} requests`,
    reconnects >= Math.max(cfg.writers, Math.floor(total / cfg.reconnectEvery)) ? null : `only ${reconnects} connections for ${total} requests`);
  check("writers raced for versions (conflicts > 0)", sum((s) => s.conflicts) > 0 || cfg.writers < 2 ? null : "no LN014 at all");

  // the catalog against every acknowledged answer
  const TABLE = Object.fromEntries(tables.map((t) => [t.name, t]));
  const creates = new Map(); // "table/version" -> [{token, deleted}]
  const addCreate = ([tn, v, token], who) => {
    const k = `${tn}/${v}`;
    (creates.get(k) ?? creates.set(k, []).get(k)).push({ token, who, deleted: false });
  };
  for (const c of setupCreated) addCreate(c, "setup");
  for (const r of results) for (const c of r.created ?? []) addCreate(c, r.done);
  let badDeletes = 0;
  for (const r of results)
    for (const [tn, v] of r.deleted ?? []) {
      const live = (creates.get(`${tn}/${v}`) ?? []).filter((c) => c.who === r.done && !c.deleted);
      if (live.length !== 1) badDeletes++;
      else live[0].deleted = true;
    }
  // (after a server crash, the server is back once it has recovered)
  const conn2 = await connectRetry("load-check");
  const rows = await conn2.query(
    `SELECT o.name, v.version, v.manifest_path, v.manifest_size, v.metadata ->> 'token', v.e_tag, v.branch
       FROM lance_catalog.version v JOIN lance_catalog.object o ON o.id = v.table_id
       JOIN lance_catalog.object n ON n.id = o.parent_id WHERE n.name = 'load' ORDER BY 1, 2`,
  );
  const problems = [];
  const inCatalog = new Set();
  for (const [tn, vs, mp, ms, token, etag, branch] of rows) {
    const t = TABLE[tn];
    const v = Number(vs);
    const k = `${tn}/${v}`;
    inCatalog.add(k);
    const liveAcks = (creates.get(k) ?? []).filter((c) => !c.deleted);
    if (liveAcks.length !== 1) {
      problems.push(`catalog ${k} (token ${token}): ${liveAcks.length} acknowledged live creations`);
      continue;
    }
    const want = liveAcks[0].token;
    const wantEtag = t.managed ? null : eTag(want);
    if (token !== want || mp !== expectedPath(t, v, want) || Number(ms) !== expectedSize(t, v, want) || etag !== wantEtag || branch !== "")
      problems.push(`catalog ${k}: ${JSON.stringify([mp, ms, token, etag, branch])}, acknowledged token ${want}`);
  }
  for (const [k, cs] of creates) {
    const liveAcks = cs.filter((c) => !c.deleted);
    if (liveAcks.length > 1) problems.push(`${k}: ${liveAcks.length} acknowledged creations and none deleted`);
    if (liveAcks.length === 1 && !inCatalog.has(k)) problems.push(`${k}: acknowledged (token ${liveAcks[0].token}) but not in the catalog`);
    if (liveAcks.length === 0 && inCatalog.has(k)) problems.push(`${k}: acknowledged deleted but in the catalog`);
  }
  if (badDeletes) problems.push(`${badDeletes} acknowledged deletions of versions the writer had no live creation of`);
  check(`the catalog (lance_catalog.version, ${rows.length} rows) matches every acknowledged answer`,
    problems.length ? problems.slice(0, 10).join("\n") + (problems.length > 10 ? `\n... ${problems.length} in all` : "") : null);

  // the final manifests on disk hold the staging content of their version
  const diskProblems = [];
  for (const [k, cs] of creates) {
    const live = cs.filter((c) => !c.deleted);
    const [tn, vs] = k.split("/");
    const t = TABLE[tn];
    if (!t.managed || live.length !== 1) continue;
    const v = Number(vs);
    let text = null;
    try {
      text = fs.readFileSync(finalFile(t, v), "utf8");
    } catch {
      /* missing */
    }
    if (text !== manifestContent(t, v, live[0].token)) diskProblems.push(`${finalFile(t, v)}: ${text === null ? "missing" : JSON.stringify(text.slice(0, 120))}`);
    if (fs.existsSync(stagingFile(t, v, live[0].token))) diskProblems.push(`${stagingFile(t, v, live[0].token)}: staging file of a committed version remains`);
  }
  check("every committed managed version's final manifest holds its staging content",
    diskProblems.length ? diskProblems.slice(0, 10).join("\n") + (diskProblems.length > 10 ? `\n... ${diskProblems.length} in all` : "") : null);

  // every version any answer showed was an acknowledged creation
  const ackTokens = new Set();
  for (const [k, cs] of creates) for (const c of cs) ackTokens.add(`${k}/${c.token}`);
  const strange = [];
  let observedN = 0;
  for (const r of results)
    for (const o of r.observed ?? []) {
      observedN++;
      if (!ackTokens.has(o)) strange.push(o);
    }
  check(`every version answered (${observedN} table/version/token seen) was an acknowledged creation`,
    strange.length ? `never acknowledged: ${strange.slice(0, 10).join(" ")}` : null);

  // declared tables: the catalog's namespace "decl" holds exactly the acknowledged ones
  const declRows = await conn2.query(
    `SELECT o.name, o.location, o.declared FROM lance_catalog.object o JOIN lance_catalog.object n ON n.id = o.parent_id
      WHERE n.name = 'decl' AND n.parent_id = 0 ORDER BY 1`,
  );
  const ackDecl = new Map();
  for (const r of results) for (const [n, loc] of r.declared ?? []) ackDecl.set(n, loc);
  const declProblems = [];
  for (const [n, loc, d] of declRows) {
    if (ackDecl.get(n) !== loc || d !== "t") declProblems.push(`${n} at ${loc} (declared ${d}), acknowledged ${ackDecl.get(n)}`);
  }
  if (declRows.length !== ackDecl.size) declProblems.push(`${declRows.length} in the catalog, ${ackDecl.size} acknowledged`);
  const listedNever = [];
  for (const r of results) for (const n of r.listedDecl ?? []) if (!ackDecl.has(n)) listedNever.push(n);
  if (listedNever.length) declProblems.push(`listed but never acknowledged: ${listedNever.slice(0, 10).join(" ")}`);
  check(`the declared tables (${declRows.length}) are exactly the acknowledged declarations`, declProblems.length ? declProblems.join("\n") : null);

  // ListAllTables page tokens name the page's last table (sealed: the next
  // page starts at the first table made after it)
  const idRows = await conn2.query(
    `SELECT n.name, o.name, o.id FROM lance_catalog.object o JOIN lance_catalog.object n ON n.id = o.parent_id WHERE o.kind = 'table' ORDER BY o.id`,
  );
  const ids = new Map(idRows.map(([a, b, id]) => [`${a}\u0000${b}`, BigInt(id)]));
  const tokenProblems = [];
  let tokensN = 0;
  for (const r of results)
    for (const [k, tok] of r.pageTokens ?? []) {
      tokensN++;
      const id = ids.get(k);
      if (id === undefined) continue; // dropped since
      const next = idRows.find(([, , other]) => BigInt(other) > id);
      const want = next ? `${next[0]}$${next[1]}` : "";
      const [[got]] = await conn2.query(
        `SELECT coalesce(lance_list_all_tables(${lit(JSON.stringify({ page_token: tok, limit: 1 }))}) -> 'tables' ->> 0, '')`,
      );
      if (got !== want) tokenProblems.push(`${k.replace("\u0000", ".")}: the page after token ${tok} starts at ${got || "nothing"}, not ${want || "nothing"}`);
    }
  check(`ListAllTables page tokens (${tokensN} distinct) name the page's last table`, tokenProblems.length ? tokenProblems.slice(0, 10).join("\n") : null);
  conn2.close();

  let failed = 0;
  for (const [label, bad] of checks) {
    if (bad) {
      failed++;
      console.log(`  FAIL  ${label}`);
      for (const line of bad.split("\n")) console.log(`        ${line}`);
    } else console.log(`  ok    ${label}`);
  }
  console.log(`load: ${checks.length} checks, ${failed} failed, ${Math.round(secs)} s`);
  process.exit(failed ? 1 : 0);
}

if (process.argv[2] === "writer") {
  writerMain(Number(process.argv[3])).catch((err) => {
    console.error(err);
    process.exit(2);
  });
} else {
  orchestrate().catch((err) => {
    console.error(`load: ${err.stack ?? err}`);
    console.log("  FAIL  the load test ran");
    process.exit(1);
  });
}
