// Crash test driver: concurrent writers commit versions of managed tables
// (single versions, batches over several tables, batch commits) while the
// server is SIGKILLed at random moments and restarted.  After each restart
// it checks what the server acknowledged against what the catalog and the
// disk hold, then makes the next commit on every table.  Started by run.sh,
// which owns the cluster; see run.sh for the environment.
//
//   node crash.mjs            the orchestrator (kills, restarts, checks)
//   node crash.mjs writer N   writer N (forked by the orchestrator)
//
// Attempts: "single" (CreateTableVersion), "batch_create"
// (BatchCreateTableVersions over 2..4 tables), "batch_commit"
// (BatchCommitTables), "txn" (several CreateTableVersion calls in one
// explicit transaction, half of them after a savepoint rolled back); a
// quarter of the multi-table ones write two versions of one table.  Each
// entry is version latest + 1 of its table, so writers race for versions
// and the losers get LN014.
//
// Every writer attempt logs, to the writer's own file, an "attempt" line
// (its entries: table, version, token) before the call and then exactly one
// outcome line: "ack" (the call returned and its commit was acknowledged),
// "fail" (the server answered an error: nothing may be committed) or
// "unknown" (the connection was lost: either outcome is allowed).  The token
// is unique per entry: it is in the staging manifest's content and in the
// version's metadata ("crash_token"), so the catalog row says which attempt
// made it and the final manifest must hold exactly that attempt's content.
//
// After each restart (writers paused): every acknowledged entry is in the
// catalog (else "lost"); every attempt of several entries has all or none
// (else "partial"); no refused attempt has any ("phantom"); every catalog
// version's final manifest exists, at the right name, with the staging
// content of the token its row names and the recorded size ("bad
// manifests"); the change feed (lance_changes) lists exactly the catalog's
// versions; then the next commit on every table, through the highest final
// manifest without a catalog row (an orphan of a commit cut short), must
// succeed, answer right and leave its own content: no orphan may remain
// ("unswept").
import { fork, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client, ConnectionLost, ServerError, lit } from "./pgwire.mjs";

const env = process.env;
const need = (name) => {
  const v = env[name];
  if (!v) throw new Error(`${name} is not set (run test/crash/run.sh)`);
  return v;
};
const cfg = {
  pgdata: need("CRASH_PGDATA"),
  port: Number(need("CRASH_PORT")),
  sockdir: need("CRASH_SOCKDIR"),
  db: need("CRASH_DB"),
  root: need("CRASH_ROOT"),
  logdir: need("CRASH_LOGDIR"),
  kills: Number(env.CRASH_KILLS || 20),
  writers: Math.max(4, Number(env.CRASH_WRITERS || 6)),
  tables: Math.max(3, Number(env.CRASH_TABLES || 6)),
  minRunMs: Number(env.CRASH_MIN_RUN_MS || 300),
  maxRunMs: Number(env.CRASH_MAX_RUN_MS || 2500),
};
const NS = "crash";
const HERE = path.dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------------------
// Tables, names and contents shared by writers and checks
// ---------------------------------------------------------------------------
// The last table uses the V1 naming scheme, the others V2 (the default).
const TABLES = Array.from({ length: cfg.tables }, (_, i) => ({
  name: `t${i}`,
  scheme: i === cfg.tables - 1 ? "V1" : "V2",
  dir: path.join(cfg.root, NS, `t${i}.lance`),
}));
const TABLE = Object.fromEntries(TABLES.map((t) => [t.name, t]));
const U64_MAX = (1n << 64n) - 1n;

function finalName(version, scheme) {
  return scheme === "V1"
    ? `${version}.manifest`
    : `${(U64_MAX - BigInt(version)).toString().padStart(20, "0")}.manifest`;
}
function versionOfFinal(name, scheme) {
  if (scheme === "V1") {
    const m = /^(\d+)\.manifest$/.exec(name);
    return m ? Number(m[1]) : null;
  }
  const m = /^(\d{20})\.manifest$/.exec(name);
  return m ? Number(U64_MAX - BigInt(m[1])) : null;
}
function finalFile(table, version) {
  const t = TABLE[table];
  return path.join(t.dir, "_versions", finalName(version, t.scheme));
}
function stagingFile(table, version, token) {
  return `${finalFile(table, version)}-${token}`;
}
// Lance sends object store paths: no leading slash.
const lancePath = (p) => p.replace(/^\/+/, "");
// The staging manifest's content: known from (table, version, token) alone,
// of a length that varies with the token.
function manifestContent(table, version, token) {
  const pad = parseInt(token.slice(-3), 16) % 400;
  return `lance crash test manifest\ntable=${table} version=${version} token=${token}\n${"#".repeat(pad)}\n`;
}
function tokenOfContent(text) {
  const m = /token=([0-9a-f-]+)/.exec(text ?? "");
  return m ? m[1] : null;
}

