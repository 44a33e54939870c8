import type { Database } from './database';
import { isDatabaseUnavailable } from './database-faults';
import { type DependencyReport, failureReason, withinTimeout } from './dependency-health';
import type { Principal } from './principal';

/**
 * Reads that tolerate a short lag (lists, the audit trail) run on a PostgreSQL streaming replica
 * (DATABASE_READ_URL); writes, every other read, and the reads of a caller who has just written stay
 * on the primary.
 *
 * Read-your-writes, per credential: after a write request (POST, PUT, PATCH, DELETE) and before its
 * reply, the API stores the primary's WAL position (`pg_current_wal_lsn()`, past the request's commit)
 * against the credential, in PostgreSQL, so every API process sees it. A lag-tolerant read of that
 * credential goes to the replica only once the replica has replayed past that position
 * (`pg_last_wal_replay_lsn()`); until then, to the primary. Audit records, which every request
 * writes (a view included), do not count: only write requests do.
 *
 * The replica serves no one while it is unreachable, is not a standby, or lags more than `maxLagMs`:
 * the lag is how long ago the primary was at a position the replica has not replayed yet, measured on
 * this process's clock from the primary's positions sampled every check (no clock of either server
 * is compared). A read the replica fails for want of a connection, or cancels in a conflict with
 * recovery, runs again on the primary.
 */

export interface LagTolerantReads {
  /** Writes, and every read no replica serves. */
  readonly primary: Database;
  /**
   * Runs `read` on the replica when it may serve `principal` (`onReplica` true), else on the primary;
   * again on the primary when the replica fails it (no connection, or cancelled by recovery).
   */
  read<T>(principal: Principal, read: (db: Database, onReplica: boolean) => Promise<T>): Promise<T>;
}

/** Without a replica: every read on the primary. */
export function primaryReads(primary: Database): LagTolerantReads {
  return { primary, read: (_principal, read) => read(primary, false) };
}

export interface ReadReplicaOptions {
  /** Lag above which the replica serves no one. */
  maxLagMs?: number;
  /** How often the replica's replay position and the primary's WAL position are compared. */
  checkIntervalMs?: number;
  /** Told when the replica starts or stops serving reads, and why. */
  onChange?: (report: DependencyReport) => void;
}

export const DEFAULT_MAX_REPLICA_LAG_MS = 5_000;
const DEFAULT_CHECK_INTERVAL_MS = 500;
/** Primary positions kept to measure the lag with; past it the middle ones go (the lag only grows). */
const MAX_SAMPLES = 256;

