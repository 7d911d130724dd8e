// An S3 server for the tests: s3rver (an S3 emulator) behind a proxy that
// checks every request's AWS Signature V4 with aws4, a maintained signer,
// before passing it on.  s3rver itself accepts any V4 request with a known
// access key id, so without the proxy a wrong signature would pass here and
// fail on AWS.
//
//   node --openssl-legacy-provider s3server.mjs <port> <control port> <data folder>
//
// (s3rver's continuation tokens, the pages of a listing of more than 1000
// keys, are DES-encrypted: OpenSSL 3 has DES in its legacy provider only.)
//
// S3 answers a PUT once the object is stored: a GET, HEAD or copy after it
// sees the whole object.  s3rver 3.7 answers while its write stream may
// still be writing (a copy made at once could copy an empty file, and a
// HEAD give size 0), so this server replaces its PUT with one that writes a
// temporary file, renames it into place when it is complete, and only then
// answers.
//
// Serves path-style S3 on 127.0.0.1:<port>, access key "S3RVER", secret
// "S3RVER", bucket "lake" made at start.  A request whose signature does not
// verify is answered 403 SignatureDoesNotMatch, and counted.  Unsigned
// requests are served below lake/anon/ only, as a bucket policy that lets
// anyone in there would (everything else: 403 AccessDenied, counted).
//
// The control port answers GET /mode/up, /mode/stall (requests are taken and
// never answered, as by a server that hangs), /mode/down (connections are
// cut at once, as by a server that stopped), /mode/down-after/<n> (n more
// requests are served, then down: a server that stops in the middle of a
// commit), /mode/error/<n>/<status> (the next n requests are answered with
// that status and an S3 error, SlowDown for 503, then up again),
// /mode/delay-copy/<ms> (the next server-side copy is held that long before
// it reaches the store, and then made whether or not its caller still
// waits: a copy the store finishes late), and GET /stats, a JSON object:
// {"total": n, "verified": n, "rejected": n, "anonymous": n, "requests":
// [..the last 200 "METHOD path"..], "delayedCopies": {"held": n, "done": n},
// "denied": n, "sts": [..each AssumeRole..]} ("done": the delayed copies the
// store has made; "denied": requests a key's policy refused).
//
// The token service: POST / with Action=AssumeRole, signed (service "sts")
// with the store's key, answers temporary credentials (an ASIA... key id, a
// secret and a session token) that expire after DurationSeconds, or after
// the seconds GET /sts/lifetime/<s> on the control port sets (0: the
// request's).  Each AssumeRole is recorded in stats.sts: {signedBy,
// service, roleArn, sessionName, durationSeconds, externalId, policy}.  A
// temporary key may do what its session policy allows and nothing else, as
// AWS evaluates one (an explicit Deny wins, then an Allow must match the
// action, the resource with its wildcards and ${*}, ${?}, ${$} escapes, and
// its StringLike/StringEquals conditions, e.g. on s3:prefix of a listing);
// its requests must carry its session token, and after its expiry it is
// refused (400 ExpiredToken).  POST /keys on the control port with
// {"id", "secret", "policy"} adds a key limited the same way by `policy`
// (the keys a "keys"-mode setting hands out).  Requests of such keys reach
// s3rver unsigned, as the anonymous ones do.  The store's own key S3RVER may
// do anything.  /mode/error/<n>/<status>/<code> injects errors with that
// code (Throttling, AccessDenied, ...).
import crypto from "node:crypto";
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import aws4 from "aws4";
import S3rver from "s3rver";
import FilesystemStore from "s3rver/lib/stores/filesystem.js";

