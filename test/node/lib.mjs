// Shared helpers of the end-to-end tests: client connections, raw HTTP
// requests to the gateway, catalog queries through psql, and the manifest
// files of a table on local storage.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { connectNamespace } from "@lancedb/lancedb";
import { env } from "./env.mjs";

export { env };

/** A name no other test run uses: prefix, time and random hex, [a-z0-9_] only. */
export function uniqueName(prefix) {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
}

/** The database role the gateway connects as (scripts/common.sh). */

/**
 * A new connection of the official client to the gateway, sending API key
 * `key` (the administrator's by default; null: none) as header x-api-key.
 */
export function connect(key = env.apiKey) {
  return connectNamespace("rest", { uri: env.uri, headers: key ? { "x-api-key": key } : {} });
}

/** The {id} path segment of a list-form id: joined by "$", percent-encoded; the root is "$". */
export function pathId(id) {
  return id.length === 0 ? "%24" : encodeURIComponent(id.join("$"));
}

export const nsRoute = (id, op) => `/v1/namespace/${pathId(id)}/${op}`;
export const tableRoute = (id, op) => `/v1/table/${pathId(id)}/${op}`;

/**
 * One HTTP request to the gateway.  `body`: undefined sends none, a string is
 * sent as is, anything else as JSON.  `query`: an object of query parameters.
 * `key`: the API key sent as x-api-key, the administrator's by default; null
 * sends none (`headers` may then carry another, e.g. Authorization).
 */
export async function http(method, route, { body, query, headers = {}, key = env.apiKey } = {}) {
  const url = new URL(env.uri + route);
  for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, String(v));
  const init = {
    method,
    headers: { ...(key ? { "x-api-key": key } : {}), ...headers },
    signal: AbortSignal.timeout(30_000),
  };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers["content-type"] ??= "application/json";
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let json;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export const post = (route, body, options = {}) => http("POST", route, { ...options, body });
export const get = (route, query, options = {}) => http("GET", route, { ...options, query });

