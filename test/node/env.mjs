// The test environment, from the variables the test runner sets.  A missing
// one stops every test file at import with a message that says what to set.
//
//   LANCE_URI        the gateway URL, e.g. http://127.0.0.1:2333
//   LANCE_API_KEY    an API key of an administrator (a key made with
//                    SELECT lance_create_api_key('lance_admin')), which the
//                    tests send unless a test says otherwise
//   LANCE_PSQL_ARGS  psql arguments that reach the catalog database as a
//                    superuser, split on spaces, e.g. "-h /tmp/dev -p 55432 -U postgres r"
//   LANCE_DATA_ROOT  the folder that is lance_namespace.root; it lies inside
//                    lance_namespace.local_roots, so the catalog manages versions
//   LANCE_GATEWAY_LOG (optional) the gateway's access log, which some tests read
import path from "node:path";

const descriptions = {
  LANCE_URI: "the gateway URL, e.g. http://127.0.0.1:2333",
  LANCE_API_KEY: "an administrator's API key: SELECT lance_create_api_key('lance_admin')",
  LANCE_PSQL_ARGS: 'psql arguments for the catalog database, e.g. "-h /tmp/dev -p 55432 -U postgres r"',
  LANCE_DATA_ROOT: "the folder that is lance_namespace.root, e.g. /tmp/lroot/data",
};

function required(name) {
  const value = process.env[name];
  if (value === undefined || value.trim() === "") {
    const missing = Object.keys(descriptions).filter((n) => !process.env[n]?.trim());
    throw new Error(
      `${name} is not set. These end-to-end tests need ${missing.join(", ")}:\n` +
        missing.map((n) => `  ${n}: ${descriptions[n]}`).join("\n"),
    );
  }
  return value.trim();
}

const uri = required("LANCE_URI").replace(/\/+$/, "");
const apiKey = required("LANCE_API_KEY");
const psqlArgs = required("LANCE_PSQL_ARGS").split(/\s+/).filter(Boolean);
const dataRoot = path.resolve(required("LANCE_DATA_ROOT"));

try {
  new URL(uri);
} catch {
  throw new Error(`LANCE_URI is not a URL: ${JSON.stringify(uri)}`);
}

const gatewayLog = process.env.LANCE_GATEWAY_LOG?.trim() || null;

export const env = Object.freeze({ uri, apiKey, psqlArgs, dataRoot, gatewayLog });
