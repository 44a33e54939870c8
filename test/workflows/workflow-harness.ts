import type { temporal } from '@temporalio/proto';
import { NativeConnection, type Worker } from '@temporalio/worker';
import path from 'node:path';
import { startEnvironmentBuilder } from '../../engine/worker-templates/python-environments';
import type { LightMyRequestResponse } from 'fastify';
import type { Database } from '../../engine/platform/database';
import { newId } from '../../engine/platform/ids';
import type { WorkflowRunner } from '../../engine/workflows/workflow-runner';
import type { SandboxLimits } from '../../plugins/sandbox/script-sandbox';
import { createTemporalWorker } from '../../workers/temporal-worker';
import { Client } from '@temporalio/client';
import { type RunHandoff, startRunHandoff } from '../../engine/workflows/run-handoff';
import { temporalWorkflowRunner } from '../../engine/workflows/temporal-workflow-runner';
import {
  createTestAccount,
  createTestApp,
  TEST_SECRETS,
  temporalAddress,
  type TestAccount,
  type TestApp,
} from '../support/test-app';
import { createTestDatabase } from '../support/test-database';
import type { OutboundSettings } from '../../engine/integrations/outbound-calls';
import { parseCidrList } from '../../engine/integrations/egress-policy';
import { type AlertDispatcher, startAlertDispatcher } from '../../engine/workflows/failure-alerts';
import { readFileSync } from 'node:fs';

/**
 * What the suite's workers reach: loopback only (the tests' own HTTP and SMTP servers, allowed as an
 * operator would allow an internal vendor), the test CA trusted as EGRESS_CA_FILE would add it, and
 * the master key the suite's apps share.
 */
export const TEST_OUTBOUND: OutboundSettings = {
  keyring: TEST_SECRETS,
  policy: {
    privateAllow: parseCidrList('127.0.0.1/32, ::1/128'),
    maxResponseBytes: 10 * 1024 * 1024,
    extraCa: readFileSync(path.join(__dirname, '..', 'fixtures', 'tls', 'ca.pem'), 'utf8'),
  },
};

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * What the workflow suites share: a fresh database, the real app, an account, and (when asked) a
 * real Temporal Worker on a task queue of its own, polling the suite's dev server.
 */
export interface WorkflowHarness {
  db: Database;
  t: TestApp;
  account: TestAccount;
  /** The suite's own task queue (its Worker polls it; its schedules' launchers run on it). */
  taskQueue: string;
  call(method: Method, url: string, payload?: object, who?: TestAccount): Promise<LightMyRequestResponse>;
  /** POST /workflows, expecting 200; returns the stored workflow. */
  store(body: object, who?: TestAccount): Promise<Workflow>;
  /** POST /workflows/:id/run, expecting 202; returns the execution as first answered. */
  run(workflowId: string, parameters?: object, who?: TestAccount): Promise<Execution>;
  /** Polls the execution until it leaves RUNNING (the client's polling flow). */
  pollUntilEnded(workflowId: string, executionId: string, who?: TestAccount): Promise<Execution>;
  /** GET /workflows/worker_executions for one worker execution, with its result. */
  workerExecution(id: string): Promise<WorkerExecution>;
  /** The worker's handoff of run starts (`handoff: true`), else null. */
  handoff: RunHandoff | null;
  /** The failure-alert dispatcher (`alerts: true`), else null. */
  alerts: AlertDispatcher | null;
  /** The suite's database's connection URL (for child processes). */
  databaseUrl: string;
  close(): Promise<void>;
}

export interface Workflow {
  id: string;
  name: string;
  workers: Array<{ id: string; type: string }>;
  [key: string]: unknown;
}

export interface Execution {
  id: string;
  run_status: string;
  status: string;
  ender_worker_id: string | null;
  ender_worker_execution_id: string | null;
  [key: string]: unknown;
}

export interface WorkerExecution {
  id: string;
  status: string;
  worker_id: string;
  worker_type: string;
  parallel_index: number;
  result: unknown;
  error_message: string | null;
  input_params: Record<string, unknown>;
  logs: Array<{ level: string; message: string }>;
  [key: string]: unknown;
}

/**
 * The worker steps of a run's history, in order: a regular activity by its activity id, a local
 * activity (a `core_local_activity` marker) by its summary; both read `<worker id>#<parallel index>`.
 */
export function stepsInHistory(
  history: temporal.api.history.v1.IHistory,
): Array<{ kind: 'activity' | 'local'; step: string; type: string }> {
  const steps: Array<{ kind: 'activity' | 'local'; step: string; type: string }> = [];
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) {
      steps.push({
        kind: 'activity',
        step: scheduled.activityId ?? '',
        type: scheduled.activityType?.name ?? '',
      });
    }
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_local_activity') {
      const decode = (data: Uint8Array | null | undefined) =>
        data ? (JSON.parse(Buffer.from(data).toString('utf8')) as unknown) : null;
      const summary = decode(event.userMetadata?.summary?.data);
      const info = decode(marker.details?.data?.payloads?.[0]?.data) as { activity_type?: string } | null;
      steps.push({
        kind: 'local',
        step: typeof summary === 'string' ? summary : '',
        type: info?.activity_type ?? '',
      });
    }
  }
  return steps;
}

