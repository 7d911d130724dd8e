// Concurrency: many clients, each with its own connection, writing at once.
// Lance commits version N+1 through version/create; a loser gets 409 code 14
// and retries on the new latest version.  The timeouts only guard against a hang.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertCatalogMatchesDisk,
  connect,
  describeTable,
  listAllPages,
  range,
  removeNamespace,
  tableRoute,
  uniqueName,
} from "./lib.mjs";

const WRITERS = 8;
const APPENDS = 3; // per writer
const ROWS = 2; // per append
const INITIAL = 4;

/** Settle all promises; fail with every rejection's message if any rejected. */
async function allSucceed(promises, what) {
  const results = await Promise.allSettled(promises);
  const failures = results
    .map((r, i) => (r.status === "rejected" ? `${what} ${i}: ${r.reason?.message ?? r.reason}` : null))
    .filter(Boolean);
  assert.deepEqual(failures, [], `${failures.length} of ${results.length} failed`);
  return results.map((r) => r.value);
}

describe("concurrency", { timeout: 240_000 }, () => {
  const ns = uniqueName("e2e_conc");

  before(async () => {
    await (await connect()).createNamespace([ns]);
  });
  after(() => removeNamespace(ns));

  test(`${WRITERS} clients append to one table at once: no failure, no lost row, no version gap`, {
    timeout: 180_000,
  }, async () => {
    const db = await connect();
    await db.createTable(
      "shared",
      range(INITIAL).map((i) => ({ writer: -1, seq: i })),
      [ns],
    );
    const { location } = await describeTable([ns, "shared"]);

    // every writer opens its own connection and table before anyone writes
    const tables = await Promise.all(
      range(WRITERS).map(async () => (await connect()).openTable("shared", [ns])),
    );
    const started = Date.now();
    await allSucceed(
      tables.map(async (table, writer) => {
        for (let a = 0; a < APPENDS; a++)
          await table.add(range(ROWS).map((r) => ({ writer, seq: a * ROWS + r })));
      }),
      "writer",
    );
    const elapsed = Date.now() - started;

    const commits = WRITERS * APPENDS;
    const latest = await (await connect()).openTable("shared", [ns]);
    assert.equal(await latest.countRows(), INITIAL + commits * ROWS);
    assert.equal(await latest.version(), 1 + commits);

    // each writer's rows are there exactly once
    const seen = (await latest.query().toArray()).map((r) => `${r.writer}/${r.seq}`).sort();
    const expected = [
      ...range(INITIAL).map((i) => `-1/${i}`),
      ...range(WRITERS).flatMap((w) => range(APPENDS * ROWS).map((s) => `${w}/${s}`)),
    ].sort();
    assert.deepEqual(seen, expected);

    // versions 1..N without a gap, in the catalog and on disk alike
    assertCatalogMatchesDisk(location, range(1 + commits, 1));
    const { items } = await listAllPages(
      { method: "POST", path: tableRoute([ns, "shared"], "version/list") },
      "versions",
      { limit: 7 },
    );
    assert.deepEqual(
      items.map((v) => v.version).sort((a, b) => a - b),
      range(1 + commits, 1),
    );
    // no bound on the time: a loaded machine may take any time, and the
    // test's own timeout guards against a hang; what counts is the work above
    // (every commit made once, no gap)
    console.log(`# ${commits} appends by ${WRITERS} writers in ${elapsed} ms`);
  });

  // The catalog lets exactly one DeclareTable through; the losers get 409
  // code 5.  The client then describes the table, and a loser that finds it
  // declared without data yet writes into it as well (the spec lets data
  // operations on a declared table create it), so more than one createTable
  // may succeed, each with one commit.  What must hold: every success is one
  // version, every failure is "already exists" or a commit conflict, and the
  // table holds the rows of exactly one writer.
  test(`${WRITERS} clients create the same table at once: one table, one version per success`, {
    timeout: 60_000,
  }, async () => {
    const conns = await Promise.all(range(WRITERS).map(() => connect()));
    const results = await Promise.allSettled(
      conns.map((c, w) => c.createTable("race", [{ writer: w }], [ns])),
    );
    const winners = results.filter((r) => r.status === "fulfilled");
    const summary = results.map((r) => r.reason?.message ?? "ok").join("\n");
    assert.ok(winners.length >= 1, summary);
    for (const r of results.filter((r) => r.status === "rejected"))
      assert.match(r.reason.message, /already exists|commit conflict/i, summary);

    const table = await (await connect()).openTable("race", [ns]);
    assert.equal(await table.countRows(), 1);
    assert.equal(await table.version(), winners.length, summary);
    assertCatalogMatchesDisk(
      (await describeTable([ns, "race"])).location,
      range(winners.length, 1),
    );
  });

  test(`${WRITERS} clients create the same namespace at once: exactly one wins`, { timeout: 60_000 }, async () => {
    const conns = await Promise.all(range(WRITERS).map(() => connect()));
    const results = await Promise.allSettled(conns.map((c) => c.createNamespace([ns, "race_ns"])));
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    for (const r of results.filter((r) => r.status === "rejected"))
      assert.match(r.reason.message, /already exists/i);
  });
});