/* s3rver's PUT, answered only once the object is whole and in place (see above). */
FilesystemStore.prototype.putObject = async function putObject(object) {
  const objectPath = this.getResourcePath(object.bucket, object.key, "object");
  const temp = `${objectPath}.${crypto.randomBytes(8).toString("hex")}.partial`;
  const md5 = crypto.createHash("md5");
  let size = 0;
  await fs.promises.mkdir(path.dirname(objectPath), { recursive: true });
  try {
    if (Buffer.isBuffer(object.content)) {
      await fs.promises.writeFile(temp, object.content);
      md5.update(object.content);
      size = object.content.length;
    } else {
      const count = new Transform({
        transform(chunk, encoding, callback) {
          md5.update(chunk, encoding);
          size += chunk.length;
          callback(null, chunk);
        },
      });
      await pipeline(object.content, count, fs.createWriteStream(temp));
    }
    await fs.promises.rename(temp, objectPath);
  } catch (err) {
    await fs.promises.rm(temp, { force: true });
    throw err;
  }
  const digest = md5.digest("hex");
  await this.putMetadata(object.bucket, object.key, object.metadata, digest);
  return { size, md5: digest };
};

export const ACCESS_KEY = "S3RVER";
export const SECRET_KEY = "S3RVER";
export const REGION = "us-east-1";

/**
 * Check the Signature V4 of a request: recompute it with aws4 from exactly
 * the headers the request says it signed, and compare.  Returns null when it
 * verifies, else why not.
 */
export function verifySignature({ method, url, headers, body }, secrets, expectedService = "s3") {
  const auth = headers["authorization"];
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
    auth ?? "",
  );
  if (!m) return `not a Signature V4 Authorization header: ${auth}`;
  const [, keyId, , region, service, signedList, signature] = m;
  const secret = secrets[keyId];
  if (secret === undefined) return `unknown access key id ${keyId}`;
  // the credential scope must be the store's: a signer that names another region or service
  // would pass a check that takes them from the request, and fail on AWS
  if (region !== REGION || service !== expectedService)
    return `credential scope ${region}/${service} is not ${REGION}/${expectedService}`;
  const signed = signedList.split(";");
  for (const required of ["host", "x-amz-date", "x-amz-content-sha256"])
    if (!signed.includes(required)) return `header ${required} is not signed`;
  const payload = headers["x-amz-content-sha256"];
  const actual = crypto.createHash("sha256").update(body).digest("hex");
  if (payload !== "UNSIGNED-PAYLOAD" && payload !== actual)
    return `x-amz-content-sha256 ${payload} is not the body's SHA-256 ${actual}`;
  if (headers["x-amz-security-token"] !== undefined && !signed.includes("x-amz-security-token"))
    return "x-amz-security-token is sent but not signed";
  const only = {};
  for (const name of signed) {
    if (headers[name] === undefined) return `signed header ${name} is missing`;
    only[name] = headers[name];
  }
  const signer = new aws4.RequestSigner(
    {
      method,
      host: headers.host,
      path: url,
      headers: only,
      service,
      region,
      doNotModifyHeaders: true,
      // aws4 leaves some headers (range, user-agent, ...) out unless told: sign what the request signed
      extraHeadersToInclude: Object.fromEntries(signed.map((h) => [h, true])),
    },
    { accessKeyId: keyId, secretAccessKey: secret },
  );
  signer.datetime = headers["x-amz-date"];
  const expected = signer.signature();
  if (signer.signedHeaders() !== signedList)
    return `signed headers ${signedList} are not ${signer.signedHeaders()}`;
  if (expected !== signature)
    return `signature ${signature} is not ${expected}; canonical request:\n${signer.canonicalString()}`;
  return null;
}

/** An IAM pattern (wildcards * and ?, escapes ${*} ${?} ${$}) as a RegExp. */
function iamPattern(pattern, ignoreCase) {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const esc = /^\$\{([*?$])\}/.exec(pattern.slice(i));
    if (esc) {
      re += "\\" + esc[1];
      i += 3;
    } else if (pattern[i] === "*") re += ".*";
    else if (pattern[i] === "?") re += ".";
    else re += pattern[i].replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  }
  return new RegExp(`^${re}$`, ignoreCase ? "i" : "");
}

