import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { createAccount } from '../../engine/identity/account-store';
import { connectDatabase, type Database } from '../../engine/platform/database';
import { registry } from '../../engine/platform/metrics';
import { newId } from '../../engine/platform/ids';
import { endWorkflowExecution, insertWorkflowExecution } from '../../engine/workflows/execution-records';
import { pruneToArchive } from '../../engine/workflows/run-archive';
import {
  purgeRunHistory,
  RETENTION_LOCK_KEY,
  retentionCutoff,
  runRetentionPass,
  startRunRetention,
  type PurgeActor,
  type PurgeResult,
} from '../../engine/workflows/run-retention';
import { daysAgo, historyCounts, seedIntegration, seedPayload, seedRun } from '../support/run-history';
import { createTestDatabase } from '../support/test-database';

const JOB: PurgeActor = { source: 'SCHEDULER', userEmail: 'System', label: 'test' };
const FAST = { batchSize: 2, pauseMs: 1 };

async function removedMetric(table: string): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === 'pas_run_history_removed_total');
  return metric?.values.find((v) => v.labels.table === table)?.value ?? 0;
}

const idsOf = async (db: Database) => new Set((await db('workflow_executions').pluck('id')) as string[]);

describe('run history retention', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;

  beforeEach(async () => {
    database = await createTestDatabase();
    db = database.db;
  });
  afterEach(() => database.drop());

  async function account(name: string): Promise<string> {
    const { accountId } = await createAccount(db, { name, ownerEmail: `${newId('user')}@example.com` });
    return accountId;
  }

  test('old finished runs go with their steps, SDK calls and old payloads; counts, metric and audit are right', async () => {
    const acme = await account('Acme');
    const other = await account('Other');
    const hook = await seedIntegration(db, acme);
    const old = [
      await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 40, steps: 2, calls: 2 }),
      await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 35, steps: 2, calls: 2 }),
      await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 31, steps: 2, calls: 2 }),
      await seedRun(db, acme, {
        status: 'FAILED',
        endedDaysAgo: 90,
        steps: 1,
        calls: 0,
        stepStatus: 'ERROR',
      }),
      await seedRun(db, acme, {
        status: 'FAILED',
        endedDaysAgo: 60,
        steps: 1,
        calls: 0,
        stepStatus: 'ERROR',
      }),
    ];
    // Started long ago, ended within the retention: kept (the end counts, not the start).
    const recent = [
      await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 29, startedDaysAgo: 45 }),
      await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 1, stepStatus: 'ERROR' }),
    ];
    const otherOld = await seedRun(db, other, { status: 'SUCCEEDED', endedDaysAgo: 50 });
    await seedPayload(db, acme, hook, 31);
    await seedPayload(db, acme, hook, 400);
    const recentPayload = await seedPayload(db, acme, hook, 2);
    const metricBefore = await removedMetric('sdk_calls');

    const result = await purgeRunHistory(db, { before: retentionCutoff(30), accountId: acme }, JOB, FAST);

    const expected = { workflow_executions: 5, worker_executions: 8, sdk_calls: 12, webhook_payloads: 2 };
    expect(result.removed).toEqual(expected);
    expect([...result.accounts]).toEqual([[acme, expected]]);
    expect(result.interrupted).toBe(false);
    // Runs two at a time (2, 2, 1, then none left), then the payloads (2, then none left).
    expect(result.batches).toBe(4 + 2);
    expect(await removedMetric('sdk_calls')).toBe(metricBefore + 12);

    expect(await idsOf(db)).toEqual(new Set([...recent.map((r) => r.id), otherOld.id]));
    const oldSteps = old.flatMap((r) => r.stepIds);
    expect(await db('worker_executions').whereIn('id', oldSteps).count({ n: '*' })).toEqual([{ n: 0 }]);
    expect(await db('sdk_calls').whereIn('worker_execution_id', oldSteps).count({ n: '*' })).toEqual([
      { n: 0 },
    ]);
    expect(await historyCounts(db)).toEqual({
      workflow_executions: 3,
      worker_executions: 6,
      sdk_calls: 6,
      webhook_payloads: 1,
    });
    expect(await db('webhook_payloads').pluck('id')).toEqual([recentPayload]);

    const audit = await db('audit_logs').where({ account_id: acme, operation: 'DELETE' });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      source: 'SCHEDULER',
      user_email: 'System',
      entity_type: 'WorkflowExecution',
      activity:
        `Removed run history finished before ${result.before.toISOString()} (test): 5 workflow execution(s), ` +
        '8 worker execution(s), 12 SDK call(s), 2 webhook payload(s)',
      after: { before: result.before.toISOString(), removed: expected },
    });
    expect(await db('audit_logs').where({ account_id: other, operation: 'DELETE' })).toHaveLength(0);

    // Nothing left to remove: a second pass removes nothing and writes no record.
    const again = await purgeRunHistory(db, { before: retentionCutoff(30), accountId: acme }, JOB, FAST);
    expect(again.removed).toEqual({
      workflow_executions: 0,
      worker_executions: 0,
      sdk_calls: 0,
      webhook_payloads: 0,
    });
    expect(await db('audit_logs').where({ account_id: acme, operation: 'DELETE' })).toHaveLength(1);
  });

  test('a running run and a run a retry depends on are never removed, however old', async () => {
    const acme = await account('Acme');
    const running = await seedRun(db, acme, { status: 'RUNNING', endedDaysAgo: null, startedDaysAgo: 400 });
    // A failed run whose retry is still running.
    const retried = await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 300, stepStatus: 'ERROR' });
    const retrying = await seedRun(db, acme, {
      status: 'RUNNING',
      endedDaysAgo: null,
      startedDaysAgo: 1,
      retryOf: retried.id,
    });
    // A chain whose last retry is recent: every link stays.
    const chainA = await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 200, stepStatus: 'ERROR' });
    const chainB = await seedRun(db, acme, {
      status: 'FAILED',
      endedDaysAgo: 190,
      stepStatus: 'ERROR',
      retryOf: chainA.id,
    });
    const chainC = await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 2, retryOf: chainB.id });
    // A chain old all through goes whole, in the same pass: the retry first, then what it retried.
    const oldA = await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 100, stepStatus: 'ERROR' });
    const oldB = await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 99, retryOf: oldA.id });
    // Ended in the records, but a step still RUNNING: its Temporal workflow may still be writing.
    const stepRunning = await seedRun(db, acme, {
      status: 'SUCCEEDED',
      endedDaysAgo: 100,
      stepStatus: 'RUNNING',
    });
    // A failure alert still to be sent needs its run; one already sent does not.
    const alertPending = await seedRun(db, acme, {
      status: 'FAILED',
      endedDaysAgo: 100,
      stepStatus: 'ERROR',
    });
    const alertSent = await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 100, stepStatus: 'ERROR' });
    for (const [run, status] of [
      [alertPending, 'PENDING'],
      [alertSent, 'SENT'],
    ] as const) {
      await db('run_alerts').insert({
        execution_id: run.id,
        account_id: acme,
        target: JSON.stringify({ email: 'ops@example.com' }),
        status,
        created_at: daysAgo(100),
        updated_at: daysAgo(100),
      });
    }
    // A start request still in the outbox.
    const queued = await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 100 });
    await db('workflow_run_outbox').insert({ execution_id: queued.id, input: JSON.stringify({}) });

    const result = await purgeRunHistory(db, { before: retentionCutoff(30) }, JOB, FAST);

    expect(result.removed.workflow_executions).toBe(3);
    const remainingIds = await idsOf(db);
    expect(remainingIds).toEqual(
      new Set(
        [running, retried, retrying, chainA, chainB, chainC, stepRunning, alertPending, queued].map(
          (r) => r.id,
        ),
      ),
    );
    expect(await db('run_alerts').pluck('execution_id')).toEqual([alertPending.id]);
    // What stays keeps all its steps and journal.
    for (const kept of [running, retried, chainA, chainB, stepRunning, alertPending, queued]) {
      expect(
        await db('worker_executions').where({ workflow_execution_id: kept.id }).count({ n: '*' }),
      ).toEqual([{ n: 2 }]);
      expect(await db('sdk_calls').whereIn('worker_execution_id', kept.stepIds).count({ n: '*' })).toEqual([
        { n: 2 },
      ]);
    }
    expect([oldA, oldB, alertSent].some((r) => remainingIds.has(r.id))).toBe(false);
  });

  test('an archived retry chain is removed whole, a link per round, whatever batches its links fall in', async () => {
    const acme = await account('Acme');
    const first = await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 90, stepStatus: 'ERROR' });
    const second = await seedRun(db, acme, {
      status: 'FAILED',
      endedDaysAgo: 80,
      stepStatus: 'ERROR',
      retryOf: first.id,
    });
    const third = await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 70, retryOf: second.id });
    const folder = mkdtempSync(path.join(tmpdir(), 'pas-run-archive-'));
    try {
      // One run per batch: each link lies in a batch of its own, the oldest first.
      const result = await pruneToArchive(
        db,
        path.join(folder, 'chain.jsonl.gz'),
        { before: retentionCutoff(30) },
        JOB,
        { batchSize: 1, pauseMs: 1 },
      );
      const all = { workflow_executions: 3, worker_executions: 6, sdk_calls: 6, webhook_payloads: 0 };
      expect(result.manifest.counts).toEqual(all);
      expect(result.removed).toEqual(all);
      expect(result.keptRuns).toBe(0);
      expect(await idsOf(db)).toEqual(new Set());
      const archived = gunzipSync(readFileSync(path.join(folder, 'chain.jsonl.gz')))
        .toString('utf8')
        .split('\n')
        .filter((line) => line.startsWith('{"table":"workflow_executions"'))
        .map((line) => (JSON.parse(line) as { row: { id: string } }).row.id);
      expect(archived).toEqual([first.id, second.id, third.id]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  test('a run a writer holds is passed over, not waited for, and goes on the next pass', async () => {
    const acme = await account('Acme');
    const held = await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 100, stepStatus: 'ERROR' });
    await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 100 });
    // A writer's open transaction on the run (a failure alert marking it, say).
    const trx = await db.transaction();
    try {
      await trx('workflow_executions').where({ id: held.id }).forUpdate().first();
      const result = await Promise.race([
        purgeRunHistory(db, { before: retentionCutoff(30) }, JOB, FAST),
        delay(10_000).then(() => 'waited on the writer' as const),
      ]);
      expect(result).toMatchObject({ removed: { workflow_executions: 1 } });
      expect(await idsOf(db)).toEqual(new Set([held.id]));
    } finally {
      await trx.commit();
    }
    const next = await purgeRunHistory(db, { before: retentionCutoff(30) }, JOB, FAST);
    expect(next.removed).toEqual({
      workflow_executions: 1,
      worker_executions: 2,
      sdk_calls: 2,
      webhook_payloads: 0,
    });
  });

  test('a retry being recorded while a batch runs keeps the run it retries', async () => {
    const acme = await account('Acme');
    const failed = await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 100, stepStatus: 'ERROR' });
    // The retry's insert is under way (not committed): its foreign key check holds the failed run.
    const trx = await db.transaction();
    let retryId: string;
    try {
      ({ id: retryId } = await seedRun(trx, acme, {
        status: 'RUNNING',
        endedDaysAgo: null,
        retryOf: failed.id,
        steps: 0,
      }));
      const during = await purgeRunHistory(db, { before: retentionCutoff(30) }, JOB, FAST);
      expect(during.removed.workflow_executions).toBe(0);
    } finally {
      await trx.commit();
    }
    const after = await purgeRunHistory(db, { before: retentionCutoff(30) }, JOB, FAST);
    expect(after.removed.workflow_executions).toBe(0);
    expect(await idsOf(db)).toEqual(new Set([failed.id, retryId]));
  });

  test('a purge under concurrent writes removes exactly the old runs and loses none of the new rows', async () => {
    const acme = await account('Acme');
    const OLD = 300;
    // Seeded in bulk: 300 old finished runs, 2 steps and 2 SDK calls each.
    for (let i = 0; i < OLD; i += 25) {
      await Promise.all(
        Array.from({ length: 25 }, () =>
          seedRun(db, acme, { status: i % 2 ? 'FAILED' : 'SUCCEEDED', endedDaysAgo: 40 + (i % 7), calls: 2 }),
        ),
      );
    }
    // An old run still running, which the writers keep adding steps to.
    const longRunning = await seedRun(db, acme, {
      status: 'RUNNING',
      endedDaysAgo: null,
      startedDaysAgo: 90,
    });
    const written = { runs: [] as string[], steps: [] as string[] };
    let stop = false;
    const writer = async () => {
      while (!stop) {
        // A new run through the real insert, a step, and half of them ended through the real close.
        const run = await insertWorkflowExecution(db, {
          accountId: acme,
          workflowId: 'wrkf_retention',
          workflowName: 'Retention',
          workspace: 'main',
          trigger: 'API',
          startedWorkerId: 'wrkr_step0',
          enderWorkerId: null,
          parameters: {},
          userId: 'user_x',
          credentialId: 'sid_x',
          credentialType: 'API_KEY',
        });
        written.runs.push(run.id);
        for (const executionId of [run.id, longRunning.id]) {
          const stepId = newId('workerExecution');
          await db('worker_executions').insert({
            id: stepId,
            account_id: acme,
            workflow_execution_id: executionId,
            workflow_id: 'wrkf_retention',
            workflow_name: 'Retention',
            worker_id: newId('worker'),
            worker_name: 'Step',
            worker_type: 'BASIC',
            trigger: 'API',
            status: 'COMPLETED',
            created_at: new Date(),
            updated_at: new Date(),
          });
          await db('sdk_calls').insert({
            worker_execution_id: stepId,
            seq: 1,
            name: 'getPortfolio',
            args_sha256: 'cd'.repeat(32),
            result: '{}',
          });
          written.steps.push(stepId);
        }
        if (written.runs.length % 2 === 0) {
          await endWorkflowExecution(db, run.id, { runStatus: 'SUCCEEDED', enderWorkerExecutionId: null });
        }
      }
    };
    const writers = [writer(), writer(), writer()];
    let result: PurgeResult;
    try {
      result = await purgeRunHistory(db, { before: retentionCutoff(30) }, JOB, { batchSize: 20, pauseMs: 5 });
      // Writes went on while the batches ran.
      expect(written.runs.length).toBeGreaterThan(3);
    } finally {
      stop = true;
      await Promise.all(writers);
    }

    expect(result.removed).toEqual({
      workflow_executions: OLD,
      worker_executions: OLD * 2,
      sdk_calls: OLD * 4,
      webhook_payloads: 0,
    });
    expect(result.batches).toBe(OLD / 20 + 1 + 1);
    const remaining = await idsOf(db);
    expect(remaining).toEqual(new Set([...written.runs, longRunning.id]));
    const steps = new Set((await db('worker_executions').pluck('id')) as string[]);
    for (const id of [...written.steps, ...longRunning.stepIds]) expect(steps.has(id)).toBe(true);
    expect(steps.size).toBe(written.steps.length + longRunning.stepIds.length);
    expect(await db('sdk_calls').whereIn('worker_execution_id', written.steps).count({ n: '*' })).toEqual([
      { n: written.steps.length },
    ]);
  });

  test('one process runs a pass at a time: another finds the lock taken and skips its turn', async () => {
    const acme = await account('Acme');
    await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 40 });
    // Another process (its own pool), in the middle of a pass.
    const elsewhere = connectDatabase(database.url, 1);
    try {
      await elsewhere.transaction(async (trx) => {
        await trx.raw('SELECT pg_advisory_xact_lock(?)', [RETENTION_LOCK_KEY]);
        expect(await runRetentionPass(db, 30, FAST)).toBeNull();
      });
      expect((await historyCounts(db)).workflow_executions).toBe(1);
      const result = await runRetentionPass(db, 30, FAST);
      expect(result?.removed.workflow_executions).toBe(1);
    } finally {
      await elsewhere.destroy();
    }
    const [record] = await db('audit_logs').where({ account_id: acme, operation: 'DELETE' });
    expect(record.activity).toContain('(the run retention job, RUN_RETENTION_DAYS=30)');
  });

  test('the scheduled job passes on its timer and stops when closed', async () => {
    const acme = await account('Acme');
    await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 10 });
    const passes: PurgeResult[] = [];
    const errors: unknown[] = [];
    const job = startRunRetention(db, 7, {
      ...FAST,
      firstDelayMs: 0,
      intervalMs: 50,
      onPass: (result) => passes.push(result),
      onError: (error) => errors.push(error),
    });
    try {
      const deadline = Date.now() + 10_000;
      while (passes.length < 2 && Date.now() < deadline) await delay(20);
    } finally {
      await job.close();
    }
    expect(errors).toEqual([]);
    expect(passes[0]!.removed.workflow_executions).toBe(1);
    expect(passes[1]!.removed.workflow_executions).toBe(0);
    expect(passes[0]!.before.getTime()).toBeLessThan(daysAgo(7).getTime() + 1000);
    const count = passes.length;
    await delay(150);
    expect(passes.length).toBe(count);
  });
});
