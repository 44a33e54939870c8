import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { newId } from '../../engine/platform/ids';
import { endWorkflowExecution } from '../../engine/workflows/execution-records';
import {
  findTemporalCli,
  startTemporalDevServer,
  TemporalCliMissingError,
  type TemporalDevServer,
} from '../../ops/embedded/temporal-dev-server';
import {
  dispatchDueRuns,
  dispatchRun,
  type RunDispatcher,
  startRunDispatcher,
} from '../../engine/workflows/run-dispatcher';
import { SEARCH_ATTRIBUTES } from '../../engine/workflows/run-input';
import { temporalWorkflowRunner } from '../../engine/workflows/temporal-workflow-runner';
import { createTemporalWorker } from '../../workers/temporal-worker';
import { PROJECT_ROOT } from '../support/global-setup';
import { freePorts } from '../support/free-ports';
import {
  createTestAccount,
  createTestApp,
  temporalAddress,
  type TestAccount,
  type TestApp,
} from '../support/test-app';
import { createTestDatabase } from '../support/test-database';
import { workerId } from './workflow-harness';

type TestDatabase = Awaited<ReturnType<typeof createTestDatabase>>;

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const echoWorkflow = () => {
  const [s, e] = [workerId(), workerId()];
  return {
    name: 'Echo',
    workers: [
      { id: s, name: 'Start', type: 'STARTER', next: [e] },
      { id: e, name: 'End', type: 'ENDER', script: 'function main(args) { return { got: args.inputs }; }' },
    ],
  };
};

/**
 * Item 2 of issue 13: a run requested while Temporal is unreachable is accepted (202), waits in the
 * run outbox, and starts once Temporal answers; it runs exactly once.
 */