/** Whether `policy` (an IAM policy document) lets `action` on `resource`, with condition keys `context`. */
export function policyAllows(policy, action, resource, context = {}) {
  let allowed = false;
  for (const st of [].concat(policy.Statement ?? [])) {
    if (![].concat(st.Action ?? []).some((a) => iamPattern(a, true).test(action))) continue;
    if (![].concat(st.Resource ?? []).some((r) => iamPattern(r, false).test(resource))) continue;
    let holds = true;
    for (const [op, tests] of Object.entries(st.Condition ?? {}))
      for (const [key, values] of Object.entries(tests)) {
        const v = context[key];
        const match = (p) => (op === "StringLike" ? iamPattern(p, false).test(v) : p === v);
        if (v === undefined || !(op === "StringLike" || op === "StringEquals") || ![].concat(values).some(match))
          holds = false;
      }
    if (!holds) continue;
    if (st.Effect === "Deny") return false;
    if (st.Effect === "Allow") allowed = true;
  }
  return allowed;
}

/** What an S3 request asks: [{action, resource, context}], as IAM authorizes it. */
export function requestActions(method, rawUrl, headers, body) {
  const url = new URL(rawUrl, "http://x");
  const parts = url.pathname.split("/").slice(1);
  const bucket = decodeURIComponent(parts[0] ?? "");
  const key = parts.slice(1).map(decodeURIComponent).join("/");
  const q = url.searchParams;
  const arn = (k) => `arn:aws:s3:::${bucket}${k === undefined ? "" : `/${k}`}`;
  if (key === "") {
    if (method === "POST" && q.has("delete")) {
      const keys = [...body.toString().matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) =>
        m[1].replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, "&"),
      );
      return keys.map((k) => ({ action: "s3:DeleteObject", resource: arn(k) }));
    }
    if (q.has("uploads")) return [{ action: "s3:ListBucketMultipartUploads", resource: arn() }];
    if (q.has("location")) return [{ action: "s3:GetBucketLocation", resource: arn() }];
    return [{ action: "s3:ListBucket", resource: arn(), context: { "s3:prefix": q.get("prefix") ?? "" } }];
  }
  if (method === "GET" || method === "HEAD")
    return [{ action: q.has("uploadId") ? "s3:ListMultipartUploadParts" : "s3:GetObject", resource: arn(key) }];
  if (method === "DELETE")
    return [{ action: q.has("uploadId") ? "s3:AbortMultipartUpload" : "s3:DeleteObject", resource: arn(key) }];
  const asked = [{ action: "s3:PutObject", resource: arn(key) }];
  const source = headers["x-amz-copy-source"];
  if (method === "PUT" && source !== undefined) {
    const from = decodeURIComponent(source.split("?")[0]).replace(/^\//, "");
    asked.push({ action: "s3:GetObject", resource: `arn:aws:s3:::${from}` });
  }
  return asked;
}