function entryRequest(e) {
  const r = {
    id: [NS, e.table],
    version: e.version,
    manifest_path: lancePath(stagingFile(e.table, e.version, e.token)),
    metadata: { crash_token: e.token },
  };
  if (TABLE[e.table].scheme === "V1") r.naming_scheme = "V1";
  return r;
}

// The SQL of an attempt, and a check of its answer (null when right).
// "txn" is an explicit transaction of one CreateTableVersion per entry; with
// `discarded` entries it first makes those in a savepoint and rolls back to
// it (the same table and version as the first entry, another token), so the
// commit keeps a manifest that replaced one undone in the same transaction.
function attemptSql(kind, entries, discarded = []) {
  const one = (e) => `SELECT lance_create_table_version(${lit(JSON.stringify(entryRequest(e)))});`;
  if (kind === "txn")
    return [
      "BEGIN;",
      ...(discarded.length ? ["SAVEPOINT s;", ...discarded.map(one), "ROLLBACK TO SAVEPOINT s;"] : []),
      ...entries.map(one),
      "COMMIT;",
    ].join(" ");
  if (kind === "single")
    return `SELECT lance_create_table_version(${lit(JSON.stringify(entryRequest(entries[0])))})`;
  if (kind === "batch_create")
    return `SELECT lance_batch_create_table_versions(${lit(JSON.stringify({ entries: entries.map(entryRequest) }))})`;
  return `SELECT lance_batch_commit_tables(${lit(
    JSON.stringify({ operations: entries.map((e) => ({ create_table_version: entryRequest(e) })) }),
  )})`;
}
function checkAnswer(kind, entries, rows, discarded = []) {
  const resp = rows[0] ? JSON.parse(rows[0][0]) : null;
  let versions;
  if (kind === "txn") versions = rows.slice(discarded.length).map((r) => JSON.parse(r[0]).version);
  else if (kind === "single") versions = [resp?.version];
  else if (kind === "batch_create") versions = resp?.versions;
  else versions = resp?.results?.map((r) => r?.create_table_version?.version);
  if (!Array.isArray(versions) || versions.length !== entries.length)
    return `answer has ${versions?.length} versions for ${entries.length} entries: ${JSON.stringify(resp)}`;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    const v = versions[i];
    const want = lancePath(finalFile(e.table, e.version));
    if (v?.version !== e.version || v?.manifest_path !== want)
      return `answer entry ${i} is ${JSON.stringify(v)}, expected version ${e.version} at ${want}`;
  }
  return null;
}

function writeStaging(e) {
  fs.writeFileSync(stagingFile(e.table, e.version, e.token), manifestContent(e.table, e.version, e.token), {
    mode: 0o644,
  });
}

