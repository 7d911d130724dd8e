// The catalog follows the client's clean-up of old versions.  LanceDB's
// optimize({cleanupOlderThan}) deletes old manifests on storage and sends
// the catalog nothing; the catalog listed those versions still, and
// checkout(1) failed on a missing file.  The background worker (here its
// round on demand, lance_reconcile_versions()) removes from the catalog a
// version whose manifest is gone, never the latest, with a change-log entry.
import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, describe, test } from "node:test";
import {
  catalogVersions,
  connect,
  describeTable,
  http,
  itemRows as rows,
  manifestFiles,
  ok,
  psql,
  removeNamespace,
  tableRoute,
  uniqueName,
  versionsDir,
} from "./lib.mjs";

describe("clean-up of old versions", { timeout: 180_000 }, () => {
  const ns = uniqueName("e2e_cleanup");
  const id = [ns, "items"];
  let db;
  let table;
  let location;

  before(async () => {
    db = await connect();
    await db.createNamespace([ns]);
    table = await db.createTable("items", rows(1, 2), [ns]); // v1
    await table.add(rows(3, 3)); // v2
    await table.add(rows(6, 4)); // v3
    location = (await describeTable(id)).location;
    assert.deepEqual(catalogVersions(location).map((v) => v.version), [1, 2, 3]);
  });
  after(() => removeNamespace(ns));

  const catalogList = async () =>
    ok(await http("POST", tableRoute(id, "version/list"), { body: { id } })).versions.map(
      (v) => v.version,
    );

  test("optimize with cleanupOlderThan removes old manifests; a reconciliation round removes their versions", async () => {
    // With scripts/run.sh's catalog (LN_TEST_RUN_DATA) the background worker runs too, and
    // may do the round first: then what is checked is the state, whoever reached it.
    const workerRuns =
      psql("SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'lance_namespace launcher'") === "t";
    const before = Number(psql("SELECT max(seq) FROM lance_catalog.change"));
    await table.optimize({ cleanupOlderThan: new Date(Date.now() + 1000), deleteUnverified: true });
    const latest = await table.version();
    const onDisk = [...manifestFiles(location).finals.keys()].sort((a, b) => a - b);
    assert.ok(!onDisk.includes(1), `version 1's manifest is cleaned up (left: ${onDisk})`);
    assert.ok(onDisk.includes(latest), `the latest stays (left: ${onDisk})`);
    // the catalog still lists what the client removed: the state the round must fix
    if (!workerRuns) assert.ok((await catalogList()).includes(1));

    const answer = JSON.parse(psql("SELECT lance_reconcile_versions()"));
    if (!workerRuns) assert.ok(answer.removed >= 1, JSON.stringify(answer));

    // what the catalog lists is what is on storage, the latest included
    const listed = (await catalogList()).sort((a, b) => a - b);
    assert.deepEqual(listed, onDisk);
    assert.ok(listed.includes(latest));
    assert.deepEqual(catalogVersions(location).map((v) => v.version), onDisk);

    // each removed version is in the change log, with the table's id
    const entries = JSON.parse(
      psql(
        `SELECT coalesce(json_agg(json_build_object('objects', objects, 'versions', versions,
                                                    'properties', properties) ORDER BY seq), '[]')
           FROM lance_catalog.change WHERE seq > :'after' AND operation = 'ReconcileTableVersions'`,
        { after: String(before) },
      ),
    );
    const logged = entries.flatMap((e) => e.versions).sort((a, b) => a - b);
    // the versions are 1 to the latest: those whose manifests went
    const removed = Array.from({ length: latest }, (_, i) => i + 1).filter((v) => !onDisk.includes(v));
    assert.deepEqual(logged, removed);
    for (const e of entries) {
      assert.ok(e.objects.every((o) => o === id.join("$")));
      assert.equal(e.properties.reason, "manifest removed from storage");
    }

    // a second round finds nothing more
    assert.equal(JSON.parse(psql("SELECT lance_reconcile_versions()")).removed, 0);
  });

  test("the client checks out what remains; a removed version is not found", async () => {
    const remaining = (await catalogList()).sort((a, b) => a - b);
    for (const v of remaining) {
      await table.checkout(v);
      assert.ok((await table.countRows()) > 0);
    }
    await table.checkoutLatest();
    await assert.rejects(table.checkout(1));
    const described = await http("POST", tableRoute(id, "version/describe"), { body: { id, version: 1 } });
    assert.equal(described.status, 404);
  });

  test("a manifest that cannot be looked at is not taken for a removed one", async () => {
    await table.checkoutLatest();
    await table.add(rows(20, 1));
    await table.add(rows(21, 1));
    const listed = (await catalogList()).sort((a, b) => a - b);
    const old = listed[listed.length - 2]; // not the latest
    const { finals } = manifestFiles(location);
    fs.rmSync(finals.get(old).file);
    // the folder unreadable to the server: it cannot tell, and leaves the table
    const dir = versionsDir(location);
    const mode = fs.statSync(dir).mode;
    fs.chmodSync(dir, 0o000);
    try {
      assert.equal(JSON.parse(psql("SELECT lance_reconcile_versions()")).removed, 0);
    } finally {
      fs.chmodSync(dir, mode);
    }
    assert.deepEqual((await catalogList()).sort((a, b) => a - b), listed);
    // readable again: the version whose manifest is gone goes (in this call, or the worker's round)
    assert.ok(JSON.parse(psql("SELECT lance_reconcile_versions()")).removed <= 1);
    assert.deepEqual(
      (await catalogList()).sort((a, b) => a - b),
      listed.filter((v) => v !== old),
    );
  });
});
