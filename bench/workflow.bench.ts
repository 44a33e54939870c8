/**
 * Workflow benchmark (issue 6): what a run of a three-worker workflow (STARTER → BASIC → ENDER, each
 * a tiny isolated-vm script) costs end to end, on the embedded defaults: an embedded PostgreSQL and
 * a Temporal dev server (SQLite file, as `npm start` runs it) started here, the real Fastify app
 * listening on a port, API-key requests over real HTTP, and a real Temporal Worker from
 * createTemporalWorker. Beside it, on the same Temporal server in the same run: a bare Temporal
 * workflow of three no-op local activities (bench/bare-workflow.ts, as the service's steps run),
 * started with the client and awaited with handle.result().
 *
 * Issue 20, the fair comparison: both clocks stop at Temporal's completion. A service run is timed
 * from POST /run to `handle.result()` on its own Temporal workflow (id = the run's `wfex_…` id),
 * beside the bare workflow of 3 local activities; the run ends with the target table (issue 33's:
 * latency ≤ 1.2× the bare one, sustained runs/s ≥ 0.9×), after the gap from each workflow's start to
 * its first step (from Temporal's history) and the CPU per run of both. The issue-6 figures stay as
 * labelled second rows: the
 * bare workflow of 3 regular activities (3 activity tasks, 4 workflow tasks) and the service clocks
 * that stop at the database (ENDER's commit, the run's `ended_at`) or at the client's poll.
 *
 * 1. Latency, one run at a time (service and bare runs interleaved): from the run request to
 *    SUCCEEDED seen by polling GET /v2/workflows/:id/workflow_executions every 15 ms; the ENDER's
 *    and the run's `ended_at` read back from PostgreSQL separate the polling overhead, and the
 *    workers' `started_at`/`ended_at` show where the rest goes. Interleaved with them, runs whose
 *    client waits with one GET holding `wait_seconds` (the extension) instead of polling.
 * 2. Sustained runs per second: M runs, IN_FLIGHT at a time, the client polling, then waiting;
 *    with the CPU each kind of process (this one, the worker child, Temporal, PostgreSQL) used
 *    per run, read from /proc, and where a sustained run's time goes.
 *
 * Both Temporal Workers (the service's and the bare one) run in a child process by default, as
 * `npm start` runs the worker beside the API. Flags: `--quick` (fewer runs), `--worker=in-process`
 * (the Workers in the bench process), `--poll-ms=N` (the client's poll interval),
 * `--temporal-db=memory` (the dev server without its SQLite file, as the test suite runs it).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { buildApp } from '../api/app';
import { createAccount, createApiKey } from '../engine/identity/account-store';
import { connectDatabase, type Database, migrateLatest } from '../engine/platform/database';
import { newId } from '../engine/platform/ids';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../engine/runtime/embedded-postgres';
import {
  findTemporalCli,
  startTemporalDevServer,
  TEMPORAL_CLI_VERSION,
  TemporalCliMissingError,
  type TemporalDevServer,
} from '../engine/runtime/temporal-dev-server';
import { SEARCH_ATTRIBUTES } from '../engine/workflows/run-input';
import { temporalWorkflowRunner } from '../engine/workflows/temporal-workflow-runner';
import { startRunHandoff } from '../engine/workflows/run-handoff';
import { freePorts } from '../test/support/free-ports';
import { createTemporalWorker } from '../workers/temporal-worker';
import type { BareActivities, bareLocalWorkflow, bareWorkflow } from './bare-workflow';
import { cpuDelta, processTreeCpu } from './measure';

const PROJECT_ROOT = path.resolve(__dirname, '..');
const WORKER_FLAG = '--pas-bench-workflow-worker';
const DEFAULT_POLL_MS = 15;
const IN_FLIGHT = 10;
const RUN_TIMEOUT_MS = 60_000;
const NAMESPACE = 'default';

interface Sizes {
  /** Sequential runs for the latency figures (each case). */
  latencyRuns: number;
  /** Runs for the runs-per-second figures (each case). */
  throughputRuns: number;
  warmUpRuns: number;
}
const FULL: Sizes = { latencyRuns: 50, throughputRuns: 100, warmUpRuns: 5 };
const QUICK: Sizes = { latencyRuns: 10, throughputRuns: 20, warmUpRuns: 2 };

/** What the worker host needs to poll both task queues. */
interface WorkerHostConfig {
  databaseUrl: string;
  temporalAddress: string;
  taskQueue: string;
  bareTaskQueue: string;
}

type ToChild =
  { kind: 'start'; config: WorkerHostConfig } | { kind: 'stop' } | { kind: 'eager-bare'; workflowId: string };
type FromChild =
  | { kind: 'ready' }
  | { kind: 'stopped' }
  | { kind: 'error'; message: string }
  | { kind: 'eager-started'; workflowId: string; eagerly: boolean };

interface WorkerHost {
  where: string;
  stop(): Promise<void>;
  /**
   * Starts a bare local-activity workflow in the worker host's process with Temporal's eager start,
   * on a client sharing its workers' connection; answers whether Temporal started it eagerly.
   */
  startEagerBare(workflowId: string): Promise<boolean>;
}

/** The worker host's eager start of a bare workflow (set once its workers run). */
let eagerBareStart: ((workflowId: string) => Promise<boolean>) | null = null;

const bareActivities: BareActivities = {
  async noop(step) {
    return step;
  },
  async stamp() {
    return Date.now();
  },
};

let runtimeInstalled = false;

/** Worker logs at WARN: the figures are the output. Once per process, before the first connection. */
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Already installed by someone else in this process: keep theirs.
  }
}

/**
 * The service's Worker (createTemporalWorker) and the bare one, polling until stopped. A Worker that
 * dies mid-bench would leave runs waiting forever, so that ends the process loudly.
 */
