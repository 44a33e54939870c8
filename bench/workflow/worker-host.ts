/**
 * The workflow bench's Temporal Workers: the service's (createTemporalWorker) and the bare one
 * (bench/workflow/bare-workflow.ts), in a child process by default, as `npm start` runs the worker
 * beside the API, or in the bench process (`--worker=in-process`). The child is this module run again
 * with WORKER_FLAG; the bench talks to it over IPC.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { connectDatabase } from '../../engine/platform/database';
import { temporalWorkflowRunner } from '../../engine/workflows/temporal-workflow-runner';
import { startRunHandoff } from '../../engine/workflows/run-handoff';
import { createTemporalWorker } from '../../workers/temporal-worker';
import type { BareActivities, bareLocalWorkflow } from './bare-workflow';
import { NAMESPACE } from './options';

const WORKER_FLAG = '--pas-bench-workflow-worker';

/** What the worker host needs to poll both task queues. */
export interface WorkerHostConfig {
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

export interface WorkerHost {
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

export async function startWorkerHost(config: WorkerHostConfig, inProcess: boolean): Promise<WorkerHost> {
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
