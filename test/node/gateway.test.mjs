// The gateway refuses what a browser may send on a web page's behalf, before
// anything reaches the catalog: a request for a host it does not serve (DNS
// rebinding), one from a web page's origin, and a body of a type any page
// may post anywhere (text/plain, form data) or of no type.  Plain node:http,
// so that Host and Origin are sent as written.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { env, nsRoute, ok, post, removeNamespace, uniqueName } from "./lib.mjs";

/** One raw request with the administrator's key; answers status and parsed JSON body. */
function raw(method, route, { headers = {}, body } = {}) {
  const url = new URL(env.uri + route);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method, path: url.pathname, headers: { "x-api-key": env.apiKey, ...headers } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => {
          let json;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode, json, text });
        });
      },
    );
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

describe("gateway: requests a web page could send", { timeout: 60_000 }, () => {
  const ns = uniqueName("e2e_gw");
  const exists = async (name) =>
    (await raw("POST", nsRoute([ns, name], "exists"), { headers: { "content-type": "application/json" }, body: "{}" }))
      .status;

  before(async () => ok(await post(nsRoute([ns], "create"), {})));
  after(() => removeNamespace(ns));

  test("a foreign Host is 421, code 13, and changes nothing", async () => {
    const res = await raw("POST", nsRoute([ns, "rebound"], "create"), {
      headers: { host: "attacker.example:2333", "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(res.status, 421, res.text);
    assert.equal(res.json?.code, 13, res.text);
    assert.equal(await exists("rebound"), 404);
  });

  test("a web page's Origin is 403, code 15, and changes nothing", async () => {
    const res = await raw("POST", nsRoute([ns, "crossed"], "create"), {
      headers: { origin: "https://attacker.example", "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(res.status, 403, res.text);
    assert.equal(res.json?.code, 15, res.text);
    assert.equal(await exists("crossed"), 404);
  });

  test("a text/plain, form, other non-JSON or untyped body is 415, code 13, and changes nothing", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                        "application/xml", "application/octet-stream", "text/json", undefined]) {
      const headers = type ? { "content-type": type } : {};
      const res = await raw("POST", nsRoute([ns, "posted"], "create"), { headers, body: "{}" });
      assert.equal(res.status, 415, `${type}: ${res.text}`);
      assert.equal(res.json?.code, 13, res.text);
    }
    assert.equal(await exists("posted"), 404);
  });

  test("the served host names, with or without a port, and JSON bodies pass", async () => {
    for (const host of ["127.0.0.1", `localhost:${new URL(env.uri).port}`]) {
      const res = await raw("POST", nsRoute([ns], "describe"), {
        headers: { host, "content-type": "application/json; charset=utf-8" },
        body: "{}",
      });
      assert.equal(res.status, 200, `${host}: ${res.text}`);
    }
    const problem = await raw("POST", nsRoute([ns], "describe"), {
      headers: { "content-type": "application/merge-patch+json" },
      body: "{}",
    });
    assert.equal(problem.status, 200, `a +json type: ${problem.text}`);
    const bare = await raw("POST", nsRoute([ns], "describe"));
    assert.equal(bare.status, 200, bare.text);
  });

  test("a body over 8 MB is 413, code 13, as JSON, and changes nothing", async () => {
    const big = JSON.stringify({ properties: { k: "x".repeat(9 * 1024 * 1024) } });
    const res = await raw("POST", nsRoute([ns, "huge"], "create"), {
      headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(big)) },
      body: big,
    });
    assert.equal(res.status, 413, res.text.slice(0, 200));
    assert.equal(res.json?.code, 13, res.text.slice(0, 200));
    assert.equal(await exists("huge"), 404);
  });
});