/** `16/B374D848` as a number, so positions compare. */
export function parseLsn(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/** SQLSTATE 40001: a standby cancels a query whose rows recovery must remove (a conflict). */
function replicaMayFail(error: unknown): boolean {
  return isDatabaseUnavailable(error) || (error as { code?: unknown } | null)?.code === '40001';
}

/** The requests of one event-loop turn, answered by one statement. */
function perTurn<K, V>(run: (keys: K[]) => Promise<Map<K, V>>): (key: K) => Promise<V | undefined> {
  let pending: Array<{ key: K; resolve: (value: V | undefined) => void; reject: (error: unknown) => void }> =
    [];
  const flush = () => {
    const batch = pending;
    pending = [];
    run([...new Set(batch.map((p) => p.key))]).then(
      (found) => batch.forEach((p) => p.resolve(found.get(p.key))),
      (error: unknown) => batch.forEach((p) => p.reject(error)),
    );
  };
  return (key) =>
    new Promise((resolve, reject) => {
      if (pending.length === 0) setImmediate(flush);
      pending.push({ key, resolve, reject });
    });
}

interface ReplicaState {
  serving: boolean;
  detail: string;
  /** The replica's replay position at the last check; null when unknown. */
  replayed: bigint | null;
}

export class ReadReplica implements LagTolerantReads {
  private readonly maxLagMs: number;
  private readonly checkIntervalMs: number;
  /** A mark older than this is implied by the lag check: a replica still short of it lags too much. */
  private readonly markLifetimeMs: number;
  private state: ReplicaState = { serving: false, detail: 'not checked yet', replayed: null };
  private checkedAtMs = 0;
  private readonly samples: Array<{ atMs: number; lsn: bigint }> = [];
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | null = null;
  private closed = false;

  constructor(
    readonly primary: Database,
    readonly replica: Database,
    private readonly options: ReadReplicaOptions = {},
  ) {
    this.maxLagMs = options.maxLagMs ?? DEFAULT_MAX_REPLICA_LAG_MS;
    this.checkIntervalMs = options.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS;
    this.markLifetimeMs = this.maxLagMs + 4 * this.checkIntervalMs + 1_000;
  }

  /** Checks the replica now, then every `checkIntervalMs`. */
  async start(): Promise<this> {
    await this.check();
    return this;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.checking;
    await this.replica.destroy();
  }

  /** The replica as the health check reports it, checked on this call. */
  async health(): Promise<DependencyReport> {
    try {
      await withinTimeout(this.check());
    } catch (error) {
      return { status: 'down', detail: `${failureReason(error)}; lists read from the primary` };
    }
    return this.report();
  }

  async read<T>(principal: Principal, read: (db: Database, onReplica: boolean) => Promise<T>): Promise<T> {
    if (!(await this.serves(principal.credentialId))) return read(this.primary, false);
    try {
      return await read(this.replica, true);
    } catch (error) {
      if (!replicaMayFail(error)) throw error;
      if (isDatabaseUnavailable(error)) this.stopServing(`unreachable: ${failureReason(error)}`);
      return read(this.primary, false);
    }
  }

  /**
   * Records that `principal` has just written (call it before the reply): its lag-tolerant reads stay
   * on the primary until the replica has replayed this far.
   */
  async noteWrite(principal: Principal): Promise<void> {
    await this.markWrite(principal.credentialId);
  }

  private readonly markWrite = perTurn<string, true>(async (credentials) => {
    // The greatest position wins (two processes may mark one credential at once); a mark past its
    // lifetime is replaced, so a restored database's positions never hold a credential back.
    await this.primary.raw(
      `INSERT INTO credential_write_marks AS m (credential_id, wal_lsn, written_at)
       SELECT credential, pg_current_wal_lsn(), now() FROM unnest(?::text[]) AS credential
       ON CONFLICT (credential_id) DO UPDATE SET
         wal_lsn = CASE WHEN m.written_at < now() - make_interval(secs => ?) THEN EXCLUDED.wal_lsn
                        ELSE greatest(m.wal_lsn, EXCLUDED.wal_lsn) END,
         written_at = EXCLUDED.written_at`,
      [credentials, this.markLifetimeMs / 1000],
    );
    return new Map(credentials.map((credential) => [credential, true as const]));
  });

  private readonly markOf = perTurn<string, bigint>(async (credentials) => {
    const { rows } = (await this.primary.raw(
      `SELECT credential_id, wal_lsn::text AS wal_lsn FROM credential_write_marks
       WHERE credential_id = ANY(?::text[]) AND written_at > now() - make_interval(secs => ?)`,
      [credentials, this.markLifetimeMs / 1000],
    )) as { rows: Array<{ credential_id: string; wal_lsn: string }> };
    return new Map(rows.map((row) => [row.credential_id, parseLsn(row.wal_lsn)]));
  });

  /** Whether the replica may serve this credential's lag-tolerant reads now. */
  private async serves(credentialId: string): Promise<boolean> {
    if (!this.state.serving || Date.now() - this.checkedAtMs > this.staleAfterMs()) return false;
    const mark = await this.markOf(credentialId);
    if (mark === undefined || (this.state.replayed !== null && mark <= this.state.replayed)) return true;
    // Written since the last check: the replica may have replayed it meanwhile (usually within milliseconds).
    try {
      const { rows } = (await this.replica.raw('SELECT pg_last_wal_replay_lsn()::text AS replayed')) as {
        rows: Array<{ replayed: string | null }>;
      };
      const replayed = rows[0]?.replayed;
      return replayed != null && parseLsn(replayed) >= mark;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      this.stopServing(`unreachable: ${failureReason(error)}`);
      return false;
    }
  }

  private staleAfterMs(): number {
    return 3 * this.checkIntervalMs + 1_000;
  }

  private report(): DependencyReport {
    return { status: this.state.serving ? 'up' : 'down', detail: this.state.detail };
  }

  private setState(state: ReplicaState): void {
    const changed = state.serving !== this.state.serving;
    this.state = state;
    if (changed) this.options.onChange?.(this.report());
  }

  private stopServing(why: string): void {
    this.setState({ serving: false, detail: `${why}; lists read from the primary`, replayed: null });
  }

  /** One check at a time; a call during one waits for it. */
  private check(): Promise<void> {
    this.checking ??= this.compare()
      .catch((error: unknown) => this.stopServing(`unreadable answer: ${failureReason(error)}`))
      .finally(() => {
        this.checking = null;
        clearTimeout(this.timer);
        if (!this.closed) {
          this.timer = setTimeout(() => void this.check(), this.checkIntervalMs);
          // Checking must never keep the process alive on its own.
          this.timer.unref();
        }
      });
    return this.checking;
  }

  private async compare(): Promise<void> {
    // The primary's position is stamped with the time before it was asked: the lag errs long, never short.
    const askedAtMs = Date.now();
    const [primary, replica] = await Promise.allSettled([
      this.primary.raw('SELECT pg_current_wal_lsn()::text AS lsn'),
      this.replica.raw('SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS replayed'),
    ]);
    const now = Date.now();
    this.checkedAtMs = now;
    if (replica.status === 'rejected') {
      this.stopServing(`unreachable: ${failureReason(replica.reason)}`);
      return;
    }
    if (primary.status === 'rejected') {
      this.stopServing(
        `its lag is unknown while the primary does not answer (${failureReason(primary.reason)})`,
      );
      return;
    }
    const answer = (replica.value as { rows: Array<{ standby: boolean; replayed: string | null }> }).rows[0]!;
    if (!answer.standby || answer.replayed === null) {
      this.stopServing('not a standby (pg_is_in_recovery() is false): a promoted replica is not read');
      return;
    }
    const replayed = parseLsn(answer.replayed);
    this.samples.push({
      atMs: askedAtMs,
      lsn: parseLsn((primary.value as { rows: Array<{ lsn: string }> }).rows[0]!.lsn),
    });
    while (this.samples.length > 0 && this.samples[0]!.lsn <= replayed) this.samples.shift();
    if (this.samples.length > MAX_SAMPLES) this.samples.splice(1, this.samples.length - MAX_SAMPLES);
    // How long ago the primary was at a position the replica has not replayed yet.
    const lagMs = this.samples.length === 0 ? 0 : now - this.samples[0]!.atMs;
    if (lagMs > this.maxLagMs) {
      this.stopServing(`${lagMs} ms behind the primary (more than ${this.maxLagMs} ms)`);
      return;
    }
    this.setState({
      serving: true,
      detail: `serves lists; ${lagMs === 0 ? 'caught up with' : `${lagMs} ms behind`} the primary`,
      replayed,
    });
  }
}