/** Assert a successful JSON answer and return its body. */
export function ok(res, status = 200) {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.text}`);
  assert.ok(res.json !== undefined && typeof res.json === "object", `not a JSON object: ${res.text}`);
  return res.json;
}

/** Assert an error answer: HTTP status and the ErrorResponse code the client dispatches on. */
export function fails(res, status, code) {
  assert.equal(res.status, status, `expected ${status} (code ${code}), got ${res.status}: ${res.text}`);
  assert.equal(res.headers.get("content-type")?.split(";")[0], "application/json", res.text);
  assert.equal(typeof res.json, "object", `error body is not JSON: ${res.text}`);
  assert.equal(res.json.code, code, `expected code ${code}: ${res.text}`);
  return res.json;
}

/**
 * A role of the catalog database for a test: NOLOGIN, with an API key for it
 * (the gateway's role needs no membership in it: the key is the authority).
 * `drop()` revokes the key and drops the role; the role's grants go with the
 * namespaces they are on.
 */
export function makeRole(prefix) {
  const name = uniqueName(prefix);
  psql(`CREATE ROLE :"role" NOLOGIN;`, { role: name });
  const key = psql(`SELECT lance_create_api_key(:'role')`, { role: name });
  assert.match(key, /^lnk_[0-9a-f]{12}_[0-9a-f]{64}$/);
  return {
    name,
    key,
    keyId: key.slice(0, 16),
    drop() {
      psql(`SELECT lance_revoke_api_key(:'id'); DROP ROLE IF EXISTS :"role";`, { id: key.slice(0, 16), role: name });
    },
  };
}

/**
 * One append of the official client with API key `key`, in a process of its
 * own (client-add.mjs), stopped after `seconds` if it has not ended: the
 * client retries a refused commit for minutes.  Answers what it printed
 * ("committed <version>" or "failed <message>") and whether it was stopped.
 */
export function clientAdd(ns, name, from, n, key, { seconds = 12 } = {}) {
  const script = fileURLToPath(new URL("./client-add.mjs", import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, JSON.stringify(ns), name, String(from), String(n)], {
      env: { ...process.env, LANCE_CLIENT_KEY: key ?? "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), seconds * 1000);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ out: out.trim(), stopped: signal === "SIGKILL" });
    });
  });
}

/**
 * The gateway's access log entries (a JSON object a line: time, request_id, method, path,
 * operation, status, code, duration, key_id), when LANCE_GATEWAY_LOG names it; else null.
 */
export function gatewayLogEntries() {
  if (!env.gatewayLog) return null;
  return fs
    .readFileSync(env.gatewayLog, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

/** Grant (or with `revoke`, revoke) a privilege on a namespace or table to a role, as superuser. */
export function grant(id, role, privilege, { revoke = false } = {}) {
  const answer = psql(`SELECT ${revoke ? "lance_revoke" : "lance_grant"}(:'req'::jsonb)`, {
    req: JSON.stringify({ id, role, privilege }),
  });
  return JSON.parse(answer);
}

/** Run SQL as superuser with psql; `vars` become psql variables (:'name' in the SQL). */
export function psql(sql, vars = {}) {
  const args = ["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1"];
  for (const [k, v] of Object.entries(vars)) args.push("-v", `${k}=${v}`);
  return execFileSync("psql", [...args, ...env.psqlArgs], {
    input: sql,
    encoding: "utf8",
    timeout: 30_000,
  }).trim();
}

/** The catalog's version rows (main branch) of the table at `location`, ascending. */
export function catalogVersions(location) {
  const out = psql(
    `SELECT coalesce(json_agg(json_build_object('version', v.version,
                                                'manifest_path', v.manifest_path,
                                                'manifest_size', v.manifest_size)
                              ORDER BY v.version), '[]')
       FROM lance_catalog.version v
       JOIN lance_catalog.object o ON o.id = v.table_id
      WHERE o.kind = 'table' AND o.location = :'loc' AND v.branch = ''`,
    { loc: location },
  );
  return JSON.parse(out);
}

/** The local folder of a table location (a path or a file:// URI). */
export function localPath(location) {
  const p = location.startsWith("file://") ? fileURLToPath(location) : location;
  assert.ok(path.isAbsolute(p), `not a local location: ${location}`);
  return p;
}

export const versionsDir = (location) => path.join(localPath(location), "_versions");

/** The object-store path Lance sends for a local file: the absolute path without its leading "/". */
export const storePath = (file) => path.resolve(file).replace(/^\/+/, "");

const U64_MAX = 2n ** 64n - 1n;

/** The final manifest file name of a version: V2 (the client's default) or V1. */
export function manifestName(version, scheme = "V2") {
  return scheme === "V1"
    ? `${version}.manifest`
    : `${(U64_MAX - BigInt(version)).toString().padStart(20, "0")}.manifest`;
}

/**
 * The manifests in a table's _versions folder: `finals` maps each version to
 * its final manifest file; `staging` lists staging and temporary manifests.
 */
export function manifestFiles(location) {
  const dir = versionsDir(location);
  const finals = new Map();
  const staging = [];
  for (const name of fs.readdirSync(dir)) {
    const m = /^(\d+)\.manifest$/.exec(name);
    if (m) {
      const version = Number(m[1].length === 20 ? U64_MAX - BigInt(m[1]) : BigInt(m[1]));
      const file = path.join(dir, name);
      finals.set(version, { name, file, size: fs.statSync(file).size });
    } else if (name.includes(".manifest-") || name.includes(".tmp-")) {
      staging.push(name);
    }
  }
  return { finals, staging };
}

/** Assert that the catalog's versions of a table are exactly its final manifests on disk. */
export function assertCatalogMatchesDisk(location, expectedVersions) {
  const rows = catalogVersions(location);
  const { finals, staging } = manifestFiles(location);
  assert.deepEqual(
    rows.map((r) => r.version),
    expectedVersions,
    "catalog versions",
  );
  assert.deepEqual(
    [...finals.keys()].sort((a, b) => a - b),
    expectedVersions,
    `manifest files in ${versionsDir(location)}`,
  );
  assert.deepEqual(staging, [], "leftover staging manifests");
  for (const row of rows) {
    const file = finals.get(row.version);
    assert.equal(path.resolve("/", row.manifest_path), file.file, `manifest_path of v${row.version}`);
    assert.equal(row.manifest_size, file.size, `manifest_size of v${row.version}`);
  }
  return rows;
}

/** Write a staging manifest for `version` the way Lance does; returns its file and store path. */
export function writeStagingManifest(location, version, content) {
  const file = path.join(versionsDir(location), `${manifestName(version)}-${randomUUID()}`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
  return { file, manifestPath: storePath(file) };
}

/** DescribeTable through HTTP. */
export async function describeTable(id, query) {
  return ok(await http("POST", tableRoute(id, "describe"), { body: { id }, query }));
}

/** Follow page tokens of a GET list route; returns the items and the pages seen. */
export async function listAllPages(route, key, { limit, query = {} } = {}) {
  const items = [];
  const tokens = new Set();
  const pages = [];
  let token;
  for (let n = 0; n < 10_000; n++) {
    const q = { ...query };
    if (limit !== undefined) q.limit = limit;
    if (token !== undefined) q.page_token = token;
    const page = ok(await http(route.method ?? "GET", route.path ?? route, { query: q }));
    assert.ok(Array.isArray(page[key]), `no ${key} array: ${JSON.stringify(page)}`);
    if (limit !== undefined)
      assert.ok(page[key].length <= limit, `page of ${page[key].length} > limit ${limit}`);
    pages.push(page);
    items.push(...page[key]);
    token = page.page_token;
    if (token === undefined || token === null || token === "") return { items, pages };
    assert.ok(!tokens.has(token), `page token ${JSON.stringify(token)} returned twice`);
    tokens.add(token);
  }
  assert.fail("pagination did not end");
}

/**
 * Remove a test's namespace tree: drop it with Cascade (Skip if it is gone)
 * and delete the table data the tests wrote below LANCE_DATA_ROOT/<name>.
 */
export async function removeNamespace(name) {
  try {
    await http("POST", nsRoute([name], "drop"), {
      body: { id: [name], behavior: "Cascade", mode: "Skip" },
    });
  } finally {
    if (/^[A-Za-z0-9_-]+$/.test(name))
      fs.rmSync(path.join(env.dataRoot, name), { recursive: true, force: true });
  }
}

export const range = (n, from = 0) => Array.from({ length: n }, (_, i) => from + i);

// n rows {id, name: "row-<id>"} with ids from `from` on: the tests' table contents.
export const itemRows = (from, n) => range(n, from).map((i) => ({ id: i, name: `row-${i}` }));
