import type pg from 'pg';
import type { Database } from '../platform/database';
import { connectionOf, ListenConnection } from '../platform/listen-connection';

/** Channel the run-end trigger notifies (migrations/20261125000000_run_end_notify.ts). */
export const RUN_ENDED_CHANNEL = 'pas_run_ended';
/** Longest a waiter sleeps before its caller reads the run again, notified or not. */
export const RECHECK_MS = 1_000;
/** Without a LISTEN connection, waiters wake this often instead (the caller reads the run again). */
const UNLISTENED_RECHECK_MS = 250;
/** Runs waited on at once per process; past it a wait is a short sleep (the caller reads again). */
const MAX_WAITED_RUNS = 10_000;

/**
 * Lets a request wait for a run to leave RUNNING without polling the database: one LISTEN
 * connection per API process hears `pas_run_ended` and wakes whoever waits on that execution.
 * A wait never relies on the notification alone: it returns after at most RECHECK_MS (250 ms
 * while the LISTEN connection is down), and the caller reads the run again, so a lost
 * notification or connection costs latency, never a wrong answer.
 */
export class RunEndWaiter {
  private readonly waiting = new Map<string, Set<() => void>>();
  private readonly listener: ListenConnection;
  private closed = false;

  constructor(
    connection: string | pg.ClientConfig,
    private readonly log: (message: string, error?: unknown) => void = () => undefined,
  ) {
    this.listener = new ListenConnection(connection, RUN_ENDED_CHANNEL, {
      notified: (executionId) => this.notify(executionId),
      // A run may have ended while nobody listened: waiters read again.
      up: () => this.wakeAll(),
      // Whoever waits reads the run again now rather than sleeping on a connection that is gone.
      down: (error) => {
        this.wakeAll();
        if (!this.closed)
          this.log('run-end notifications off: their LISTEN connection was lost; retrying', error);
      },
    });
  }

  /**
   * Starts waiting on `executionId` now (so a notification that arrives before the caller reads
   * the run is not missed); `until(ms)` resolves true when woken (the run's notification, or the
   * LISTEN connection going down or coming back), false after min(ms, the recheck interval);
   * `cancel()` stops waiting. Call `cancel` in every case.
   */
  subscribe(executionId: string): { until(ms: number): Promise<boolean>; cancel(): void } {
    let wake: () => void = () => undefined;
    let woken = false;
    const notified = new Promise<void>((resolve) => {
      wake = () => {
        woken = true;
        resolve();
      };
    });
    const tracked = this.waiting.size < MAX_WAITED_RUNS || this.waiting.has(executionId);
    if (tracked) {
      let set = this.waiting.get(executionId);
      if (!set) this.waiting.set(executionId, (set = new Set()));
      set.add(wake);
    }
    const cancel = () => {
      const set = this.waiting.get(executionId);
      if (!set) return;
      set.delete(wake);
      if (set.size === 0) this.waiting.delete(executionId);
    };
    return {
      until: async (ms) => {
        if (woken) return true;
        if (this.closed) return false;
        const limit = Math.max(
          0,
          Math.min(ms, this.listener.active && tracked ? RECHECK_MS : UNLISTENED_RECHECK_MS),
        );
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          notified,
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, limit);
          }),
        ]);
        clearTimeout(timer);
        return woken;
      },
      cancel,
    };
  }

  /** Closed (the process is stopping): callers answer what they have instead of waiting. */
  get closing(): boolean {
    return this.closed;
  }

  /** Whether notifications are being heard (the LISTEN connection is up). */
  get active(): boolean {
    return this.listener.active;
  }

  private notify(executionId: string): void {
    const set = this.waiting.get(executionId);
    if (!set) return;
    this.waiting.delete(executionId);
    for (const wake of set) wake();
  }

  private wakeAll(): void {
    const sets = [...this.waiting.values()];
    this.waiting.clear();
    for (const set of sets) for (const wake of set) wake();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wakeAll();
    await this.listener.close();
  }
}

/** A waiter listening on the database `db` is connected to. */
export function startRunEndWaiter(
  db: Database,
  log?: (message: string, error?: unknown) => void,
): RunEndWaiter {
  return new RunEndWaiter(connectionOf(db), log);
}