describe('run outbox: Temporal unreachable when the run is requested', () => {
  let database: TestDatabase;
  let t: TestApp;
  let account: TestAccount;
  let server: TemporalDevServer | null = null;
  let dispatcher: RunDispatcher | null = null;
  let workerConnection: NativeConnection | null = null;
  let worker: Worker | null = null;
  let running: Promise<void> | null = null;
  let address: string;
  let uiPort: number;
  const taskQueue = `outbox-${newId('worker').slice(5, 17)}`;

  beforeAll(async () => {
    const [port, ui] = await freePorts(2);
    address = `127.0.0.1:${port}`;
    uiPort = ui!;
    database = await createTestDatabase();
    // Nothing listens on this port yet: the app's client is lazy, as the API's is.
    t = await createTestApp(database.db, { taskQueue, temporalAddress: address });
    account = await createTestAccount(database.db);
  }, 60_000);
  afterAll(async () => {
    await dispatcher?.stop();
    if (worker && running) {
      worker.shutdown();
      await running;
    }
    await workerConnection?.close();
    await t?.close();
    await server?.stop();
    await database?.drop();
  }, 60_000);

  test('POST run answers 202 at once; the run reaches SUCCEEDED exactly once after Temporal comes up', async () => {
    const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
      t.app.inject({ method, url, payload, headers: { authorization: account.bearer } });
    const stored = await call('POST', '/v2/workflows', echoWorkflow());
    expect(stored.statusCode).toBe(200);
    const workflowId = stored.json().workflow.id as string;

    const began = Date.now();
    const res = await call('POST', `/v2/workflows/${workflowId}/run`, { parameters: { n: 7 } });
    const tookMs = Date.now() - began;
    expect(res.statusCode).toBe(202);
    expect(tookMs).toBeLessThan(2_000);
    const executionId = res.json().workflow_execution.id as string;
    expect(res.json().workflow_execution).toMatchObject({ run_status: 'RUNNING', trigger: 'API' });

    // The start request waits in the outbox; the run is still RUNNING, not FAILED.
    const waiting = await database.db('workflow_run_outbox').where({ execution_id: executionId }).first();
    expect(waiting).toMatchObject({ execution_id: executionId });
    const second = await call('POST', `/v2/workflows/${workflowId}/run`, { parameters: { n: 8 } });
    expect(second.statusCode).toBe(202);
    const secondId = second.json().workflow_execution.id as string;
    expect(await database.db('workflow_run_outbox').count({ n: '*' })).toEqual([{ n: 2 }]);

    // A retry goes the same way (issue 13: retries use the outbox too). A third run, closed FAILED by
    // hand while it waited (as an operator would), is retried with Temporal still down: 202, RUNNING.
    const third = await call('POST', `/v2/workflows/${workflowId}/run`, { parameters: { n: 9 } });
    const failedId = third.json().workflow_execution.id as string;
    await endWorkflowExecution(database.db, failedId, {
      runStatus: 'FAILED',
      enderWorkerExecutionId: null,
      failure: { workerId: null, parallelIndex: -1, workerExecutionId: null, message: 'Closed by hand.' },
    });
    const retried = await call('POST', `/v2/workflows/${workflowId}/workflow_executions/${failedId}/retry`);
    expect(retried.statusCode).toBe(202);
    const retryId = retried.json().workflow_execution.id as string;
    expect(retried.json().workflow_execution).toMatchObject({ run_status: 'RUNNING', retry_of: failedId });
    expect(await database.db('workflow_run_outbox').where({ execution_id: retryId }).first()).toMatchObject({
      execution_id: retryId,
    });

    // Temporal comes up on that address, with a worker; the dispatcher starts what waited.
    dispatcher = startRunDispatcher(database.db, temporalWorkflowRunner(t.temporal, taskQueue), {
      intervalMs: 200,
    });
    const cliPath = findTemporalCli({
      cliPath: process.env.TEST_TEMPORAL_CLI_PATH ?? null,
      projectRoot: PROJECT_ROOT,
    });
    if (cliPath === null) throw new TemporalCliMissingError();
    server = await startTemporalDevServer({
      cliPath,
      dataDir: null,
      host: '127.0.0.1',
      port: Number(address.split(':')[1]),
      uiPort,
      namespace: 'default',
      searchAttributes: { ...SEARCH_ATTRIBUTES },
    });
    workerConnection = await NativeConnection.connect({ address });
    worker = await createTemporalWorker({
      db: database.db,
      connection: workerConnection,
      client: t.temporal,
      namespace: 'default',
      taskQueue,
      publicUrl: 'http://pas.test',
    });
    running = worker.run();

    for (const [id, n] of [
      [executionId, 7],
      [secondId, 8],
      [retryId, 9],
    ] as const) {
      const ended = await until(`run ${id} to end`, async () => {
        const poll = await call(
          'GET',
          `/v2/workflows/${workflowId}/workflow_executions?workflow_execution_id=${id}`,
        );
        const execution = poll.json().workflow_execution;
        return execution.run_status === 'RUNNING' ? undefined : execution;
      });
      expect(ended.run_status).toBe('SUCCEEDED');
      const ender = await database
        .db('worker_executions')
        .where({ workflow_execution_id: id, worker_name: 'End' });
      expect(ender).toHaveLength(1);
      expect(ender[0].result).toEqual({ got: { n } });
      // One Temporal execution under the execution id, one EXECUTE audit record.
      const runs: string[] = [];
      for await (const info of t.temporal.workflow.list({ query: `WorkflowId = '${id}'` }))
        runs.push(info.runId);
      expect(runs).toHaveLength(1);
      expect(
        await database.db('audit_logs').where({ entity_id: id, operation: 'EXECUTE' }).count({ n: '*' }),
      ).toEqual([{ n: 1 }]);
    }
    expect(await database.db('workflow_run_outbox').count({ n: '*' })).toEqual([{ n: 0 }]);
    // The run closed by hand stays as it was closed: no step of it ran, whether or not the start
    // that was in flight when it was closed reached Temporal.
    const closed = await call(
      'GET',
      `/v2/workflows/${workflowId}/workflow_executions?workflow_execution_id=${failedId}`,
    );
    expect(closed.json().workflow_execution).toMatchObject({ run_status: 'FAILED', version: '2' });
    expect(await database.db('worker_executions').where({ workflow_execution_id: failedId })).toEqual([]);
  }, 180_000);
});

/**
 * A database, an app whose Temporal is unreachable (requests' runs wait in the outbox) and a client
 * of the suite's Temporal for the dispatchers, set up and torn down around a describe block.
 */
