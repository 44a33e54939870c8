import pg from 'pg';
import type { Database } from '../db/database';

/** Channel the run-end trigger notifies (migrations/20261125000000_run_end_notify.ts). */
export const RUN_ENDED_CHANNEL = 'pas_run_ended';
const RECONNECT_MS = 1_000;
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
  private listening = false;
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly connection: string | pg.ClientConfig,
    private readonly log: (message: string, error?: unknown) => void = () => undefined,
  ) {
    void this.listen();
  }

  /**
   * Starts waiting on `executionId` now (so a notification that arrives before the caller reads
   * the run is not missed); `until(ms)` resolves on the notification (true) or after min(ms, the
   * recheck interval) (false); `cancel()` stops waiting. Call `cancel` in every case.
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
          Math.min(ms, this.listening && tracked ? RECHECK_MS : UNLISTENED_RECHECK_MS),
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
    return this.listening;
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

  private async listen(): Promise<void> {
    this.timer = null;
    if (this.closed) return;
    const client = new pg.Client(
      typeof this.connection === 'string' ? { connectionString: this.connection } : this.connection,
    );
    this.client = client;
    const lost = (error?: unknown) => {
      if (this.client !== client) return;
      this.client = null;
      this.listening = false;
      // Whoever waits reads the run again now rather than sleeping on a connection that is gone.
      this.wakeAll();
      client.end().catch(() => undefined);
      if (!this.closed) {
        this.log('run-end notifications off: their LISTEN connection was lost; retrying', error);
        this.timer = setTimeout(() => void this.listen(), RECONNECT_MS);
      }
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      if (message.channel === RUN_ENDED_CHANNEL && message.payload) this.notify(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${RUN_ENDED_CHANNEL}`);
      if (this.client !== client) return;
      this.listening = true;
      // A run may have ended while nobody listened: waiters read again.
      this.wakeAll();
    } catch (error) {
      lost(error);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.listening = false;
    this.wakeAll();
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}

/** A waiter listening on the database `db` is connected to. */
export function startRunEndWaiter(
  db: Database,
  log?: (message: string, error?: unknown) => void,
): RunEndWaiter {
  const connection = (db.client as { config: { connection: string | pg.ClientConfig } }).config.connection;
  return new RunEndWaiter(connection, log);
}