async function hostWorkers(config: WorkerHostConfig): Promise<() => Promise<void>> {
  quietRuntime();
  const db = connectDatabase(config.databaseUrl, 10);
  const closers: Array<() => Promise<unknown>> = [() => db.destroy()];
  const close = async () => {
    for (const closer of closers.reverse()) await closer();
  };
  try {
    const connection = await NativeConnection.connect({ address: config.temporalAddress });
    closers.push(() => connection.close());
    // createTemporalWorker wants a client too (scheduled launches start runs through it).
    const clientConnection = await Connection.connect({ address: config.temporalAddress });
    closers.push(() => clientConnection.close());
    const client = new Client({ connection: clientConnection, namespace: NAMESPACE });
    const service = await createTemporalWorker({
      db,
      connection,
      client,
      namespace: NAMESPACE,
      taskQueue: config.taskQueue,
      publicUrl: 'http://127.0.0.1',
    });
    const bare = await Worker.create({
      connection,
      namespace: NAMESPACE,
      taskQueue: config.bareTaskQueue,
      workflowsPath: require.resolve('./bare-workflow'),
      activities: bareActivities,
    });
    let stopping = false;
    const running = Promise.all([service.run(), bare.run()]);
    running.catch((error: unknown) => {
      if (stopping) return;
      console.error('workflow bench: a Temporal Worker failed:', error);
      process.exit(1);
    });
    // As the worker process does: runs handed to workers start here with Temporal's eager start.
    const eagerClient = new Client({ connection, namespace: NAMESPACE });
    const handoff = startRunHandoff(
      db,
      temporalWorkflowRunner(eagerClient, config.taskQueue, { eagerStart: true }),
    );
    // The strongest bare start: eager, from the process of the bare workflow's own worker.
    eagerBareStart = async (workflowId) => {
      const handle = await eagerClient.workflow.start<typeof bareLocalWorkflow>('bareLocalWorkflow', {
        taskQueue: config.bareTaskQueue,
        workflowId,
        requestEagerStart: true,
      });
      return handle.eagerlyStarted;
    };
    return async () => {
      stopping = true;
      await handoff.close();
      service.shutdown();
      bare.shutdown();
      await running;
      await close();
    };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

// The child side: `fork(__filename, [WORKER_FLAG])` lands here.
if (process.argv.includes(WORKER_FLAG)) {
  let stop: (() => Promise<void>) | null = null;
  const send = (message: FromChild) => process.send!(message);
  process.on('message', (message: ToChild) => {
    const fail = (error: unknown) => {
      send({
        kind: 'error',
        message: error instanceof Error ? (error.stack ?? error.message) : String(error),
      });
    };
    if (message.kind === 'eager-bare') {
      (eagerBareStart ?? (async () => Promise.reject(new Error('the workers are not running'))))(
        message.workflowId,
      ).then((eagerly) => send({ kind: 'eager-started', workflowId: message.workflowId, eagerly }), fail);
    } else if (message.kind === 'start') {
      hostWorkers(message.config).then((stopWorkers) => {
        stop = stopWorkers;
        send({ kind: 'ready' });
      }, fail);
    } else {
      (stop ?? (async () => undefined))().then(() => {
        send({ kind: 'stopped' });
        process.disconnect();
      }, fail);
    }
  });
  // The bench died: do not outlive it.
  process.on('disconnect', () => process.exit(0));
}

function nextMessage(child: ChildProcess): Promise<FromChild> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: FromChild) => {
      child.off('exit', onExit);
      if (message.kind === 'error') reject(new Error(`worker process: ${message.message}`));
      else resolve(message);
    };
    const onExit = (code: number | null, signal: string | null) => {
      child.off('message', onMessage);
      reject(new Error(`the worker process exited (code ${code}, signal ${signal})`));
    };
    child.once('message', onMessage);
    child.once('exit', onExit);
  });
}

