// Two tenants through one gateway, for test/serving/parts/37_fair_share.sh,
// each in a process of its own (so that one's work never delays the
// other's clock):
//
//   writers  tenant A's --writers clients at once, each sending batch
//            commits (BatchCreateTableVersions, --batch versions each) on a
//            table of its own (<ns>$w<n>); one told 429 tries again after
//            0.2 s, sooner than Retry-After asks, as a client that presses
//   reader   tenant B describing its table (<ns>$b) in a loop, one request
//            at a time
//
//   node fair_share.mjs writers --url http://127.0.0.1:2633 --key ... --ns fair_a --writers 30 --batch 1000 --seconds 20
//   node fair_share.mjs reader --url http://127.0.0.1:2633 --key ... --ns fair_b --seconds 20
//
// Plain Node (its fetch), nothing to install.  Bounded: it runs --seconds
// (at most 60), each request at most 60 s, and ends by itself.  Writes its
// summary, one JSON object, to standard output: the answers by status;
// for the writers how many of their 429 had code 21 and Retry-After, for
// the reader the times of its answers (p50, p99, max, in seconds, and the
// slowest five with when they started).
import { parseArgs } from "node:util";

const { values: a, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: "string" },
    key: { type: "string" },
    ns: { type: "string" },
    writers: { type: "string", default: "30" },
    batch: { type: "string", default: "1000" },
    seconds: { type: "string", default: "20" },
  },
});
const role = positionals[0];
const writers = Math.min(Number(a.writers), 100);
const batch = Math.min(Number(a.batch), 1000);
const seconds = Math.min(Number(a.seconds), 60);
if (!a.url.startsWith("http://127.0.0.1:")) throw new Error("loopback only");
if (role !== "writers" && role !== "reader") throw new Error("writers or reader");
const started = Date.now();
const end = started + seconds * 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const count = (s, k) => (s[k] = (s[k] || 0) + 1);

async function post(path, body) {
  const t0 = performance.now();
  try {
    const res = await fetch(a.url + path, {
      method: "POST",
      headers: { "x-api-key": a.key, "content-type": "application/json" },
      body,
      signal: AbortSignal.timeout(60000),
    });
    const text = await res.text();
    return { status: res.status, text, retryAfter: res.headers.get("retry-after"), secs: (performance.now() - t0) / 1000 };
  } catch (e) {
    return { status: 0, text: String(e), retryAfter: null, secs: (performance.now() - t0) / 1000 };
  }
}

const out = { statuses: {} };

async function writer(w) {
  // each batch takes the next --batch version numbers, whatever became of
  // the last (the catalog takes any number not taken yet)
  let next = 1;
  out.throttled_code21_retry_after = 0;
  while (Date.now() < end) {
    const entries = [];
    for (let i = 0; i < batch; i++, next++)
      entries.push({ id: [a.ns, `w${w}`], version: next, manifest_path: `fair/w${w}.lance/_versions/${next}.manifest` });
    const r = await post("/v1/table/version/batch-create", JSON.stringify({ entries }));
    count(out.statuses, r.status);
    if (r.status === 429) {
      if (r.text.startsWith('{"code":21,') && r.retryAfter) out.throttled_code21_retry_after++;
      await sleep(200);
    } else if (r.status !== 200 && !out.other) {
      out.other = `${r.status} ${r.text.slice(0, 300)}`;
    }
  }
}

async function reader() {
  const path = `/v1/table/${encodeURIComponent(`${a.ns}$b`)}/describe`;
  const times = [];
  while (Date.now() < end) {
    const at = (Date.now() - started) / 1000;
    const r = await post(path, "{}");
    count(out.statuses, r.status);
    times.push([r.secs, at]);
    if (r.status !== 200 && !out.other) out.other = `${r.status} ${r.text.slice(0, 300)}`;
    await sleep(20);
  }
  times.sort((x, y) => x[0] - y[0]);
  const q = (f) => (times.length ? Number(times[Math.min(times.length - 1, Math.ceil(f * times.length) - 1)][0].toFixed(3)) : null);
  Object.assign(out, {
    count: times.length,
    p50: q(0.5),
    p99: q(0.99),
    max: q(1),
    slowest: times.slice(-5).reverse().map(([s, t]) => [Number(s.toFixed(3)), Number(t.toFixed(2))]),
  });
}

if (role === "writers") await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
else await reader();
out.seconds = (Date.now() - started) / 1000;
console.log(JSON.stringify(out));