function downAndUp(prefix: string) {
  const taskQueue = `${prefix}-${newId('worker').slice(5, 17)}`;
  const f = {} as {
    database: TestDatabase;
    down: TestApp;
    up: Client;
    upConnection: Connection;
    account: TestAccount;
    taskQueue: string;
  };
  f.taskQueue = taskQueue;
  beforeAll(async () => {
    const [closedPort] = await freePorts(1);
    f.database = await createTestDatabase();
    f.down = await createTestApp(f.database.db, { taskQueue, temporalAddress: `127.0.0.1:${closedPort}` });
    f.account = await createTestAccount(f.database.db);
    f.upConnection = await Connection.connect({ address: temporalAddress() });
    f.up = new Client({ connection: f.upConnection, namespace: 'default' });
  }, 60_000);
  afterAll(async () => {
    await f.down?.close();
    await f.upConnection?.close();
    await f.database?.drop();
  });
  return f;
}

/**
 * Several dispatchers (API replicas, the request itself) and a row that outlives its start (the
 * dispatcher died between Temporal's answer and the delete) never make a second run.
 */
describe('run outbox: duplicate dispatch', () => {
  const f = downAndUp('outbox-dup');

  test('concurrent dispatchers start a waiting run once; a row that outlived its start starts nothing new', async () => {
    const { database, down, up, account, taskQueue } = f;
    const call = (method: 'POST', url: string, payload?: object) =>
      down.app.inject({ method, url, payload, headers: { authorization: account.bearer } });
    const stored = await call('POST', '/v2/workflows', echoWorkflow());
    const workflowId = stored.json().workflow.id as string;
    const res = await call('POST', `/v2/workflows/${workflowId}/run`, { parameters: {} });
    expect(res.statusCode).toBe(202);
    const executionId = res.json().workflow_execution.id as string;
    // Let the request's own (failing) attempt settle, then make the row due again.
    await until('the request to give up its attempt', async () => {
      const row = await database.db('workflow_run_outbox').where({ execution_id: executionId }).first();
      return row?.last_error ? row : undefined;
    });
    await database.db('workflow_run_outbox').update({ available_at: database.db.fn.now() });
    const waiting = await database.db('workflow_run_outbox').where({ execution_id: executionId }).first();

    // No worker polls this task queue: the run stays open in Temporal, so a second start would show.
    const runner = temporalWorkflowRunner(up, taskQueue);
    const outcomes = await Promise.all([
      dispatchDueRuns(database.db, runner),
      dispatchDueRuns(database.db, runner),
      dispatchRun(database.db, runner, executionId),
    ]);
    const started = outcomes[0].started + outcomes[1].started + (outcomes[2] === 'started' ? 1 : 0);
    expect(started).toBe(1);
    expect(await database.db('workflow_run_outbox').count({ n: '*' })).toEqual([{ n: 0 }]);
    const handle = up.workflow.getHandle(executionId);
    const first = await handle.describe();
    expect(first.status.name).toBe('RUNNING');

    // The row is back, as if its dispatcher died after Temporal answered and before the delete.
    await database.db('workflow_run_outbox').insert({
      execution_id: waiting.execution_id,
      input: JSON.stringify(waiting.input),
    });
    expect(await dispatchDueRuns(database.db, runner)).toEqual({ started: 1, retry: 0, skipped: 0 });
    expect(await database.db('workflow_run_outbox').count({ n: '*' })).toEqual([{ n: 0 }]);
    const runs: string[] = [];
    for await (const info of up.workflow.list({ query: `WorkflowId = '${executionId}'` }))
      runs.push(info.runId);
    expect(runs).toEqual([first.runId]);

    // Once the run has ended, a stray row is dropped without asking Temporal.
    await handle.terminate('test over');
    await database.db('workflow_executions').where({ id: executionId }).update({ run_status: 'FAILED' });
    await database.db('workflow_run_outbox').insert({
      execution_id: waiting.execution_id,
      input: JSON.stringify(waiting.input),
    });
    expect(await dispatchDueRuns(database.db, runner)).toEqual({ started: 0, retry: 0, skipped: 1 });
    const after: string[] = [];
    for await (const info of up.workflow.list({ query: `WorkflowId = '${executionId}'` }))
      after.push(info.runId);
    expect(after).toEqual([first.runId]);
  }, 120_000);
});