// An error after which the outcome is unknown: the session ended (FATAL,
// PANIC, shutdown or crash of another process, connection failure).
function outcomeUnknown(err) {
  if (err instanceof ConnectionLost) return true;
  if (err instanceof ServerError)
    return err.severity === "FATAL" || err.severity === "PANIC" || /^(57|08)/.test(err.code ?? "");
  return false;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rand = (n) => Math.floor(Math.random() * n);
function pickDistinct(k) {
  const names = TABLES.map((t) => t.name);
  for (let i = names.length - 1; i > 0; i--) {
    const j = rand(i + 1);
    [names[i], names[j]] = [names[j], names[i]];
  }
  return names.slice(0, k);
}

function newClient(appName) {
  return new Client({
    host: cfg.sockdir,
    port: cfg.port,
    user: "postgres",
    database: cfg.db,
    application_name: appName,
  });
}

// The latest version of each table, through the API (one round trip).
async function latestVersions(conn, names) {
  const cols = names.map(
    (n) => `lance_list_table_versions(${lit(JSON.stringify({ id: [NS, n], descending: true, limit: 1 }))})`,
  );
  const rows = await conn.query(`SELECT ${cols.join(", ")}`);
  const out = {};
  names.forEach((n, i) => {
    const v = JSON.parse(rows[0][i]).versions?.[0]?.version;
    out[n] = v ?? 0;
  });
  return out;
}

// ---------------------------------------------------------------------------
// Writer process
// ---------------------------------------------------------------------------
async function writerMain(idx) {
  const logFd = fs.openSync(path.join(cfg.logdir, `writer-${idx}.log`), "a");
  const log = (o) => fs.writeSync(logFd, `${JSON.stringify({ ...o, ms: Date.now() })}\n`);
  let running = false;
  let pauseAsked = false;
  let stopAsked = false;
  let wake = null;
  let seq = 0;
  const stats = { attempts: 0, acks: 0, fails: 0, unknown: 0, unexpected: 0 };
  process.on("message", (m) => {
    if (m === "resume") {
      running = true;
      pauseAsked = false;
    } else if (m === "pause") pauseAsked = true;
    else if (m === "stop") stopAsked = true;
    wake?.();
  });
  process.on("disconnect", () => process.exit(0));
  // messages sent before the handler above exists are lost: say when it does
  process.send({ ready: idx });

  let conn = null;
  for (;;) {
    if (stopAsked) break;
    if (pauseAsked || !running) {
      if (conn) conn.close();
      conn = null;
      if (pauseAsked) {
        running = false;
        pauseAsked = false;
        process.send({ paused: idx, stats });
      }
      await new Promise((r) => (wake = r));
      wake = null;
      continue;
    }
    if (!conn) {
      try {
        conn = await newClient(`crash-writer-${idx}`).connect();
      } catch {
        conn = null;
        await sleep(50);
        continue;
      }
    }
    // One attempt: a single version, a batch-create or a batch-commit over
    // 2..4 tables; a quarter of the batches write two versions of one table.
    const r = Math.random();
    const kind = r < 0.3 ? "single" : r < 0.55 ? "batch_create" : r < 0.8 ? "batch_commit" : "txn";
    const names = pickDistinct(kind === "single" ? 1 : 2 + rand(Math.min(3, TABLES.length - 1)));
    try {
      const latest = await latestVersions(conn, names);
      const entries = names.map((n) => ({ table: n, version: latest[n] + 1, token: randomUUID() }));
      if (kind !== "single" && Math.random() < 0.25) {
        const e = entries[0];
        entries.splice(1, 0, { table: e.table, version: e.version + 1, token: randomUUID() });
      }
      // a transaction takes its keys in the batches' order (table, version):
      // in random order two of them deadlock and wait deadlock_timeout
      if (kind === "txn")
        entries.sort((a, b) => TABLES.indexOf(TABLE[a.table]) - TABLES.indexOf(TABLE[b.table]) || a.version - b.version);
      const discarded =
        kind === "txn" && Math.random() < 0.5 ? [{ ...entries[0], token: randomUUID() }] : [];
      entries.forEach(writeStaging);
      discarded.forEach(writeStaging);
      const id = `w${idx}-${++seq}`;
      log({ t: "attempt", id, kind, entries, discarded });
      stats.attempts++;
      try {
        const rows = await conn.query(attemptSql(kind, entries, discarded));
        log({ t: "ack", id });
        stats.acks++;
        const bad = checkAnswer(kind, entries, rows, discarded);
        if (bad) {
          stats.unexpected++;
          log({ t: "unexpected", id, error: bad });
        }
      } catch (err) {
        if (outcomeUnknown(err)) {
          log({ t: "unknown", id, error: String(err.message) });
          stats.unknown++;
          throw err;
        }
        if (!(err instanceof ServerError)) throw err;
        log({ t: "fail", id, code: err.code, error: err.message });
        stats.fails++;
        if (err.code !== "LN014") {
          stats.unexpected++;
          log({ t: "unexpected", id, error: `${err.code} ${err.message}` });
        }
        // a refused attempt's staging files are the writer's to clean up
        for (const e of [...entries, ...discarded])
          fs.rmSync(stagingFile(e.table, e.version, e.token), { force: true });
        if (conn.txStatus !== "I") await conn.query("ROLLBACK");
        // The rollback is over (ReadyForQuery comes after it): no final
        // manifest with this attempt's content may remain.  (At a restart
        // one may: the error reaches the client before the rollback runs.)
        for (const e of [...entries, ...discarded])
          if (tokenOfContent(readOrNull(finalFile(e.table, e.version))) === e.token) {
            stats.unexpected++;
            log({ t: "unexpected", id, error: `ROLLBACK LEFTOVER: refused attempt's final manifest ${e.table}@${e.version} remains` });
          }
      }
    } catch (err) {
      if (outcomeUnknown(err)) {
        conn?.close();
        conn = null;
        await sleep(20);
        continue;
      }
      if (err instanceof ServerError) {
        // the look-up of the latest versions failed
        stats.unexpected++;
        log({ t: "unexpected", id: null, error: `${err.code} ${err.message}` });
        continue;
      }
      throw err;
    }
  }
  conn?.close();
  fs.closeSync(logFd);
  process.send({ stopped: idx, stats });
  process.exit(0);
}

// ---------------------------------------------------------------------------
// Orchestrator: the server's processes, found by their working directory
// (every postgres process runs in its data directory), so that no other
// cluster on the machine is touched.
// ---------------------------------------------------------------------------
function serverPids() {
  const out = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readlinkSync(`/proc/${d}/cwd`) === cfg.pgdata) out.push(Number(d));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return out;
}
let zombieLockRemovals = 0;
function isZombie(pid) {
  try {
    return /^\d+ \(.*\) Z /s.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}
function postmasterPid() {
  try {
    return Number(fs.readFileSync(path.join(cfg.pgdata, "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    return null;
  }
}
function kill9(pid) {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    /* already gone */
  }
}

// SIGKILL the server.  "postmaster": the postmaster alone, as the issue
// says; its children notice and exit by themselves (a backend in the middle
// of a commit may still finish it and answer), and are SIGKILLed if they
// take longer than 5 s.  "all": the postmaster and every child at once,
// like an OOM kill of the whole service.  Either way nothing of the server
// remains before the restart (a child still attached to the shared memory
// would make the new postmaster refuse to start).
async function killServer(mode) {
  const pm = postmasterPid();
  const seen = new Set(serverPids());
  if (!pm || !seen.has(pm)) throw new Error("the server is not running");
  if (mode === "all") {
    kill9(pm);
    for (const p of serverPids()) {
      seen.add(p);
      kill9(p);
    }
  } else {
    kill9(pm);
  }
  // Wait until every process is gone, zombies included: a killed postmaster
  // stays a zombie until its parent (init, here) reaps it, and while its
  // PID exists the new postmaster takes the lock file for a live one's.
  // Where init is slow to reap (over 5 s), the lock file of a postmaster
  // that is only a zombie is removed: it holds no shared memory any more.
  const t0 = Date.now();
  for (;;) {
    for (const p of serverPids()) seen.add(p);
    const left = [...seen].filter((p) => fs.existsSync(`/proc/${p}`));
    if (left.length === 0) break;
    const live = left.filter((p) => !isZombie(p));
    if (Date.now() - t0 > 5000) {
      live.forEach(kill9);
      if (live.length === 0) {
        fs.rmSync(path.join(cfg.pgdata, "postmaster.pid"), { force: true });
        zombieLockRemovals++;
        break;
      }
    }
    if (Date.now() - t0 > 60000) throw new Error(`server processes ${left} do not go away`);
    await sleep(10);
  }
  return Date.now() - t0;
}

function startServer() {
  const r = spawnSync("bash", [path.join(HERE, "server.sh"), "start", cfg.pgdata, String(cfg.port), cfg.sockdir], {
    encoding: "utf8",
    timeout: 120000,
  });
  if (r.status !== 0) throw new Error(`server did not start:\n${r.stdout}${r.stderr}`);
}

async function connectRetry(appName) {
  const t0 = Date.now();
  for (;;) {
    try {
      return await newClient(appName).connect();
    } catch (err) {
      if (Date.now() - t0 > 60000) throw err;
      await sleep(100);
    }
  }
}

// ---------------------------------------------------------------------------
// Logs and checks
// ---------------------------------------------------------------------------
function readLogs() {
  const attempts = new Map();
  const unexpected = [];
  for (const f of fs.readdirSync(cfg.logdir)) {
    if (!f.endsWith(".log")) continue;
    const lines = fs.readFileSync(path.join(cfg.logdir, f), "utf8").split("\n");
    for (const line of lines) {
      if (!line) continue;
      const o = JSON.parse(line);
      if (o.t === "attempt") attempts.set(o.id, { ...o, outcome: "none" });
      else if (o.t === "ack" || o.t === "fail" || o.t === "unknown") attempts.get(o.id).outcome = o.t;
      else if (o.t === "unexpected") unexpected.push(`${f}: ${o.id ?? ""} ${o.error}`);
    }
  }
  const byToken = new Map();
  for (const a of attempts.values()) for (const e of a.entries) byToken.set(e.token, { a, e });
  return { attempts, byToken, unexpected };
}

// Every version of the test tables, through the API (ListTableVersions,
// page by page), not the catalog's tables: what a Lance client would see.
async function catalogRows(conn) {
  const map = new Map(); // "t3/17" -> row
  for (const t of TABLES) {
    let token = null;
    for (;;) {
      const req = { id: [NS, t.name], limit: 10000 };
      if (token) req.page_token = token;
      const page = JSON.parse((await conn.query(`SELECT lance_list_table_versions(${lit(JSON.stringify(req))})`))[0][0]);
      for (const v of page.versions ?? [])
        map.set(`${t.name}/${v.version}`, {
          table: t.name,
          version: v.version,
          path: v.manifest_path,
          size: v.manifest_size ?? null,
          token: v.metadata?.crash_token ?? null,
        });
      if (!page.page_token || !page.versions?.length) break;
      token = page.page_token;
    }
  }
  return map;
}

// The change feed (lance_changes): the versions it says were created.  Read
// incrementally; after a restart no transaction is in flight, so the feed
// must not stop at a gap left by a crashed one.
const feed = { after: 0, created: new Set() };
async function readFeed(conn) {
  for (;;) {
    const rows = await conn.query(
      `SELECT seq, array_to_json(objects), array_to_json(versions) FROM lance_changes(${feed.after}, 1000)`,
    );
    for (const [seq, objects, versions] of rows) {
      feed.after = Math.max(feed.after, Number(seq));
      const o = JSON.parse(objects);
      const v = JSON.parse(versions);
      o.forEach((name, i) => {
        if (v[i] !== null && name.startsWith(`${NS}$`)) feed.created.add(`${name.slice(NS.length + 1)}/${v[i]}`);
      });
    }
    if (rows.length < 1000) return;
  }
}
function checkFeed(rows, where) {
  let missing = 0;
  let extra = 0;
  for (const k of rows.keys()) if (!feed.created.has(k)) missing++;
  for (const k of feed.created) if (!rows.has(k)) extra++;
  if (missing) problem(`${where}: CHANGE FEED lacks ${missing} catalog versions (it stops at seq ${feed.after})`);
  if (extra) problem(`${where}: CHANGE FEED has ${extra} created versions that are not in the catalog`);
  return missing + extra;
}

function readOrNull(file) {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

// Totals over the whole run.
const total = {
  kills: 0,
  killModes: { postmaster: 0, all: 0 },
  acked: 0,
  ackedVersions: 0,
  lost: 0,
  partial: 0,
  phantom: 0,
  badManifests: 0,
  orphansSeen: 0,
  orphansReplaced: 0,
  unswept: 0,
  nextCommits: 0,
  nextCommitFailures: 0,
  refusedOrphans: 0,
  tempLeftovers: 0,
  stagingLeftovers: 0,
  unknown: 0,
  refused: 0,
  unexpected: 0,
  feedMismatches: 0,
};
const problems = [];
const problem = (s) => {
  if (problems.length < 200) problems.push(s);
};

// Check the catalog and the disk against the logs.  Returns the highest
// catalog version and the orphan manifests of every table.
function checkState(rows, logs, where) {
  const { attempts, byToken } = logs;
  const rowAt = (t, v) => rows.get(`${t}/${v}`);
  const res = { lost: 0, partial: 0, phantom: 0, bad: 0, acked: 0, ackedVersions: 0, unknown: 0, refused: 0 };

  for (const a of attempts.values()) {
    const present = a.entries.filter((e) => rowAt(e.table, e.version)?.token === e.token).length;
    if (a.outcome === "ack") {
      res.acked++;
      res.ackedVersions += a.entries.length;
      if (present !== a.entries.length) {
        res.lost++;
        problem(`${where}: LOST acknowledged ${a.kind} ${a.id}: ${present}/${a.entries.length} of ${JSON.stringify(a.entries.map((e) => `${e.table}@${e.version}`))} in the catalog`);
      }
    } else if (a.outcome === "fail") {
      res.refused++;
      if (present > 0) {
        res.phantom++;
        problem(`${where}: PHANTOM ${a.kind} ${a.id} was refused but ${present} of its versions are in the catalog`);
      }
    } else res.unknown++;
    if (a.entries.length > 1 && present > 0 && present < a.entries.length) {
      res.partial++;
      problem(`${where}: PARTIAL ${a.kind} ${a.id} (${a.outcome}): ${present}/${a.entries.length} present: ${JSON.stringify(a.entries.map((e) => `${e.table}@${e.version}:${rowAt(e.table, e.version)?.token === e.token}`))}`);
    }
  }

  // every catalog version: its final manifest with the staging content
  const latest = Object.fromEntries(TABLES.map((t) => [t.name, 0]));
  for (const r of rows.values()) {
    latest[r.table] = Math.max(latest[r.table], r.version);
    const want = finalFile(r.table, r.version);
    const got = byToken.get(r.token);
    let why = null;
    if (!got || got.e.table !== r.table || got.e.version !== r.version)
      why = `its token ${r.token} is no attempt's entry for this version`;
    else if (`/${lancePath(r.path)}` !== want) why = `manifest_path ${r.path}, expected ${lancePath(want)}`;
    else {
      const text = readOrNull(want);
      if (text === null) why = `final manifest ${want} is missing`;
      else if (text !== manifestContent(r.table, r.version, r.token))
        why = `final manifest ${want} holds ${JSON.stringify(text.slice(0, 90))}, not the staging content of token ${r.token}`;
      else if (r.size !== Buffer.byteLength(text)) why = `manifest_size ${r.size}, file has ${Buffer.byteLength(text)} bytes`;
    }
    if (why) {
      res.bad++;
      problem(`${where}: BAD MANIFEST ${r.table}@${r.version}: ${why}`);
    }
  }

  // the disk: final manifests without a row, temporary files, staging files
  const orphans = Object.fromEntries(TABLES.map((t) => [t.name, []]));
  const disk = { refusedOrphans: 0, temp: 0, staging: 0 };
  for (const t of TABLES) {
    const dir = path.join(t.dir, "_versions");
    for (const f of fs.readdirSync(dir)) {
      const v = versionOfFinal(f, t.scheme);
      if (v !== null) {
        if (rowAt(t.name, v)) continue;
        const token = tokenOfContent(readOrNull(path.join(dir, f)));
        const src = byToken.get(token);
        orphans[t.name].push({ version: v, token, outcome: src?.a.outcome ?? "?" });
        // killed between sending the error and rolling back: allowed
        if (src?.a.outcome === "fail") disk.refusedOrphans++;
      } else if (/\.tmp-/.test(f)) disk.temp++;
      else {
        const m = /^(.*\.manifest)-([0-9a-f-]{36})$/.exec(f);
        if (m && rows.get(`${t.name}/${byToken.get(m[2])?.e.version}`)?.token === m[2]) disk.staging++;
      }
    }
  }
  return { res, latest, orphans, disk };
}

// The next commit on every table: latest + 1, and on through the highest
// orphan manifest so that each is replaced by a committed version.  Rounds
// take turns: table by table with CreateTableVersion, all tables in one
// BatchCommitTables, all tables in one BatchCreateTableVersions.
let checkSeq = 0;
async function nextCommits(conn, latest, orphans, round) {
  const logFd = fs.openSync(path.join(cfg.logdir, "check.log"), "a");
  const log = (o) => fs.writeSync(logFd, `${JSON.stringify({ ...o, ms: Date.now() })}\n`);
  const all = [];
  for (const t of TABLES) {
    const top = Math.max(latest[t.name] + 1, ...orphans[t.name].map((o) => o.version));
    for (let v = latest[t.name] + 1; v <= top; v++) all.push({ table: t.name, version: v, token: randomUUID() });
  }
  const groups =
    round % 3 === 0 ? all.map((e) => ["single", [e]]) : [[round % 3 === 1 ? "batch_commit" : "batch_create", all]];
  for (const [kind, entries] of groups) {
    entries.forEach(writeStaging);
    const id = `check-${++checkSeq}`;
    log({ t: "attempt", id, kind, entries });
    try {
      const rows = await conn.query(attemptSql(kind, entries));
      log({ t: "ack", id });
      total.nextCommits += entries.length;
      const bad = checkAnswer(kind, entries, rows);
      if (bad) {
        total.nextCommitFailures++;
        problem(`round ${round}: NEXT COMMIT ${id} answered wrongly: ${bad}`);
      }
    } catch (err) {
      log({ t: outcomeUnknown(err) ? "unknown" : "fail", id, error: err.message });
      total.nextCommitFailures++;
      problem(`round ${round}: NEXT COMMIT ${kind} of ${entries.map((e) => `${e.table}@${e.version}`).join(",")} failed: ${err.code ?? ""} ${err.message}`);
    }
  }
  fs.closeSync(logFd);
}

async function verifyAfterRestart(round) {
  const conn = await connectRetry("crash-check");
  try {
    const logs = readLogs();
    const rows = await catalogRows(conn);
    const before = checkState(rows, logs, `restart ${round}`);
    await readFeed(conn);
    const feedBad = checkFeed(rows, `restart ${round}`);
    const nOrphans = Object.values(before.orphans).reduce((s, o) => s + o.length, 0);
    await nextCommits(conn, before.latest, before.orphans, round);

    // after the next commits: every orphan replaced, everything still right
    const logs2 = readLogs();
    const rows2 = await catalogRows(conn);
    const after = checkState(rows2, logs2, `after next commits ${round}`);
    let unswept = 0;
    for (const t of TABLES)
      for (const o of after.orphans[t.name]) {
        unswept++;
        problem(`round ${round}: UNSWEPT ${t.name}@${o.version}: final manifest without a catalog row after the next commit (from ${o.outcome} attempt)`);
      }
    // the orphans seen before are now versions with this round's content
    let replaced = 0;
    for (const t of TABLES)
      for (const o of before.orphans[t.name]) {
        const r = rows2.get(`${t.name}/${o.version}`);
        if (r && r.token !== o.token && readOrNull(finalFile(t.name, o.version)) === manifestContent(t.name, o.version, r.token))
          replaced++;
      }

    const r = after.res;
    total.acked = r.acked;
    total.ackedVersions = r.ackedVersions;
    total.unknown = r.unknown;
    total.refused = r.refused;
    total.lost = Math.max(total.lost, before.res.lost, r.lost);
    total.partial = Math.max(total.partial, before.res.partial, r.partial);
    total.phantom = Math.max(total.phantom, before.res.phantom, r.phantom);
    total.badManifests = Math.max(total.badManifests, before.res.bad, r.bad);
    total.orphansSeen += nOrphans;
    total.orphansReplaced += replaced;
    total.unswept += unswept;
    total.refusedOrphans += before.disk.refusedOrphans;
    total.tempLeftovers = before.disk.temp;
    total.stagingLeftovers = before.disk.staging;
    total.unexpected = logs2.unexpected.length;
    total.feedMismatches = Math.max(total.feedMismatches, feedBad);
    for (const u of logs2.unexpected.slice(-5)) problem(`UNEXPECTED ${u}`);
    return { nOrphans, replaced, lost: before.res.lost, partial: before.res.partial };
  } finally {
    conn.close();
  }
}

// Development aid (CRASH_INJECT): damage the state as a defect would, before
// the first check, to see that the checks catch it.  "lost" deletes the
// catalog row of an acknowledged single version, "partial" one row of an
// acknowledged batch, "corrupt" overwrites a committed final manifest,
// "orphan" puts a stray final manifest two versions above a table's latest.
async function inject(what) {
  const conn = await connectRetry("crash-inject");
  try {
    const { attempts } = readLogs();
    const acked = [...attempts.values()].filter((a) => a.outcome === "ack");
    const pick = (pred) => {
      const a = acked.filter(pred).pop();
      if (!a) throw new Error(`CRASH_INJECT=${what}: no suitable acknowledged attempt`);
      return a.entries[0];
    };
    const del = (e) =>
      conn.query(`DELETE FROM lance_catalog.version v USING lance_catalog.object o
                   WHERE o.id = v.table_id AND o.name = ${lit(e.table)} AND v.version = ${e.version}`);
    if (what === "lost") await del(pick((a) => a.kind === "single"));
    else if (what === "partial") await del(pick((a) => a.entries.length > 1));
    else if (what === "corrupt") {
      const e = pick(() => true);
      fs.writeFileSync(finalFile(e.table, e.version), "not the staging content\n");
    } else if (what === "orphan") {
      const rows = await catalogRows(conn);
      const top = Math.max(0, ...[...rows.values()].filter((r) => r.table === "t0").map((r) => r.version));
      fs.writeFileSync(finalFile("t0", top + 2), "stray manifest token=00000000-0000-0000-0000-000000000000\n");
    } else throw new Error(`CRASH_INJECT=${what}: unknown`);
    console.log(`crash: injected ${what}`);
  } finally {
    conn.close();
  }
}

async function setup() {
  const conn = await connectRetry("crash-setup");
  try {
    await conn.query(`SELECT lance_create_namespace(${lit(JSON.stringify({ id: [NS] }))})`);
    for (const t of TABLES) {
      fs.mkdirSync(path.join(t.dir, "_versions"), { recursive: true });
      // the server (postgres) writes and removes files in the table folders
      for (const d of [path.dirname(t.dir), t.dir, path.join(t.dir, "_versions")]) fs.chmodSync(d, 0o777);
      const resp = JSON.parse(
        (await conn.query(`SELECT lance_declare_table(${lit(JSON.stringify({ id: [NS, t.name], location: t.dir }))})`))[0][0],
      );
      if (resp.managed_versioning !== true) throw new Error(`table ${t.name} is not managed: ${JSON.stringify(resp)}`);
    }
  } finally {
    conn.close();
  }
}

async function orchestratorMain() {
  const t0 = Date.now();
  fs.mkdirSync(cfg.logdir, { recursive: true });
  await setup();

  const children = [];
  const ready = new Set();
  let stopping = false;
  let pausedWaiters = [];
  const paused = new Set();
  const stats = {};
  for (let i = 0; i < cfg.writers; i++) {
    const c = fork(fileURLToPath(import.meta.url), ["writer", String(i)], { stdio: "inherit" });
    c.on("message", (m) => {
      if (m.ready !== undefined) ready.add(m.ready);
      if (m.paused !== undefined) {
        paused.add(m.paused);
        stats[m.paused] = m.stats;
        pausedWaiters.forEach((w) => w());
      }
      if (m.stopped !== undefined) stats[m.stopped] = m.stats;
    });
    c.on("exit", (code) => {
      if (code !== 0 && !stopping) {
        console.error(`crash: writer ${i} exited with ${code}`);
        process.exit(1);
      }
    });
    children.push(c);
  }
  const pauseAll = async () => {
    paused.clear();
    children.forEach((c) => c.send("pause"));
    const deadline = Date.now() + 60000;
    while (paused.size < children.length) {
      if (Date.now() > deadline) throw new Error("writers do not pause");
      await new Promise((r) => {
        pausedWaiters.push(r);
        setTimeout(r, 200);
      });
      pausedWaiters = [];
    }
  };

  for (const t0 = Date.now(); ready.size < children.length; await sleep(20))
    if (Date.now() - t0 > 120000) throw new Error("writers do not start"); // a hang guard, with a margin for a loaded machine
  for (let round = 1; round <= cfg.kills; round++) {
    children.forEach((c) => c.send("resume"));
    const runMs = cfg.minRunMs + rand(cfg.maxRunMs - cfg.minRunMs);
    await sleep(runMs);
    const mode = Math.random() < 0.5 ? "postmaster" : "all";
    const waited = await killServer(mode);
    total.kills++;
    total.killModes[mode]++;
    await pauseAll();
    startServer();
    if (round === 1 && env.CRASH_INJECT) await inject(env.CRASH_INJECT);
    const v = await verifyAfterRestart(round);
    console.log(
      `crash: kill ${round}/${cfg.kills} (${mode}, after ${runMs} ms, server gone in ${waited} ms): ` +
        `acknowledged ${total.acked}, orphans ${v.nOrphans} (replaced ${v.replaced}), lost ${v.lost}, partial ${v.partial}` +
        (problems.length ? `, problems ${problems.length}` : ""),
    );
  }

  stopping = true;
  children.forEach((c) => c.send("stop"));
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.on("exit", r)))));

  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  const ok =
    total.kills >= cfg.kills &&
    total.lost === 0 &&
    total.partial === 0 &&
    total.phantom === 0 &&
    total.badManifests === 0 &&
    total.unswept === 0 &&
    total.nextCommitFailures === 0 &&
    total.unexpected === 0 &&
    total.feedMismatches === 0 &&
    total.acked > 0;
  for (const p of problems) console.log(`crash: problem: ${p}`);
  console.log(`crash: ${cfg.writers} writers, ${cfg.tables} tables, ${secs} s`);
  console.log(
    `crash: attempts acknowledged ${total.acked} (${total.ackedVersions} versions), refused LN014 ${total.refused}, unknown outcome ${total.unknown}`,
  );
  console.log(
    `crash: orphan manifests after restarts ${total.orphansSeen} (of refused attempts ${total.refusedOrphans}), replaced by the next commit ${total.orphansReplaced}, unswept ${total.unswept}; ` +
      `next commits ${total.nextCommits}, failed ${total.nextCommitFailures}`,
  );
  console.log(
    `crash: bad manifests ${total.badManifests}, phantom commits ${total.phantom}, change feed mismatches ${total.feedMismatches}, unexpected errors ${total.unexpected}; ` +
      `left on disk (allowed): temporary files ${total.tempLeftovers}, staging files of committed versions ${total.stagingLeftovers}`,
  );
  console.log(
    `crash: kills ${total.kills} (postmaster only ${total.killModes.postmaster}, all processes ${total.killModes.all}` +
      (zombieLockRemovals ? `; lock file of an unreaped postmaster removed ${zombieLockRemovals} times` : "") +
      ")",
  );
  console.log(`crash: acknowledged commits ${total.acked}`);
  console.log(`crash: lost ${total.lost}`);
  console.log(`crash: partial ${total.partial}`);
  console.log(`crash: ${ok ? "PASS" : "FAIL"}`);
  process.exit(ok ? 0 : 1);
}

if (process.argv[2] === "writer") {
  writerMain(Number(process.argv[3])).catch((e) => {
    console.error(`crash: writer ${process.argv[3]}:`, e);
    process.exit(1);
  });
} else {
  orchestratorMain().catch((e) => {
    console.error("crash: error:", e);
    process.exit(2);
  });
}
