// bench/node/append.mjs: benchmark (6), appends per second of the official
// LanceDB client on a local table whose versions the catalog manages (through
// the REST gateway: connectNamespace("rest", {uri, headers: {"x-api-key": key}})),
// with the API key in LANCE_API_KEY, against the same appends
// on a plain local LanceDB table with no catalog (lancedb.connect(dir)).
//
//   LANCE_API_KEY=lnk_... node append.mjs --uri http://127.0.0.1:2333 --dir /tmp/x --runs 5 --appends 100 --rows 10
//
// With --plain s3://bucket/prefix and --storage '<JSON storage options>' the
// plain tables go to that bucket instead (benchmark 7: the catalog's tables
// are then on S3 too, by its root).
//
// Each run makes a fresh table of each kind (the two in alternating order),
// makes a few warm-up appends, then times --appends appends of --rows rows.
// Prints one JSON line: {"catalog": [appends/s per run], "plain": [...],
// "catalog_ms": [latency of every timed append], "plain_ms": [...]}.
// With --only catalog or --only plain, only that kind runs (bench/run.sh
// counts each kind's syncs so).
// Run it as the server's OS user: the client writes data files in table
// folders whose manifests the catalog writes.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

// The client the end-to-end tests install (test/node/node_modules).
const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "..", "test", "node", "package.json"));
const lancedb = require("@lancedb/lancedb");

const { values: opt } = parseArgs({
  options: {
    uri: { type: "string" },
    dir: { type: "string" },
    plain: { type: "string" },
    storage: { type: "string", default: "{}" },
    runs: { type: "string", default: "5" },
    appends: { type: "string", default: "100" },
    rows: { type: "string", default: "10" },
    warmup: { type: "string", default: "3" },
    prefix: { type: "string", default: `bench6_${process.pid}` },
    only: { type: "string" },
  },
});
const key = process.env.LANCE_API_KEY ?? "";
opt.plain ??= opt.dir;
if (!opt.uri || !opt.plain || !key) {
  console.error("usage: LANCE_API_KEY=<key> append.mjs --uri <gateway url> --dir <folder for plain tables> [--runs N] [--appends N] [--rows N]");
  process.exit(2);
}
const runs = Number(opt.runs);
const appends = Number(opt.appends);
const rowsPerAppend = Number(opt.rows);
const warmup = Number(opt.warmup);

let nextId = 0;
function batch() {
  const rows = [];
  for (let i = 0; i < rowsPerAppend; i++, nextId++)
    rows.push({ id: nextId, x: nextId * 0.5, label: `row ${nextId}` });
  return rows;
}

/** Appends per second of `appends` appends to `table`, after the warm-up; each one's ms into `latencies`. */
async function timeAppends(table, latencies) {
  for (let i = 0; i < warmup; i++) await table.add(batch());
  const start = process.hrtime.bigint();
  for (let i = 0; i < appends; i++) {
    const t0 = process.hrtime.bigint();
    await table.add(batch());
    latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return appends / seconds;
}

async function catalogRun(run) {
  const db = await lancedb.connectNamespace("rest", { uri: opt.uri, headers: { "x-api-key": key } });
  const ns = [`${opt.prefix}_${run}`];
  await db.createNamespace(ns);
  const table = await db.createTable("t", batch(), ns);
  return timeAppends(table, result.catalog_ms);
}

async function plainRun(run) {
  let db;
  if (opt.plain.startsWith("s3://")) {
    db = await lancedb.connect(`${opt.plain}/${opt.prefix}_plain_${run}`, {
      storageOptions: JSON.parse(opt.storage),
    });
  } else {
    const dir = path.join(opt.plain, `plain_${run}`);
    fs.mkdirSync(dir, { recursive: true });
    db = await lancedb.connect(dir);
  }
  const table = await db.createTable("t", batch());
  return timeAppends(table, result.plain_ms);
}

const result = { catalog: [], plain: [], catalog_ms: [], plain_ms: [] };
for (let run = 0; run < runs; run++) {
  // alternate which goes first, so that drift on a noisy machine cancels out
  if (opt.only === "catalog") result.catalog.push(await catalogRun(run));
  else if (opt.only === "plain") result.plain.push(await plainRun(run));
  else if (run % 2 === 0) {
    result.catalog.push(await catalogRun(run));
    result.plain.push(await plainRun(run));
  } else {
    result.plain.push(await plainRun(run));
    result.catalog.push(await catalogRun(run));
  }
}
console.log(JSON.stringify(result));
