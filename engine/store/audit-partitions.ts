import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';

/**
 * The audit trail's monthly partitions (migration 20261202030000_audit_partitions): `audit_logs_YYYY_MM`
 * holds the records of one UTC month, `audit_logs_default` any record of a month without one.
 */

/** Months made ahead of the current one, so a month boundary never waits on the daily job. */
export const AUDIT_MONTHS_AHEAD = 3;

/** Arbitrary constant naming the advisory lock that serialises partition changes across processes. */
const PARTITION_LOCK_KEY = 728_204_116;

export interface AuditPartition {
  /** `audit_logs_2026_12` */
  name: string;
  /** `2026-12` */
  month: string;
}

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;
const PARTITION_NAME = /^audit_logs_(\d{4})_(\d{2})$/;

/** `YYYY-MM` as its first day (UTC); an InvalidInput names `what` otherwise. */
export function parseMonth(value: string, what = 'month'): Date {
  const match = MONTH.exec(value);
  if (!match) throw new InvalidInput(`${what} must be a month as YYYY-MM, got "${value}".`);
  return new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, 1));
}

/** The UTC month of `at` as `YYYY-MM`, `offset` months later (or earlier when negative). */
export function monthOf(at: Date, offset = 0): string {
  const first = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + offset, 1));
  return `${first.getUTCFullYear()}-${String(first.getUTCMonth() + 1).padStart(2, '0')}`;
}

export function partitionName(month: string): string {
  parseMonth(month);
  return `audit_logs_${month.replace('-', '_')}`;
}

/** The month partitions that exist, oldest first (the default partition is not a month). */
export async function listAuditPartitions(db: Database): Promise<AuditPartition[]> {
  const { rows } = (await db.raw(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'audit_logs'::regclass ORDER BY c.relname`,
  )) as { rows: Array<{ name: string }> };
  return rows.flatMap(({ name }) => {
    const match = PARTITION_NAME.exec(name);
    return match ? [{ name, month: `${match[1]}-${match[2]}` }] : [];
  });
}

/**
 * Makes the partitions of `now`'s month and the `monthsAhead` after it, and of every month whose
 * records wait in the default partition (they move into it). Safe to call from several processes
 * at once; answers the partitions it made.
 */
export async function ensureAuditPartitions(
  db: Database,
  now: Date = new Date(),
  monthsAhead: number = AUDIT_MONTHS_AHEAD,
): Promise<string[]> {
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(?)', [PARTITION_LOCK_KEY]);
    // Bounded: behind a long transaction on the trail this gives up (and the next run tries again)
    // rather than queueing every audit write behind it.
    await trx.raw("SET LOCAL lock_timeout = '30s'");
    const { rows: waiting } = (await trx.raw(
      `SELECT DISTINCT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM') AS month FROM audit_logs_default`,
    )) as { rows: Array<{ month: string }> };
    const months = new Set<string>(waiting.map((row) => row.month));
    for (let offset = 0; offset <= monthsAhead; offset += 1) months.add(monthOf(now, offset));
    const made: string[] = [];
    for (const month of [...months].sort()) {
      const { rows } = (await trx.raw('SELECT audit_logs_add_month(?::date) AS made', [`${month}-01`])) as {
        rows: Array<{ made: boolean }>;
      };
      if (rows[0]!.made) made.push(partitionName(month));
    }
    return made;
  });
}
