import type { Database } from './database';
import { runPrepared } from './prepared-statements';

export interface RateLimitState {
  allowed: number;
  remaining: number;
  /** Seconds until the current one-minute window ends. */
  resetSeconds: number;
  limited: boolean;
}

const WINDOW_MS = 60_000;
/** The most requests one lease reserves (a very high limit still writes its count now and then). */
const MAX_LEASE = 1_000;
/** A lease is at most this share of what is left of the budget, so leases shrink to none near the limit. */
const LEASE_SHARE = 4;

/** One bucket's window in this process. */
interface WindowState {
  bucket: string;
  windowStart: number;
  limit: number;
  /** The window's count in PostgreSQL as last read (every process's charges, leases included). */
  known: number;
  /** The next position of this process's lease, and its last: positions reserved here, not yet used. */
  leaseNext: number;
  leaseEnd: number;
  /** Requests without a lease to draw on, in arrival order, waiting for the next statement. */
  waiters: Array<{ resolve: (position: number) => void; reject: (error: unknown) => void }>;
}

interface Limiter {
  windows: Map<string, WindowState>;
  scheduled: boolean;
}

const limiters = new WeakMap<Database, Limiter>();

function limiterOf(db: Database): Limiter {
  let limiter = limiters.get(db);
  if (!limiter) {
    limiter = { windows: new Map(), scheduled: false };
    limiters.set(db, limiter);
  }
  return limiter;
}

/** How many positions to reserve beyond the waiters': a share of what the last count left, or none. */
function leaseSize(window: WindowState, waiting: number): number {
  const left = window.limit - window.known - waiting;
  return Math.max(0, Math.min(MAX_LEASE, Math.floor(left / LEASE_SHARE)));
}

/**
 * One upsert for the windows whose requests are waiting (those of this turn of the event loop): each
 * row incremented by its waiters and the lease taken beside them, answering the new totals. The
 * waiters take the first positions of what was added, the lease the rest.
 */
async function flush(db: Database, limiter: Limiter): Promise<void> {
  limiter.scheduled = false;
  const now = Date.now();
  const batch: Array<{ window: WindowState; waiters: WindowState['waiters']; lease: number }> = [];
  for (const [key, window] of limiter.windows) {
    if (window.waiters.length === 0) {
      // A window that ended over a minute ago is never charged again.
      if (window.windowStart + 2 * WINDOW_MS < now) limiter.windows.delete(key);
      continue;
    }
    batch.push({ window, waiters: window.waiters, lease: leaseSize(window, window.waiters.length) });
    window.waiters = [];
  }
  if (batch.length === 0) return;
  try {
    const rows = (await runPrepared(
      db,
      db.raw(
        `INSERT INTO rate_limit_windows (bucket, window_start, count)
         SELECT * FROM unnest(?::text[], ?::bigint[], ?::int[])
         ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + EXCLUDED.count
         RETURNING bucket, window_start, count`,
        [
          batch.map((b) => b.window.bucket),
          batch.map((b) => b.window.windowStart),
          batch.map((b) => b.waiters.length + b.lease),
        ],
      ),
    )) as Array<{ bucket: string; window_start: number; count: number }>;
    const totals = new Map(
      rows.map((row) => [`${row.bucket}\0${Number(row.window_start)}`, Number(row.count)]),
    );
    for (const { window, waiters, lease } of batch) {
      const total = totals.get(`${window.bucket}\0${window.windowStart}`) ?? waiters.length + lease;
      window.known = Math.max(window.known, total);
      const first = total - lease - waiters.length + 1;
      waiters.forEach((waiter, i) => waiter.resolve(first + i));
      // Positions past the limit would only be refused: the lease ends at the limit.
      if (lease > 0) {
        window.leaseNext = total - lease + 1;
        window.leaseEnd = Math.min(total, window.limit);
      }
    }
  } catch (error) {
    for (const { waiters } of batch) for (const waiter of waiters) waiter.reject(error);
  }
}

/**
 * Fixed one-minute windows counted in PostgreSQL, so every api replica shares one budget per
 * credential, and never goes past it; most requests do not wait for a round trip:
 *
 * - A request takes the next position of its window. Positions come from PostgreSQL: the requests of
 *   one turn of the event loop that have none to draw on wait for one upsert (every window at once,
 *   each incremented by how many asked), which answers the window's total, so each gets its exact
 *   count.
 * - That upsert also reserves a lease for this process: a quarter of what the count leaves of the
 *   budget (at most 1,000). The next requests draw their positions from the lease at once, with no
 *   statement. Leases shrink as the window fills, and near the limit there are none: every request
 *   then waits for its count, so the limit is decided by the shared count.
 * - With one api process every count is exact. With several, a lease another one has not used yet
 *   counts as used: a client spreading requests over replicas may be refused up to a quarter of
 *   what was left when those leases were taken before reaching the limit, never let past it.
 */
export async function consumeRateLimit(
  db: Database,
  bucket: string,
  limit: number,
  nowMs: number = Date.now(),
): Promise<RateLimitState> {
  const windowStart = Math.floor(nowMs / WINDOW_MS) * WINDOW_MS;
  const limiter = limiterOf(db);
  const key = `${bucket}\0${windowStart}`;
  let window = limiter.windows.get(key);
  if (!window) {
    window = { bucket, windowStart, limit, known: 0, leaseNext: 1, leaseEnd: 0, waiters: [] };
    limiter.windows.set(key, window);
  }
  window.limit = limit;
  let position: number;
  if (window.leaseNext <= window.leaseEnd) {
    position = window.leaseNext++;
  } else {
    const pending = window;
    position = await new Promise<number>((resolve, reject) => {
      pending.waiters.push({ resolve, reject });
      if (!limiter.scheduled) {
        limiter.scheduled = true;
        setImmediate(() => void flush(db, limiter));
      }
    });
  }
  return {
    allowed: limit,
    remaining: Math.max(0, limit - position),
    resetSeconds: Math.max(1, Math.ceil((windowStart + WINDOW_MS - nowMs) / 1000)),
    limited: position > limit,
  };
}

/** Housekeeping: windows older than the previous minute can never be read again. */
export async function pruneRateLimitWindows(db: Database, nowMs: number = Date.now()): Promise<number> {
  const cutoff = Math.floor(nowMs / WINDOW_MS) * WINDOW_MS - WINDOW_MS;
  return db('rate_limit_windows').where('window_start', '<', cutoff).delete();
}