/**
 * Retries take the outbox path too: a retry (one, or a bulk retry_failed) asked for while Temporal
 * is unreachable is accepted (202, RUNNING), its start request waits in the outbox with the retry's
 * link, and a dispatcher starts it once Temporal answers.
 */
describe('run outbox: retries while Temporal is unreachable', () => {
  const f = downAndUp('outbox-retry');

  test('retry and retry_failed answer 202 and wait in the outbox; a dispatcher starts each once', async () => {
    const { database, down, up, account, taskQueue } = f;
    const call = (method: 'POST', url: string, payload?: object) =>
      down.app.inject({ method, url, payload, headers: { authorization: account.bearer } });
    const stored = await call('POST', '/v2/workflows', echoWorkflow());
    const workflowId = stored.json().workflow.id as string;
    // Two runs that failed: recorded with their definition, closed FAILED, nothing left to start.
    const failedIds: string[] = [];
    for (const n of [1, 2]) {
      const res = await call('POST', `/v2/workflows/${workflowId}/run`, { parameters: { n } });
      expect(res.statusCode).toBe(202);
      failedIds.push(res.json().workflow_execution.id as string);
    }
    await database.db('workflow_run_outbox').whereIn('execution_id', failedIds).delete();
    await database.db('workflow_executions').whereIn('id', failedIds).update({ run_status: 'FAILED' });

    const began = Date.now();
    const one = await call(
      'POST',
      `/v2/workflows/${workflowId}/workflow_executions/${failedIds[0]}/retry`,
      {},
    );
    expect(Date.now() - began).toBeLessThan(2_000);
    expect(one.statusCode).toBe(202);
    expect(one.json().workflow_execution).toMatchObject({ run_status: 'RUNNING', retry_of: failedIds[0] });
    const today = new Date().toISOString().slice(0, 10).replace(/-/g, '');
    const bulk = await call('POST', `/v2/workflows/${workflowId}/retry_failed`, { start: today });
    expect(bulk.statusCode).toBe(202);
    expect(bulk.json()).toMatchObject({ started: 1, skipped: [], remaining: 0 });
    const retryIds = [
      one.json().workflow_execution.id as string,
      bulk.json().workflow_executions[0].id as string,
    ];
    expect(bulk.json().workflow_executions[0].retry_of).toBe(failedIds[1]);

    // Both wait in the outbox, still RUNNING (not closed FAILED as a refused start once was), once
    // the requests' own attempts have given up.
    const waiting = await until('the requests to give up their attempts', async () => {
      const found = await database.db('workflow_run_outbox').whereIn('execution_id', retryIds);
      return found.length === 2 && found.every((row) => row.last_error) ? found : undefined;
    });
    expect(waiting.map((row) => row.input.retryOf).sort()).toEqual([...failedIds].sort());
    const rows = await database.db('workflow_executions').whereIn('id', retryIds);
    expect(rows.map((row) => row.run_status)).toEqual(['RUNNING', 'RUNNING']);

    // Temporal answers: one pass starts both, a second finds nothing; each id runs once.
    await database.db('workflow_run_outbox').update({ available_at: database.db.fn.now() });
    const runner = temporalWorkflowRunner(up, taskQueue);
    expect(await dispatchDueRuns(database.db, runner)).toEqual({ started: 2, retry: 0, skipped: 0 });
    expect(await dispatchDueRuns(database.db, runner)).toEqual({ started: 0, retry: 0, skipped: 0 });
    for (const [i, id] of retryIds.entries()) {
      const handle = up.workflow.getHandle(id);
      const description = await handle.describe();
      expect(description.memo).toMatchObject({ workflow_id: workflowId, retry_of: failedIds[i] });
      const runs: string[] = [];
      for await (const info of up.workflow.list({ query: `WorkflowId = '${id}'` })) runs.push(info.runId);
      expect(runs).toEqual([description.runId]);
      await handle.terminate('test over');
    }
  }, 120_000);
});