async function main() {
  try {
    crypto.createCipheriv("des", Buffer.alloc(8), Buffer.alloc(8));
  } catch {
    console.error("s3server: run node with --openssl-legacy-provider (s3rver pages listings with DES)");
    process.exit(2);
  }
  const [port, controlPort, dataDir] = process.argv.slice(2);
  if (!port || !controlPort || !dataDir) {
    console.error("usage: node s3server.mjs <port> <control port> <data folder>");
    process.exit(2);
  }
  const backend = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: dataDir,
    configureBuckets: [{ name: "lake" }],
  });
  const { port: backendPort } = await backend.run();

  let mode = "up";
  let servedBeforeDown = Infinity;
  let failNext = 0;
  let failStatus = 503;
  let delayNextCopy = 0;
  let failCode = null;
  let stsLifetime = 0;
  const stats = {
    total: 0,
    verified: 0,
    rejected: 0,
    anonymous: 0,
    denied: 0,
    requests: [],
    delayedCopies: { held: 0, done: 0 },
    sts: [],
  };
  // keys besides the store's own: id -> {secret, policy, token (temporary), expires (ms)}
  const keys = new Map();
  const xmlError = (res, status, code, message) => {
    res.writeHead(status, { "content-type": "application/xml" });
    res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
  };
  const random = (n) => crypto.randomBytes(n).toString("base64");

  // AssumeRole of the token service, signed with the store's own key
  function assumeRole(req, res, body) {
    const why = verifySignature({ method: req.method, url: req.url, headers: req.headers, body }, { [ACCESS_KEY]: SECRET_KEY }, "sts");
    if (why !== null) {
      stats.rejected++;
      console.error(`s3server: AssumeRole: ${why}`);
      return xmlError(res, 403, "SignatureDoesNotMatch", "The request signature we calculated does not match");
    }
    stats.verified++;
    const form = new URLSearchParams(body.toString());
    const duration = Number(form.get("DurationSeconds") ?? 3600);
    let policy;
    try {
      policy = JSON.parse(form.get("Policy"));
    } catch {
      return xmlError(res, 400, "MalformedPolicyDocument", "the policy is not JSON");
    }
    stats.sts.push({
      signedBy: /Credential=([^/]+)\//.exec(req.headers.authorization)[1],
      service: /Credential=[^/]+\/\d{8}\/[^/]+\/([^/]+)\//.exec(req.headers.authorization)[1],
      roleArn: form.get("RoleArn"),
      sessionName: form.get("RoleSessionName"),
      durationSeconds: duration,
      externalId: form.get("ExternalId"),
      policy,
    });
    const id = `ASIA${crypto.randomBytes(8).toString("hex").toUpperCase()}`;
    const cred = { secret: random(30), token: random(60), policy, expires: Date.now() + 1000 * (stsLifetime || duration) };
    keys.set(id, cred);
    res.writeHead(200, { "content-type": "text/xml" });
    res.end(
      `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials>` +
        `<AccessKeyId>${id}</AccessKeyId><SecretAccessKey>${cred.secret}</SecretAccessKey>` +
        `<SessionToken>${cred.token}</SessionToken><Expiration>${new Date(cred.expires).toISOString()}</Expiration>` +
        `</Credentials><AssumedRoleUser><Arn>${form.get("RoleArn")}/${form.get("RoleSessionName")}</Arn></AssumedRoleUser>` +
        `</AssumeRoleResult><ResponseMetadata><RequestId>${crypto.randomUUID()}</RequestId></ResponseMetadata></AssumeRoleResponse>`,
    );
  }
  const stalled = new Set();

  const proxy = http.createServer((req, res) => {
    if (mode === "down") return req.socket.destroy();
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      if (mode === "up" && servedBeforeDown-- <= 0) mode = "down";
      if (mode === "down") return req.socket.destroy();
      if (mode === "stall") return stalled.add(req.socket);
      const body = Buffer.concat(chunks);
      stats.total++;
      stats.requests.push(`${req.method} ${req.url}`);
      if (stats.requests.length > 200) stats.requests.shift();
      if (failNext > 0) {
        failNext--;
        const code = failCode ?? (failStatus === 503 ? "SlowDown" : failStatus >= 500 ? "InternalError" : "InvalidRequest");
        res.writeHead(failStatus, { "content-type": "application/xml" });
        return res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>injected</Message></Error>`);
      }
      if (req.method === "POST" && req.url === "/" && /(^|&)Action=AssumeRole(&|$)/.test(body.toString()))
        return assumeRole(req, res, body);
      if (req.headers.authorization === undefined) {
        if (anonymousAllowed(req, body)) {
          stats.anonymous++;
          return forward(req, res, body);
        }
        stats.rejected++;
        res.writeHead(403, { "content-type": "application/xml" });
        return res.end(
          `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`,
        );
      }
      const secrets = { [ACCESS_KEY]: SECRET_KEY };
      for (const [id, k] of keys) secrets[id] = k.secret;
      const why = verifySignature({ method: req.method, url: req.url, headers: req.headers, body }, secrets);
      if (why !== null) {
        stats.rejected++;
        console.error(`s3server: ${req.method} ${req.url}: ${why}`);
        res.writeHead(403, { "content-type": "application/xml" });
        return res.end(
          `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code>` +
            `<Message>The request signature we calculated does not match the signature you provided.</Message></Error>`,
        );
      }
      stats.verified++;
      const keyId = /Credential=([^/]+)\//.exec(req.headers.authorization)[1];
      const limited = keys.get(keyId);
      if (limited !== undefined) {
        if (limited.token !== undefined && req.headers["x-amz-security-token"] !== limited.token) {
          stats.denied++;
          return xmlError(res, 403, "InvalidToken", "The provided token is malformed or otherwise invalid.");
        }
        if (limited.expires !== undefined && Date.now() >= limited.expires) {
          stats.denied++;
          return xmlError(res, 400, "ExpiredToken", "The provided token has expired.");
        }
        const asked = requestActions(req.method, req.url, req.headers, body);
        const refused = asked.find((a) => !policyAllows(limited.policy, a.action, a.resource, a.context));
        if (refused !== undefined) {
          stats.denied++;
          return xmlError(res, 403, "AccessDenied", `Access Denied (${refused.action} on ${refused.resource})`);
        }
        // s3rver knows only its own key: what the policy allowed goes on unsigned
        const headers = { ...req.headers };
        delete headers.authorization;
        delete headers["x-amz-security-token"];
        return forward({ method: req.method, url: req.url, headers }, res, body);
      }
      if (delayNextCopy > 0 && req.method === "PUT" && req.headers["x-amz-copy-source"] !== undefined) {
        const ms = delayNextCopy;
        delayNextCopy = 0;
        stats.delayedCopies.held++;
        return setTimeout(() => forward(req, res, body, () => stats.delayedCopies.done++), ms);
      }
      forward(req, res, body);
    });
  });

  // `landed` runs once the store has answered (the object is made, or not), even when the
  // caller has gone meanwhile
  function forward(req, res, body, landed = () => {}) {
    res.on("error", () => {});
    const out = http.request(
      { host: "127.0.0.1", port: backendPort, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        landed();
        if (res.destroyed) return up.resume();
        res.writeHead(up.statusCode, up.headers);
        up.pipe(res);
      },
    );
    out.on("error", () => {
      landed();
      res.destroy();
    });
    out.end(body);
  }

  // an object, a listing or a batch delete wholly below lake/anon/
  function anonymousAllowed(req, body) {
    const url = new URL(req.url, "http://x");
    if (url.pathname.startsWith("/lake/anon/")) return true;
    if (url.pathname !== "/lake" && url.pathname !== "/lake/") return false;
    if (url.searchParams.has("delete")) {
      const keys = [...body.toString().matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]);
      return keys.length > 0 && keys.every((k) => k.startsWith("anon/"));
    }
    return (url.searchParams.get("prefix") ?? "").startsWith("anon/");
  }
  proxy.keepAliveTimeout = 5000; // as Node and many S3 servers keep connections
  await new Promise((ok) => proxy.listen(Number(port), "127.0.0.1", ok));

  const control = http.createServer((req, res) => {
    const e = /^\/mode\/error\/(\d+)\/(\d{3})(?:\/(\w+))?$/.exec(req.url);
    if (e) {
      failNext = Number(e[1]);
      failStatus = Number(e[2]);
      failCode = e[3] ?? null;
      return res.end(`error ${failNext} ${failStatus}\n`);
    }
    const l = /^\/sts\/lifetime\/(\d+)$/.exec(req.url);
    if (l) {
      stsLifetime = Number(l[1]);
      return res.end(`lifetime ${stsLifetime}\n`);
    }
    if (req.method === "POST" && req.url === "/keys") {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const { id, secret, policy } = JSON.parse(Buffer.concat(chunks).toString());
        keys.set(id, { secret, policy });
        res.end(`key ${id}\n`);
      });
      return;
    }
    const d = /^\/mode\/delay-copy\/(\d+)$/.exec(req.url);
    if (d) {
      delayNextCopy = Number(d[1]);
      return res.end(`delay-copy ${delayNextCopy}\n`);
    }
    const m = /^\/mode\/(up|stall|down|down-after\/(\d+))$/.exec(req.url);
    if (m) {
      mode = m[2] === undefined ? m[1] : "up";
      servedBeforeDown = m[2] === undefined ? Infinity : Number(m[2]);
      if (mode !== "stall") {
        for (const s of stalled) s.destroy();
        stalled.clear();
      }
      res.end(mode + "\n");
    } else if (req.url === "/stats") {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(stats));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise((ok) => control.listen(Number(controlPort), "127.0.0.1", ok));
  console.log(`s3server: S3 on 127.0.0.1:${port}, control on 127.0.0.1:${controlPort}`);

  const stop = async () => {
    for (const s of stalled) s.destroy();
    proxy.close();
    control.close();
    await backend.close();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

if (process.argv[1] && import.meta.url === `file://${process.argv[1]}`) await main();