/** A fresh worker id: `wrkr_` plus 25 characters. */
export const workerId = () => newId('worker');

/** The suites' Python environments: project-local (ignored by git), kept between runs as a cache. */
export const TEST_PYTHON_ENVIRONMENTS = path.resolve(__dirname, '..', '..', '.venvs', 'python-environments');

export async function startHarness(
  options: {
    worker?: boolean;
    sandboxLimits?: Partial<SandboxLimits>;
    /** Build PENDING Python environments in the background, as the worker process does. */
    environmentBuilder?: boolean;
    /** Wraps the API's Temporal runner (a test that holds or watches runs' starts). */
    runner?: (runner: WorkflowRunner) => WorkflowRunner;
    /**
     * The worker also takes handed-off run starts, as the worker process does (run-handoff.ts), with
     * its eager runner wrapped by `handoffRunner` if given.
     */
    handoff?: boolean;
    handoffRunner?: (runner: WorkflowRunner) => WorkflowRunner;
    /** The worker's outbound settings; TEST_OUTBOUND (loopback allowed, the test CA trusted) otherwise. */
    outbound?: OutboundSettings;
    /** Runs the failure-alert dispatcher beside the worker, as the worker process does. */
    alerts?: boolean;
  } = {},
): Promise<WorkflowHarness> {
  const taskQueue = `workflows-${newId('worker').slice(5, 17)}`;
  const database = await createTestDatabase();
  const { db } = database;
  const t = await createTestApp(db, { taskQueue, ...(options.runner ? { runner: options.runner } : {}) });
  const account = await createTestAccount(db);
  let connection: NativeConnection | null = null;
  let worker: Worker | null = null;
  let running: Promise<void> | null = null;
  let handoff: RunHandoff | null = null;
  if (options.worker) {
    connection = await NativeConnection.connect({ address: temporalAddress() });
    worker = await createTemporalWorker({
      db,
      connection,
      client: t.temporal,
      namespace: 'default',
      taskQueue,
      publicUrl: 'http://pas.test',
      sandboxLimits: options.sandboxLimits,
      pythonEnvironments: TEST_PYTHON_ENVIRONMENTS,
      outbound: options.outbound ?? TEST_OUTBOUND,
    });
    running = worker.run();
    if (options.handoff) {
      const eager = temporalWorkflowRunner(new Client({ connection, namespace: 'default' }), taskQueue, {
        eagerStart: true,
      });
      handoff = startRunHandoff(db, (options.handoffRunner ?? ((runner) => runner))(eager));
    }
  }
  const builder = options.environmentBuilder
    ? startEnvironmentBuilder(db, TEST_PYTHON_ENVIRONMENTS, { intervalMs: 500 })
    : null;
  const alerts = options.alerts
    ? startAlertDispatcher(
        {
          db,
          outbound: options.outbound ?? TEST_OUTBOUND,
          runner: temporalWorkflowRunner(t.temporal, taskQueue),
          publicUrl: 'http://pas.test',
        },
        { intervalMs: 500 },
      )
    : null;

  const call: WorkflowHarness['call'] = (method, url, payload, who = account) =>
    t.app.inject({ method, url, payload, headers: { authorization: who.bearer } });

  return {
    db,
    t,
    account,
    taskQueue,
    call,
    async store(body, who) {
      const res = await call('POST', '/v2/workflows', body, who);
      if (res.statusCode !== 200) throw new Error(`store: ${res.statusCode} ${res.body}`);
      return res.json().workflow;
    },
    async run(workflowId, parameters = {}, who) {
      const res = await call('POST', `/v2/workflows/${workflowId}/run`, { parameters }, who);
      if (res.statusCode !== 202) throw new Error(`run: ${res.statusCode} ${res.body}`);
      return res.json().workflow_execution;
    },
    async pollUntilEnded(workflowId, executionId, who) {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const res = await call(
          'GET',
          `/v2/workflows/${workflowId}/workflow_executions?workflow_execution_id=${executionId}&with_resume=True`,
          undefined,
          who,
        );
        if (res.statusCode !== 200) throw new Error(`poll: ${res.statusCode} ${res.body}`);
        const execution = res.json().workflow_execution;
        if (execution.run_status !== 'RUNNING') return execution;
        if (Date.now() > deadline) throw new Error(`run ${executionId} did not end within 60 s`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
    async workerExecution(id) {
      const res = await call('GET', `/v2/workflows/worker_executions?worker_execution_id=${id}`);
      if (res.statusCode !== 200) throw new Error(`worker execution: ${res.statusCode} ${res.body}`);
      return res.json().worker_execution;
    },
    handoff,
    alerts,
    databaseUrl: database.url,
    async close() {
      await builder?.stop();
      await alerts?.close();
      await handoff?.close();
      if (worker && running) {
        worker.shutdown();
        await running;
      }
      await connection?.close();
      await t.close();
      await database.drop();
    },
  };
}
