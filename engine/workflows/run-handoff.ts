import type pg from 'pg';
import type { Database } from '../platform/database';
import { connectionOf, ListenConnection } from '../platform/listen-connection';
import { dispatchHandedOff } from './run-dispatcher';
import type { WorkflowRunner } from './workflow-runner';

/** Channel a handed-off outbox row's insert notifies (migrations/20261128020000_run_handoff.ts). */
export const RUN_START_CHANNEL = 'pas_run_start';
/** The `application_name` of a worker's handoff connection: how a run request sees one listening. */
export const HANDOFF_APPLICATION_NAME = 'pas-run-handoff';
/** How long a request trusts what it last read about listening workers. */
const PROBE_TTL_MS = 2_000;

/**
 * Run starts handed to a worker, for Temporal's eager start. A run request that sees a worker
 * listening (`workersListen`) writes its outbox row handed off; the insert notifies `pas_run_start`
 * on commit; each listening worker tries to claim the row, and the one that does starts the workflow
 * with `requestEagerStart` on a client sharing its worker's connection. Temporal then answers the
 * start with the run's first workflow task, which goes straight to that worker: no trip through the
 * task queue (15 to 30 ms on the dev server here), so the first step begins about 12 ms after the
 * workflow's start, 10 of them the SDK's first activation of the workflow. Nothing else changes: the row, its claim and its lease are the outbox's, so a
 * run is started once, and a row no worker claims within HANDOFF_HOLD_MS (none listening after all,
 * a notification lost) is started by the request that wrote it, as before.
 */
export interface RunHandoff {
  /** Whether the worker is listening now. */
  readonly active: boolean;
  /** Stops listening, then waits for the starts it has begun. */
  close(): Promise<void>;
}

export function startRunHandoff(
  db: Database,
  /** The worker process's eager runner (temporalWorkflowRunner with eagerStart). */
  runner: WorkflowRunner,
  log: (message: string, error?: unknown) => void = () => undefined,
): RunHandoff {
  const inFlight = new Set<Promise<unknown>>();
  let closed = false;
  const listener = new ListenConnection(handoffConnection(connectionOf(db)), RUN_START_CHANNEL, {
    notified: (executionId) => {
      if (closed || executionId === '') return;
      const dispatch = dispatchHandedOff(db, runner, executionId);
      inFlight.add(dispatch);
      void dispatch.finally(() => inFlight.delete(dispatch));
    },
    // A row whose notice came while nobody listened is started by its writer after its hold.
    up: () => undefined,
    down: (error) => {
      if (!closed) log('run handoff off: its LISTEN connection was lost; retrying', error);
    },
  });
  return {
    get active() {
      return listener.active;
    },
    async close() {
      closed = true;
      await listener.close();
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}

/** The pool's settings under the handoff's application name (knex keeps the password unenumerable). */
export function handoffConnection(connection: string | pg.ClientConfig): pg.ClientConfig {
  if (typeof connection === 'string') {
    return { connectionString: connection, application_name: HANDOFF_APPLICATION_NAME };
  }
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(connection)) as pg.ClientConfig;
  return Object.assign(copy, { application_name: HANDOFF_APPLICATION_NAME });
}

interface Probe {
  listening: boolean;
  readAt: number;
  reading: Promise<void> | null;
}

const probes = new WeakMap<Database, Probe>();

/**
 * Whether a worker listens for handed-off starts on `db`'s database, as last read (at most
 * PROBE_TTL_MS ago; an older answer is read again behind this call). False until first read, so a
 * process's first runs are started by their request, as when no worker listens.
 */
export function workersListen(db: Database): boolean {
  let probe = probes.get(db);
  if (probe === undefined) {
    probe = { listening: false, readAt: -Infinity, reading: null };
    probes.set(db, probe);
  }
  if (probe.reading === null && performance.now() - probe.readAt > PROBE_TTL_MS) {
    const entry = probe;
    entry.reading = readListening(db).then(
      (listening) => {
        entry.listening = listening;
        entry.readAt = performance.now();
        entry.reading = null;
      },
      () => {
        // Unknown: runs are started by their requests until the next read says otherwise.
        entry.listening = false;
        entry.readAt = performance.now();
        entry.reading = null;
      },
    );
  }
  return probe.listening;
}

async function readListening(db: Database): Promise<boolean> {
  const { rows } = (await db.raw(
    `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
                     WHERE datname = current_database() AND application_name = ?) AS listening`,
    [HANDOFF_APPLICATION_NAME],
  )) as { rows: Array<{ listening: boolean }> };
  return rows[0]?.listening === true;
}

/** Reads again now (tests: a worker just started or stopped listening). */
export async function refreshWorkersListen(db: Database): Promise<boolean> {
  workersListen(db);
  const probe = probes.get(db)!;
  if (probe.reading) await probe.reading;
  probe.readAt = -Infinity;
  workersListen(db);
  await probe.reading;
  return probe.listening;
}