async function startWorkerHost(config: WorkerHostConfig, inProcess: boolean): Promise<WorkerHost> {
  if (inProcess) {
    const stop = await hostWorkers(config);
    return {
      where: `the bench process (pid ${process.pid})`,
      stop,
      startEagerBare: (workflowId) => eagerBareStart!(workflowId),
    };
  }
  const child = fork(__filename, [WORKER_FLAG], {
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = nextMessage(child);
  child.send({ kind: 'start', config } satisfies ToChild);
  try {
    await ready;
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  let stopping = false;
  child.once('exit', (code, signal) => {
    if (stopping) return;
    console.error(`workflow bench: the worker process exited (code ${code}, signal ${signal})`);
    process.exit(1);
  });
  const eagerStarts = new Map<string, (eagerly: boolean) => void>();
  child.on('message', (message: FromChild) => {
    if (message.kind !== 'eager-started') return;
    eagerStarts.get(message.workflowId)?.(message.eagerly);
    eagerStarts.delete(message.workflowId);
  });
  return {
    where: `a child process (pid ${child.pid})`,
    startEagerBare(workflowId) {
      return new Promise((resolve) => {
        eagerStarts.set(workflowId, resolve);
        child.send({ kind: 'eager-bare', workflowId } satisfies ToChild);
      });
    },
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const stopped = nextMessage(child).catch(() => undefined);
      child.send({ kind: 'stop' } satisfies ToChild);
      await stopped;
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

/** Runs `task` for 0..count-1, `concurrency` at a time. */
async function bounded(count: number, concurrency: number, task: (index: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(count, concurrency) }, async () => {
      while (next < count) {
        const index = next;
        next += 1;
        await task(index);
      }
    }),
  );
}

/** One service run as the client saw it; the DB times are filled in afterwards. */
interface ServiceSample {
  executionId: string;
  /** Date.now() when the request left: the DB's `ended_at` are wall-clock times of the same host. */
  wallStart: number;
  acceptedMs: number;
  observedMs: number;
  polls: number;
  enderDoneMs: number;
  runClosedMs: number;
}

interface BareSample {
  startedMs: number;
  resultMs: number;
  /** The Temporal workflow's id (the run's `wfex_…` id for the service). */
  workflowId?: string;
  /** When the bare local-activity workflow's first activity ran (epoch ms). */
  firstStepAt?: number;
  /** Whether Temporal started it eagerly (the eager bare workflow). */
  eagerly?: boolean;
}

const fmt = (ms: number) => ms.toFixed(1);
const loadavg = () =>
  os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');
const percentiles = (values: number[]) => ({ p50: percentile(values, 50), p99: percentile(values, 99) });
const ratio = (value: number, base: number, digits = 1) => `×${(value / base).toFixed(digits)}`;

/** The command line: `--quick`, `--worker=in-process`, `--temporal-db=memory`, `--poll-ms=N`. */
interface BenchOptions {
  quick: boolean;
  inProcess: boolean;
  /** `npm start` keeps Temporal's state in a SQLite file; the test suite runs it in memory. */
  temporalInMemory: boolean;
  sizes: Sizes;
  pollMs: number;
}

function benchOptions(argv: readonly string[]): BenchOptions {
  const quick = argv.includes('--quick');
  const pollFlag = argv.find((arg) => arg.startsWith('--poll-ms='));
  const pollMs = pollFlag === undefined ? DEFAULT_POLL_MS : Number(pollFlag.slice('--poll-ms='.length));
  if (!Number.isInteger(pollMs) || pollMs < 1 || pollMs > 1000) {
    throw new Error(`--poll-ms must be a whole number of milliseconds from 1 to 1000, got ${pollFlag}`);
  }
  return {
    quick,
    inProcess: argv.includes('--worker=in-process'),
    temporalInMemory: argv.includes('--temporal-db=memory'),
    sizes: quick ? QUICK : FULL,
    pollMs,
  };
}

type Api = (method: 'GET' | 'POST', url: string, body?: object) => Promise<{ status: number; body: string }>;

/** What the bench runs against, once started. */
interface BenchServices {
  db: Database;
  client: Client;
  api: Api;
  baseUrl: string;
  suffix: string;
  bareTaskQueue: string;
  host: WorkerHost;
  servicesSeconds: number;
  workersSeconds: number;
}

/**
 * PostgreSQL and the Temporal dev server side by side, the database migrated with an account and an
 * API key, the Fastify app listening, and the worker host polling both task queues. Each thing
 * started pushes its stop onto `cleanup`.
 */
async function startServices(
  options: BenchOptions,
  cliPath: string,
  dataDir: string,
  ports: number[],
  benchStarted: number,
  cleanup: Array<() => Promise<unknown>>,
): Promise<BenchServices> {
  const [postgresPort, temporalPort, uiPort] = ports;
  const [postgresStart, temporalStart] = await Promise.allSettled([
    startEmbeddedPostgres({ dataDir, port: postgresPort!, database: 'bench' }),
    startTemporalDevServer({
      cliPath,
      dataDir: options.temporalInMemory ? null : dataDir,
      host: '127.0.0.1',
      port: temporalPort!,
      uiPort: uiPort!,
      namespace: NAMESPACE,
      searchAttributes: { ...SEARCH_ATTRIBUTES },
    }),
  ]);
  const started = [postgresStart, temporalStart].filter((s) => s.status === 'fulfilled');
  for (const s of started) {
    const service = (s as PromiseFulfilledResult<EmbeddedPostgres | TemporalDevServer>).value;
    cleanup.push(() => service.stop());
  }
  if (postgresStart.status === 'rejected') throw postgresStart.reason;
  if (temporalStart.status === 'rejected') throw temporalStart.reason;
  const postgres = postgresStart.value;
  const temporal = temporalStart.value;

  const db = connectDatabase(postgres.url, 10);
  cleanup.push(() => db.destroy());
  await migrateLatest(db);
  const { accountId, owner } = await createAccount(db, { name: 'bench', ownerEmail: 'bench@example.com' });
  const key = await createApiKey(db, { accountId, userId: owner.id });

  const connection = await Connection.connect({ address: temporal.address });
  cleanup.push(() => connection.close());
  const client = new Client({ connection, namespace: NAMESPACE });
  const suffix = newId('worker').slice(5, 17);
  const taskQueue = `bench-workflows-${suffix}`;
  const bareTaskQueue = `bench-bare-${suffix}`;
  const app = await buildApp({
    config: {
      rateLimitPerMinute: 1_000_000,
      maxPayloadBytes: 1024 * 1024,
      logLevel: 'silent',
      trustProxy: false,
      publicUrl: 'http://127.0.0.1',
    },
    db,
    workflows: temporalWorkflowRunner(client, taskQueue),
  });
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  cleanup.push(() => app.close());
  const servicesSeconds = (performance.now() - benchStarted) / 1000;

  const workersStarted = performance.now();
  const host = await startWorkerHost(
    { databaseUrl: postgres.url, temporalAddress: temporal.address, taskQueue, bareTaskQueue },
    options.inProcess,
  );
  cleanup.push(() => host.stop());
  const workersSeconds = (performance.now() - workersStarted) / 1000;

  const headers = {
    authorization: `Bearer ${key.account_sid}:${key.auth_token}`,
    'content-type': 'application/json',
  };
  const api: Api = async (method, url, body) => {
    const res = await fetch(`${baseUrl}/v2${url}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text };
  };
  return { db, client, api, baseUrl, suffix, bareTaskQueue, host, servicesSeconds, workersSeconds };
}

/** Stores the three-worker workflow (STARTER → BASIC → ENDER) every service run runs; its id. */
async function storeBenchWorkflow(api: Api): Promise<string> {
  const [s, b, e] = [newId('worker'), newId('worker'), newId('worker')];
  const stored = await api('POST', '/workflows', {
    name: 'Bench: three workers',
    workers: [
      {
        id: s,
        name: 'Start',
        type: 'STARTER',
        script: 'function main(args) { return { n: (args.script_inputs.n ?? 0) + 1 }; }',
        next: [b],
      },
      {
        id: b,
        name: 'Double',
        type: 'BASIC',
        script: 'function main(args) { return { n: args.inputs.n * 2 }; }',
        next: [e],
      },
      {
        id: e,
        name: 'End',
        type: 'ENDER',
        script: 'function main(args) { return { n: args.inputs.n + 1, done: true }; }',
      },
    ],
  });
  if (stored.status !== 200)
    throw new Error(`storing the workflow answered ${stored.status}: ${stored.body}`);
  return (JSON.parse(stored.body) as { workflow: { id: string } }).workflow.id;
}

type ServiceRun = (n: number, wait?: boolean) => Promise<ServiceSample>;
type BareRun = () => Promise<BareSample>;
type TemporalRun = (n: number) => Promise<BareSample>;

/**
 * POST /run, then `handle.result()` on the run's own Temporal workflow (its id is the run's
 * `wfex_…` id): the service's clock stopped where the bare one stops, at Temporal's completion.
 */
function serviceTemporalRunner(api: Api, client: Client, workflowId: string): TemporalRun {
  return async (n) => {
    const t0 = performance.now();
    const run = await api('POST', `/workflows/${workflowId}/run`, { parameters: { n } });
    const startedMs = performance.now() - t0;
    if (run.status !== 202) throw new Error(`run answered ${run.status}: ${run.body}`);
    const executionId = (JSON.parse(run.body) as { workflow_execution: { id: string } }).workflow_execution
      .id;
    // The 202 comes once the run is durable, and Temporal's start goes on behind it: a not-found
    // right after it is that moment, so ask again at once rather than count it a failure. The clock
    // keeps running.
    for (;;) {
      try {
        await client.workflow.getHandle(executionId).result();
        break;
      } catch (error) {
        if ((error as Error).name !== 'WorkflowNotFoundError') throw error;
        await sleep(1);
      }
    }
    return { startedMs, resultMs: performance.now() - t0, workflowId: executionId };
  };
}

/** POST /run, then poll every pollMs until the run leaves RUNNING; it must be SUCCEEDED. */
function serviceRunner(api: Api, workflowId: string, pollMs: number): ServiceRun {
  return async (n, wait = false) => {
    const wallStart = Date.now();
    const t0 = performance.now();
    const run = await api('POST', `/workflows/${workflowId}/run`, { parameters: { n } });
    const acceptedMs = performance.now() - t0;
    if (run.status !== 202) throw new Error(`run answered ${run.status}: ${run.body}`);
    const executionId = (JSON.parse(run.body) as { workflow_execution: { id: string } }).workflow_execution
      .id;
    let polls = 0;
    for (;;) {
      // Polling: a GET every pollMs. Waiting: GETs with wait_seconds, each held until the run ends.
      if (!wait) await sleep(pollMs);
      polls += 1;
      const poll = await api(
        'GET',
        `/workflows/${workflowId}/workflow_executions?workflow_execution_id=${executionId}` +
          (wait ? '&wait_seconds=30' : ''),
      );
      if (poll.status !== 200) throw new Error(`poll answered ${poll.status}: ${poll.body}`);
      const status = (JSON.parse(poll.body) as { workflow_execution: { run_status: string } })
        .workflow_execution.run_status;
      if (status === 'RUNNING') {
        if (performance.now() - t0 > RUN_TIMEOUT_MS) throw new Error(`run ${executionId} is still RUNNING`);
        continue;
      }
      if (status !== 'SUCCEEDED') throw new Error(`run ${executionId} ended ${status}`);
      const observedMs = performance.now() - t0;
      return { executionId, wallStart, acceptedMs, observedMs, polls, enderDoneMs: NaN, runClosedMs: NaN };
    }
  };
}

/** Starts a bare workflow (local or regular activities) and awaits its result. */
function bareRunner(
  client: Client,
  bareTaskQueue: string,
  suffix: string,
  kind: 'bareWorkflow' | 'bareLocalWorkflow',
): BareRun {
  let bareCount = 0;
  return async () => {
    const t0 = performance.now();
    const handle = await client.workflow.start<typeof bareWorkflow | typeof bareLocalWorkflow>(kind, {
      taskQueue: bareTaskQueue,
      workflowId: `bench-${kind}-${suffix}-${(bareCount += 1)}`,
    });
    const startedMs = performance.now() - t0;
    const result: unknown = await handle.result();
    const resultMs = performance.now() - t0;
    if (kind === 'bareWorkflow' && result !== 3)
      throw new Error(`the bare workflow returned ${String(result)}`);
    if (kind === 'bareLocalWorkflow') {
      if (!Array.isArray(result) || result.length !== 3) throw new Error('the bare workflow ran no 3 steps');
      return { startedMs, resultMs, workflowId: handle.workflowId, firstStepAt: result[0] as number };
    }
    return { startedMs, resultMs };
  };
}

/**
 * The bare local-activity workflow started eagerly in its worker's process (asked by this process
 * over IPC, as our API hands a run to a worker through PostgreSQL), awaited from here.
 */
function eagerBareRunner(host: WorkerHost, client: Client, suffix: string): BareRun {
  let count = 0;
  return async () => {
    const workflowId = `bench-eager-${suffix}-${(count += 1)}`;
    const t0 = performance.now();
    const eagerly = await host.startEagerBare(workflowId);
    const startedMs = performance.now() - t0;
    const result: unknown = await client.workflow.getHandle(workflowId).result();
    const resultMs = performance.now() - t0;
    if (!Array.isArray(result) || result.length !== 3) throw new Error('the bare workflow ran no 3 steps');
    return { startedMs, resultMs, workflowId, firstStepAt: result[0] as number, eagerly };
  };
}

/** The ENDER's and the run's `ended_at`, relative to when each request left. */
async function withDbTimes(db: Database, samples: ServiceSample[]): Promise<ServiceSample[]> {
  const rows = (await db('workflow_executions as we')
    .join('worker_executions as wk', 'wk.id', 'we.ender_worker_execution_id')
    .whereIn(
      'we.id',
      samples.map((sample) => sample.executionId),
    )
    .select('we.id', 'we.ended_at as run_ended_at', 'wk.ended_at as ender_ended_at')) as Array<{
    id: string;
    run_ended_at: Date;
    ender_ended_at: Date;
  }>;
  const byId = new Map(rows.map((row) => [row.id, row]));
  return samples.map((sample) => {
    const row = byId.get(sample.executionId);
    if (!row) throw new Error(`run ${sample.executionId} has no ENDER execution`);
    return {
      ...sample,
      enderDoneMs: row.ender_ended_at.getTime() - sample.wallStart,
      runClosedMs: row.run_ended_at.getTime() - sample.wallStart,
    };
  });
}

/** Where the runs' time went, from the worker executions' `started_at` and `ended_at`. */
async function breakdown(db: Database, samples: ServiceSample[]): Promise<Map<string, number[]>> {
  const rows = (await db('worker_executions')
    .whereIn(
      'workflow_execution_id',
      samples.map((sample) => sample.executionId),
    )
    .select('workflow_execution_id', 'worker_type', 'started_at', 'ended_at')) as Array<{
    workflow_execution_id: string;
    worker_type: string;
    started_at: Date;
    ended_at: Date;
  }>;
  const segments = new Map<string, number[]>();
  const add = (label: string, value: number) => segments.set(label, [...(segments.get(label) ?? []), value]);
  for (const sample of samples) {
    const at = (type: string, field: 'started_at' | 'ended_at') => {
      const found = rows.find(
        (row) => row.workflow_execution_id === sample.executionId && row.worker_type === type,
      );
      if (!found) throw new Error(`run ${sample.executionId} has no ${type} execution`);
      return found[field].getTime() - sample.wallStart;
    };
    add('request → 202 answered (run recorded; Temporal start behind the reply)', sample.acceptedMs);
    add('request → STARTER started_at', at('STARTER', 'started_at'));
    add('STARTER started → ended (script, DB)', at('STARTER', 'ended_at') - at('STARTER', 'started_at'));
    add(
      'STARTER ended → BASIC started (Temporal hop)',
      at('BASIC', 'started_at') - at('STARTER', 'ended_at'),
    );
    add('BASIC started → ended (script, DB)', at('BASIC', 'ended_at') - at('BASIC', 'started_at'));
    add('BASIC ended → ENDER started (Temporal hop)', at('ENDER', 'started_at') - at('BASIC', 'ended_at'));
    add('ENDER started → ended (script, DB)', at('ENDER', 'ended_at') - at('ENDER', 'started_at'));
    add('ENDER ended → run ended_at (finishRun activity)', sample.runClosedMs - at('ENDER', 'ended_at'));
    add('run ended_at → SUCCEEDED seen (polling)', sample.observedMs - sample.runClosedMs);
  }
  return segments;
}

/** The issue-20 pair: the service and the bare workflow, both timed to Temporal's completion. */
interface FairRuns {
  serviceRun: TemporalRun;
  bareRun: BareRun;
  /** The same bare workflow, started eagerly in its worker's process. */
  eagerBareRun: BareRun;
  client: Client;
}

interface LatencyResults {
  serviceLatency: ServiceSample[];
  waitLatency: ServiceSample[];
  bareLatency: BareSample[];
  fairService: BareSample[];
  fairBare: BareSample[];
  fairEagerBare: BareSample[];
  segments: Map<string, number[]>;
  firstStep: Map<string, number[]>;
  latencySeconds: number;
}

const eventMs = (event: temporal.api.history.v1.IHistoryEvent | undefined) =>
  Number(event?.eventTime?.seconds ?? 0) * 1000 + Math.floor((event?.eventTime?.nanos ?? 0) / 1e6);

/**
 * Issue 33: how soon a run's first step starts once Temporal has the workflow. From each history,
 * the WorkflowExecutionStarted event's time and the first workflow task's start (Temporal's
 * dispatch, which both pay); the first step's start is the STARTER's `started_at` for the service
 * and the first local activity's own clock for the bare workflow (one machine, one clock).
 */
async function firstStepGaps(
  db: Database,
  client: Client,
  service: BareSample[],
  bare: BareSample[],
  eagerBare: BareSample[],
): Promise<Map<string, number[]>> {
  const gaps = new Map<string, number[]>();
  const add = (label: string, value: number) => gaps.set(label, [...(gaps.get(label) ?? []), value]);
  const starters = new Map(
    (
      (await db('worker_executions')
        .whereIn(
          'workflow_execution_id',
          service.map((sample) => sample.workflowId!),
        )
        .where({ worker_type: 'STARTER' })
        .select('workflow_execution_id', 'started_at')) as Array<{
        workflow_execution_id: string;
        started_at: Date;
      }>
    ).map((row) => [row.workflow_execution_id, row.started_at.getTime()]),
  );
  const times = async (workflowId: string) => {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const events = history.events ?? [];
    const taskStarted = events.find((event) => event.workflowTaskStartedEventAttributes);
    return { started: eventMs(events[0]), taskStarted: eventMs(taskStarted) };
  };
  for (const sample of bare) {
    const { started, taskStarted } = await times(sample.workflowId!);
    add('bare: workflow started → first workflow task started (Temporal)', taskStarted - started);
    add('bare: workflow started → first local activity started', sample.firstStepAt! - started);
  }
  for (const sample of eagerBare) {
    const { started, taskStarted } = await times(sample.workflowId!);
    add(
      'bare, started eagerly: workflow started → first workflow task started (Temporal)',
      taskStarted - started,
    );
    add(
      'bare, started eagerly: workflow started → first local activity started',
      sample.firstStepAt! - started,
    );
  }
  for (const sample of service) {
    const { started, taskStarted } = await times(sample.workflowId!);
    add('service: workflow started → first workflow task started (Temporal)', taskStarted - started);
    add('service: workflow started → STARTER started_at', starters.get(sample.workflowId!)! - started);
  }
  return gaps;
}

/** 1. Latency, one run at a time; interleaved so that a load spike from elsewhere hits both. */
async function measureLatency(
  db: Database,
  sizes: Sizes,
  serviceRun: ServiceRun,
  bareRun: BareRun,
  fair: FairRuns,
): Promise<LatencyResults> {
  const latencyStarted = performance.now();
  let serviceLatency: ServiceSample[] = [];
  const waitLatency: ServiceSample[] = [];
  const bareLatency: BareSample[] = [];
  const fairService: BareSample[] = [];
  const fairBare: BareSample[] = [];
  const fairEagerBare: BareSample[] = [];
  for (let i = 0; i < sizes.latencyRuns; i++) {
    // The pair in alternating order: a run's tail on the Temporal server (its completion's
    // visibility and history writes) delays whichever run comes next, so neither side always pays it.
    if (i % 2 === 0) {
      fairService.push(await fair.serviceRun(i));
      fairBare.push(await fair.bareRun());
    } else {
      fairBare.push(await fair.bareRun());
      fairService.push(await fair.serviceRun(i));
    }
    fairEagerBare.push(await fair.eagerBareRun());
    serviceLatency.push(await serviceRun(i));
    waitLatency.push(await serviceRun(i, true));
    bareLatency.push(await bareRun());
  }
  const latencySeconds = (performance.now() - latencyStarted) / 1000;
  serviceLatency = await withDbTimes(db, serviceLatency);
  const segments = await breakdown(db, serviceLatency);
  const firstStep = await firstStepGaps(db, fair.client, fairService, fairBare, fairEagerBare);
  return {
    serviceLatency,
    waitLatency,
    bareLatency,
    fairService,
    fairBare,
    fairEagerBare,
    segments,
    firstStep,
    latencySeconds,
  };
}

interface LoadResults {
  fairServiceLoad: BareSample[];
  fairServiceSeconds: number;
  fairBareLoad: BareSample[];
  fairBareSeconds: number;
  fairServiceCpu: Array<[string, number]>;
  fairBareCpu: Array<[string, number]>;
  serviceLoad: ServiceSample[];
  serviceLoadSeconds: number;
  serviceLoadDbSeconds: number;
  serviceCpu: Array<[string, number]>;
  loadSegments: Map<string, number[]>;
  waitLoad: ServiceSample[];
  waitLoadSeconds: number;
  waitLoadDbSeconds: number;
  waitCpu: Array<[string, number]>;
  bareLoad: BareSample[];
  bareLoadSeconds: number;
  bareCpu: Array<[string, number]>;
}

/** 2. Runs per second, IN_FLIGHT at a time: polling, then waiting (wait_seconds), then bare. */
async function measureLoad(
  db: Database,
  sizes: Sizes,
  serviceRun: ServiceRun,
  bareRun: BareRun,
  fair: FairRuns,
): Promise<LoadResults> {
  // 2a. Issue 20: the service and the bare local-activity workflow, both to handle.result().
  const timed = async (run: () => Promise<BareSample>) => {
    const samples: BareSample[] = [];
    const started = performance.now();
    await bounded(sizes.throughputRuns, IN_FLIGHT, async () => {
      samples.push(await run());
    });
    return { samples, seconds: (performance.now() - started) / 1000 };
  };
  let i = 0;
  const fairServiceCpuBefore = await processTreeCpu();
  const fairServiceRun = await timed(() => fair.serviceRun((i += 1)));
  const fairServiceCpu = cpuDelta(fairServiceCpuBefore, await processTreeCpu());
  const fairBareCpuBefore = await processTreeCpu();
  const fairBareRun = await timed(fair.bareRun);
  const fairBareCpu = cpuDelta(fairBareCpuBefore, await processTreeCpu());
  let serviceLoad: ServiceSample[] = [];
  const serviceCpuBefore = await processTreeCpu();
  const serviceLoadStarted = performance.now();
  const serviceLoadWall = Date.now();
  await bounded(sizes.throughputRuns, IN_FLIGHT, async (i) => {
    serviceLoad.push(await serviceRun(i));
  });
  const serviceLoadSeconds = (performance.now() - serviceLoadStarted) / 1000;
  const serviceCpu = cpuDelta(serviceCpuBefore, await processTreeCpu());

  // 2b. The same, the client waiting on each run with wait_seconds instead of polling.
  let waitLoad: ServiceSample[] = [];
  const waitCpuBefore = await processTreeCpu();
  const waitLoadStarted = performance.now();
  const waitLoadWall = Date.now();
  await bounded(sizes.throughputRuns, IN_FLIGHT, async (i) => {
    waitLoad.push(await serviceRun(i, true));
  });
  const waitLoadSeconds = (performance.now() - waitLoadStarted) / 1000;
  const waitCpu = cpuDelta(waitCpuBefore, await processTreeCpu());
  waitLoad = await withDbTimes(db, waitLoad);
  const waitLoadDbSeconds =
    (Math.max(...waitLoad.map((sample) => sample.wallStart + sample.runClosedMs)) - waitLoadWall) / 1000;
  serviceLoad = await withDbTimes(db, serviceLoad);
  const loadSegments = await breakdown(db, serviceLoad);
  const lastClosedWall = Math.max(...serviceLoad.map((sample) => sample.wallStart + sample.runClosedMs));
  const serviceLoadDbSeconds = (lastClosedWall - serviceLoadWall) / 1000;

  const bareLoad: BareSample[] = [];
  const bareCpuBefore = await processTreeCpu();
  const bareLoadStarted = performance.now();
  await bounded(sizes.throughputRuns, IN_FLIGHT, async () => {
    bareLoad.push(await bareRun());
  });
  const bareLoadSeconds = (performance.now() - bareLoadStarted) / 1000;
  const bareCpu = cpuDelta(bareCpuBefore, await processTreeCpu());
  return {
    fairServiceLoad: fairServiceRun.samples,
    fairServiceSeconds: fairServiceRun.seconds,
    fairBareLoad: fairBareRun.samples,
    fairBareSeconds: fairBareRun.seconds,
    fairServiceCpu,
    fairBareCpu,
    serviceLoad,
    serviceLoadSeconds,
    serviceLoadDbSeconds,
    serviceCpu,
    loadSegments,
    waitLoad,
    waitLoadSeconds,
    waitLoadDbSeconds,
    waitCpu,
    bareLoad,
    bareLoadSeconds,
    bareCpu,
  };
}

function printSegments(segments: Map<string, number[]>): void {
  console.log('| segment | p50 ms | p99 ms |');
  console.log('|---|---|---|');
  for (const [label, values] of segments) {
    const { p50, p99 } = percentiles(values);
    console.log(`| ${label} | ${fmt(p50)} | ${fmt(p99)} |`);
  }
}

/** What ran where: machine, services, client. */
function reportSetup(options: BenchOptions, services: BenchServices, loadAtStart: string): void {
  const cpus = os.cpus();
  console.log(
    `\nWorkflow runs: STARTER → BASIC → ENDER (one tiny isolated-vm script each) through the API, ` +
      `beside a bare Temporal workflow of 3 no-op activities`,
  );
  console.log(
    `Machine: ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${os.platform()} ${os.release()}, ` +
      `Node ${process.version}; load average ${loadAtStart} at start, ${loadavg()} at the end`,
  );
  console.log(
    `Services: embedded PostgreSQL, Temporal dev server (temporal CLI ${TEMPORAL_CLI_VERSION}, ` +
      `${options.temporalInMemory ? 'in memory' : 'SQLite file'}) ` +
      `started in ${services.servicesSeconds.toFixed(1)} s; both Temporal Workers (createTemporalWorker and the ` +
      `bare one) in ${services.host.where}, ready in ${services.workersSeconds.toFixed(1)} s`,
  );
  console.log(
    `Client: fetch over HTTP to the Fastify app on ${services.baseUrl} with an API key; polls every ${options.pollMs} ms; ` +
      `${options.sizes.warmUpRuns} warm-up runs each${options.quick ? '; --quick' : ''}`,
  );
}

function reportLatency(sizes: Sizes, latency: LatencyResults): void {
  const { serviceLatency, waitLatency, bareLatency, segments, latencySeconds } = latency;
  const bareResult = percentiles(bareLatency.map((x) => x.resultMs));
  const fairBare = percentiles(latency.fairBare.map((x) => x.resultMs));
  const row = (label: string, values: number[], vsBare: string) => {
    const { p50, p99 } = percentiles(values);
    console.log(`| ${label} | ${fmt(p50)} | ${fmt(p99)} | ${vsBare} |`);
  };
  console.log(
    `\nLatency, one run at a time: ${sizes.latencyRuns} runs of each case below, interleaved ` +
      `(${latencySeconds.toFixed(1)} s)`,
  );
  console.log('| case | p50 ms | p99 ms | p50 vs bare |');
  console.log('|---|---|---|---|');
  console.log("| **issue 20: both clocks at Temporal's completion** | | | |");
  row(
    'bare, 3 local activities: client.workflow.start() answered',
    latency.fairBare.map((x) => x.startedMs),
    '',
  );
  row(
    'bare, 3 local activities: handle.result() resolved',
    latency.fairBare.map((x) => x.resultMs),
    'baseline',
  );
  row(
    `bare, started eagerly in its worker's process (${latency.fairEagerBare.filter((x) => x.eagerly).length} of ${latency.fairEagerBare.length} eagerly): start answered`,
    latency.fairEagerBare.map((x) => x.startedMs),
    '',
  );
  row(
    "bare, started eagerly in its worker's process: handle.result() resolved",
    latency.fairEagerBare.map((x) => x.resultMs),
    ratio(percentiles(latency.fairEagerBare.map((x) => x.resultMs)).p50, fairBare.p50, 2),
  );
  row(
    'service: POST /run answered 202',
    latency.fairService.map((x) => x.startedMs),
    '',
  );
  row(
    "service: handle.result() on the run's wfex_… workflow resolved",
    latency.fairService.map((x) => x.resultMs),
    ratio(percentiles(latency.fairService.map((x) => x.resultMs)).p50, fairBare.p50, 2),
  );
  row(
    "service: the same, vs the bare workflow started eagerly in its worker's process",
    latency.fairService.map((x) => x.resultMs),
    ratio(
      percentiles(latency.fairService.map((x) => x.resultMs)).p50,
      percentiles(latency.fairEagerBare.map((x) => x.resultMs)).p50,
      2,
    ),
  );
  console.log(
    "| **issue-6 figures (kept): bare of 3 regular activities; service clocks at the database or the client's poll** | | | |",
  );
  row(
    'bare: client.workflow.start() answered',
    bareLatency.map((x) => x.startedMs),
    '',
  );
  row(
    'bare: handle.result() resolved',
    bareLatency.map((x) => x.resultMs),
    'baseline',
  );
  row(
    'service: POST /run answered 202',
    serviceLatency.map((x) => x.acceptedMs),
    '',
  );
  row(
    'service: ENDER ended_at (DB)',
    serviceLatency.map((x) => x.enderDoneMs),
    ratio(percentiles(serviceLatency.map((x) => x.enderDoneMs)).p50, bareResult.p50),
  );
  row(
    'service: run ended_at (DB, finishRun)',
    serviceLatency.map((x) => x.runClosedMs),
    ratio(percentiles(serviceLatency.map((x) => x.runClosedMs)).p50, bareResult.p50),
  );
  row(
    'service: SUCCEEDED seen by polling',
    serviceLatency.map((x) => x.observedMs),
    ratio(percentiles(serviceLatency.map((x) => x.observedMs)).p50, bareResult.p50),
  );
  row(
    'service: SUCCEEDED answered to a GET with wait_seconds (separate runs)',
    waitLatency.map((x) => x.observedMs),
    ratio(percentiles(waitLatency.map((x) => x.observedMs)).p50, bareResult.p50),
  );
  row(
    'service: polling overhead (seen − run ended_at)',
    serviceLatency.map((x) => x.observedMs - x.runClosedMs),
    '',
  );
  const meanPolls = serviceLatency.reduce((sum, x) => sum + x.polls, 0) / serviceLatency.length;
  console.log(`(${meanPolls.toFixed(1)} polls per run on average)`);

  console.log(
    `\nWhere a service run's time goes (the same ${sizes.latencyRuns} runs; the workers' started_at and ` +
      `ended_at, ms resolution; bare handle.result() p50 ÷ 3 activities: ${fmt(bareResult.p50 / 3)} ms)`,
  );
  printSegments(segments);
  console.log(
    `\nIssue 33: from the workflow's start (its WorkflowExecutionStarted event) to its first step, the ` +
      `same ${sizes.latencyRuns} runs of each (Temporal's times and the steps' on one machine's clock, ms resolution)`,
  );
  printSegments(latency.firstStep);
}

function reportLoad(sizes: Sizes, load: LoadResults): void {
  const { serviceLoad, waitLoad, bareLoad } = load;
  const bareRate = sizes.throughputRuns / load.bareLoadSeconds;
  const serviceRate = sizes.throughputRuns / load.serviceLoadSeconds;
  const serviceDbRate = sizes.throughputRuns / load.serviceLoadDbSeconds;
  const fairBareRate = sizes.throughputRuns / load.fairBareSeconds;
  const fairServiceRate = sizes.throughputRuns / load.fairServiceSeconds;
  console.log(`\nSustained: ${sizes.throughputRuns} runs per case, ${IN_FLIGHT} in flight`);
  console.log('| case | seconds | runs/s | p50 ms | p99 ms | runs/s vs bare |');
  console.log('|---|---|---|---|---|---|');
  const loadRow = (label: string, seconds: number, rate: number, values: number[], vsBare: string) => {
    const { p50, p99 } = percentiles(values);
    console.log(
      `| ${label} | ${seconds.toFixed(2)} | ${rate.toFixed(1)} | ${fmt(p50)} | ${fmt(p99)} | ${vsBare} |`,
    );
  };
  console.log('| **issue 20: both to handle.result()** | | | | | |');
  loadRow(
    'bare, 3 local activities: start() to result()',
    load.fairBareSeconds,
    fairBareRate,
    load.fairBareLoad.map((x) => x.resultMs),
    'baseline',
  );
  loadRow(
    'service: POST /run to handle.result() on its wfex_… workflow',
    load.fairServiceSeconds,
    fairServiceRate,
    load.fairServiceLoad.map((x) => x.resultMs),
    ratio(fairServiceRate, fairBareRate, 2),
  );
  console.log('| **issue-6 figures (kept): bare of 3 regular activities** | | | | | |');
  loadRow(
    'bare: start() to result()',
    load.bareLoadSeconds,
    bareRate,
    bareLoad.map((x) => x.resultMs),
    'baseline',
  );
  loadRow(
    'service: POST /run to run ended_at (DB)',
    load.serviceLoadDbSeconds,
    serviceDbRate,
    serviceLoad.map((x) => x.runClosedMs),
    ratio(serviceDbRate, bareRate, 2),
  );
  loadRow(
    'service: POST /run to SUCCEEDED seen by polling',
    load.serviceLoadSeconds,
    serviceRate,
    serviceLoad.map((x) => x.observedMs),
    ratio(serviceRate, bareRate, 2),
  );
  loadRow(
    'service, waiting (wait_seconds): POST /run to run ended_at (DB)',
    load.waitLoadDbSeconds,
    sizes.throughputRuns / load.waitLoadDbSeconds,
    waitLoad.map((x) => x.runClosedMs),
    ratio(sizes.throughputRuns / load.waitLoadDbSeconds, bareRate, 2),
  );
  loadRow(
    'service, waiting (wait_seconds): POST /run to SUCCEEDED answered',
    load.waitLoadSeconds,
    sizes.throughputRuns / load.waitLoadSeconds,
    waitLoad.map((x) => x.observedMs),
    ratio(sizes.throughputRuns / load.waitLoadSeconds, bareRate, 2),
  );
  const perRun = (usage: Array<[string, number]>) =>
    usage.length === 0
      ? 'not measured (no /proc)'
      : `${((1000 * usage.reduce((sum, [, s]) => sum + s, 0)) / sizes.throughputRuns).toFixed(0)} ms: ` +
        usage.map(([name, s]) => `${name} ${((1000 * s) / sizes.throughputRuns).toFixed(0)}`).join(', ');
  console.log(
    `CPU per run (this process tree, user + system): issue 20 service, to handle.result() ${perRun(load.fairServiceCpu)}`,
  );
  console.log(
    `CPU per run (this process tree, user + system): issue 20 bare, 3 local activities ${perRun(load.fairBareCpu)}`,
  );
  console.log(`CPU per run (this process tree, user + system): service, polling ${perRun(load.serviceCpu)}`);
  console.log(`CPU per run (this process tree, user + system): service, waiting ${perRun(load.waitCpu)}`);
  console.log(`CPU per run (this process tree, user + system): bare ${perRun(load.bareCpu)}`);
  console.log(`\nWhere a sustained service run's time goes (the same ${sizes.throughputRuns} runs)`);
  printSegments(load.loadSegments);
  console.log(
    `(polling: ${(serviceLoad.reduce((sum, x) => sum + x.polls, 0) / serviceLoad.length).toFixed(1)} GETs per run; ` +
      `waiting: ${(waitLoad.reduce((sum, x) => sum + x.polls, 0) / waitLoad.length).toFixed(1)})`,
  );
}

/** Issue 33's targets (issue 20's, raised) beside today's figures (both clocks at Temporal's completion). */
function reportTargets(sizes: Sizes, latency: LatencyResults, load: LoadResults): void {
  const latencyRatio =
    percentiles(latency.fairService.map((x) => x.resultMs)).p50 /
    percentiles(latency.fairBare.map((x) => x.resultMs)).p50;
  const rateRatio = load.fairBareSeconds / load.fairServiceSeconds;
  console.log(
    "\nIssue 33 targets (vs a bare workflow of 3 local activities, both timed to Temporal's completion):",
  );
  console.log('| measure | today | target | met | moonshot | met |');
  console.log('|---|---|---|---|---|---|');
  console.log(
    `| latency p50 vs bare (one run at a time, ${sizes.latencyRuns} each) | ×${latencyRatio.toFixed(2)} | ≤ ×1.2 | ${latencyRatio <= 1.2 ? 'yes' : 'no'} | ≤ ×1.0 | ${latencyRatio <= 1 ? 'yes' : 'no'} |`,
  );
  console.log(
    `| sustained runs/s vs bare (${sizes.throughputRuns} runs, ${IN_FLIGHT} in flight) | ×${rateRatio.toFixed(2)} | ≥ ×0.9 | ${rateRatio >= 0.9 ? 'yes' : 'no'} | ≥ ×1.0 | ${rateRatio >= 1 ? 'yes' : 'no'} |`,
  );
  const firstStep = latency.firstStep.get('service: workflow started → STARTER started_at');
  if (firstStep !== undefined) {
    const gap = percentiles(firstStep).p50;
    console.log(
      `| workflow started → first step started, p50 (Temporal's start event → STARTER started_at) | ${gap.toFixed(0)} ms | a few ms (≤ 5) | ${gap <= 5 ? 'yes' : 'no'} | | |`,
    );
  }
  const eagerRatio =
    percentiles(latency.fairService.map((x) => x.resultMs)).p50 /
    percentiles(latency.fairEagerBare.map((x) => x.resultMs)).p50;
  // The strongest fair baseline since runs start eagerly: the bare workflow started the same way.
  console.log(
    `| latency p50 vs the bare workflow started eagerly in its worker's process, as ours now starts | ×${eagerRatio.toFixed(2)} | ≤ ×1.2 | ${eagerRatio <= 1.2 ? 'yes' : 'no'} | ≤ ×1.0 | ${eagerRatio <= 1 ? 'yes' : 'no'} |`,
  );
}

export async function runWorkflowBench(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const options = benchOptions(argv);
  const cliPath = findTemporalCli({
    cliPath: process.env.TEMPORAL_CLI_PATH ?? null,
    projectRoot: PROJECT_ROOT,
  });
  if (cliPath === null) throw new TemporalCliMissingError();

  const benchStarted = performance.now();
  const loadAtStart = loadavg();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pas-bench-workflows-'));
  const ports = await freePorts(3);
  const cleanup: Array<() => Promise<unknown>> = [() => rm(dataDir, { recursive: true, force: true })];
  const runCleanup = async () => {
    for (const step of cleanup.reverse()) await step().catch((error: unknown) => console.error(error));
  };
  try {
    const services = await startServices(options, cliPath, dataDir, ports, benchStarted, cleanup);
    const workflowId = await storeBenchWorkflow(services.api);
    const serviceRun = serviceRunner(services.api, workflowId, options.pollMs);
    const bareRun = bareRunner(services.client, services.bareTaskQueue, services.suffix, 'bareWorkflow');
    const fair: FairRuns = {
      serviceRun: serviceTemporalRunner(services.api, services.client, workflowId),
      client: services.client,
      bareRun: bareRunner(services.client, services.bareTaskQueue, services.suffix, 'bareLocalWorkflow'),
      eagerBareRun: eagerBareRunner(services.host, services.client, services.suffix),
    };

    // Warm-up: workflow bundles, isolates, JIT, pools and prepared plans on both sides.
    for (let i = 0; i < options.sizes.warmUpRuns; i++) {
      await serviceRun(i);
      await bareRun();
      await fair.bareRun();
      await fair.eagerBareRun();
    }
    const latency = await measureLatency(services.db, options.sizes, serviceRun, bareRun, fair);
    const load = await measureLoad(services.db, options.sizes, serviceRun, bareRun, fair);

    reportSetup(options, services, loadAtStart);
    reportLatency(options.sizes, latency);
    reportLoad(options.sizes, load);
    reportTargets(options.sizes, latency, load);
    console.log(`(bench total ${((performance.now() - benchStarted) / 1000).toFixed(1)} s)`);
  } catch (error) {
    // Printed before the clean-up: closing the Temporal connection under runs still in flight can
    // end the process from a gRPC retry timer, which would hide what went wrong.
    console.error('workflow bench failed:', error);
    throw error;
  } finally {
    await runCleanup();
  }
}
