import { createHash } from 'node:crypto';
import type { Database } from '../../engine/platform/database';
import { DomainError } from '../../engine/platform/errors';
import type { LogLine } from '../../plugins/sandbox/script-sandbox';

/**
 * The SDK-call journal of one worker execution (table `sdk_calls`). When a worker process dies in
 * the middle of a script, Temporal retries the activity and the script runs again from the start;
 * the journal keeps the calls that already took effect from taking effect twice.
 *
 * Every `sdk.<name>(...)` call gets the next number `seq` of the execution (in the order the script
 * makes the calls) and a row recording its name, the SHA-256 of its JSON arguments and what it
 * answered (a result, or a domain error's status and message). On a later attempt of the same
 * worker execution, the k-th call answers from row k when name and argument hash match, without
 * reaching the engine. The first call that differs (a script that is not deterministic) ends the
 * replay: the rows from there on are dropped, a warning goes to the execution's logs, and that call
 * and all later ones run live (and are journaled afresh).
 *
 * Guarantees:
 * - Writes (create, update, delete, the calculations, which audit an EXECUTE) run in one
 *   transaction with their journal row: the effect and the row commit together or not at all, so a
 *   process death at any point leaves either both (the retry replays) or neither (the retry runs it
 *   live, once). Two attempts alive at once (a stalled process Temporal gave up on) cannot both
 *   commit call k: the primary key lets one row in, the other attempt's transaction rolls back and
 *   it answers the committed row instead.
 * - Reads run outside a transaction and are journaled just after (one INSERT): a death between the
 *   read and its row only means the retry reads again (and audits one more VIEW). Read results over
 *   READ_RESULT_STORE_MAX bytes of JSON are not stored; such a read runs live again on replay.
 * - A domain error is journaled after its transaction rolled back (it had no effect), so a replay
 *   answers the same error. Other failures (database, service faults) are not journaled: a retry
 *   should try them again.
 * - Remaining window: none for writes. What the journal cannot cover is an effect outside
 *   PostgreSQL; every SDK function today acts only on the database.
 */

/** Read results larger than this (JSON bytes) are journaled without their result. */
export const READ_RESULT_STORE_MAX = 1024 * 1024;

/**
 * A call acts on data (`write`, journaled in its transaction), only looks or acts outside the
 * database (`read`: journaled just after, so a retry answers it instead of sending it again), or
 * must never be stored (`unrecorded`: a secret's value; a retry reads it again). `external` (an
 * HTTP request, an e-mail) is journaled like a read, its row written beside the answer going back
 * to the script rather than before it; settle() waits for those rows before the step ends.
 */
export type CallMode = 'read' | 'write' | 'unrecorded' | 'external';

interface JournalRow {
  seq: number;
  name: string;
  args_sha256: string;
  result: unknown;
  error: { status: number; message: string } | null;
  replayable: boolean;
}

/** The run of a call: given the database handle to act through (a transaction for writes). */
export type LiveCall = (db: Database) => Promise<unknown>;

/** The journal's own primary key refused a row: another attempt recorded that call number first. */
function isJournalConflict(error: unknown): boolean {
  const pg = error as { code?: unknown; table?: unknown } | null;
  return pg?.code === '23505' && pg.table === 'sdk_calls';
}

export function argsSha256(args: readonly unknown[]): string {
  return createHash('sha256')
    .update(JSON.stringify(args) ?? 'null')
    .digest('hex');
}

/** `undefined` and functions are not JSON: store what the script would receive through the bridge. */
function jsonText(value: unknown): string {
  return JSON.stringify(value) ?? 'null';
}

export class SdkJournal {
  /** Lines for the worker execution's logs (the replay's summary, a divergence's warning). */
  readonly logs: LogLine[] = [];
  replayed = 0;
  private next = 0;
  private diverged = false;
  /** Live calls wait for this: the rows a divergence drops must be gone before new ones go in. */
  private barrier: Promise<void> = Promise.resolve();
  /**
   * What a stored result becomes before it is written (the step's secret values replaced): a row
   * lives until the step ends, and no secret may be stored in the clear even that long.
   */
  redact: (value: unknown) => unknown = (value) => value;
  /** Rows of external calls still being written. */
  private readonly writing = new Set<Promise<void>>();
  private writeError: unknown = null;

  /** Waits for the rows still being written (before the step records its end); throws the first failure. */
  async settle(): Promise<void> {
    while (this.writing.size > 0) await Promise.all([...this.writing]);
    if (this.writeError !== null) throw this.writeError;
  }

  private constructor(
    private readonly db: Database,
    readonly workerExecutionId: string,
    private readonly recorded: Map<number, JournalRow>,
  ) {}

  /** The journal as earlier attempts of the execution left it (empty on a first attempt). */
  static async open(db: Database, workerExecutionId: string): Promise<SdkJournal> {
    const rows = (await db('sdk_calls')
      .where({ worker_execution_id: workerExecutionId })
      .orderBy('seq')
      .select('seq', 'name', 'args_sha256', 'result', 'error', 'replayable')) as JournalRow[];
    return new SdkJournal(db, workerExecutionId, new Map(rows.map((row) => [row.seq, row])));
  }

  /**
   * The journal of a worker execution this attempt has just created: nothing can be recorded for
   * an id that did not exist, so there is nothing to read.
   */
  static empty(db: Database, workerExecutionId: string): SdkJournal {
    return new SdkJournal(db, workerExecutionId, new Map());
  }

  /** How many SDK calls this attempt made (each may have written a row). */
  get calls(): number {
    return this.next;
  }

  /** How many calls an earlier attempt recorded. */
  get recordedCount(): number {
    return this.recorded.size;
  }

  /** The journal's lines merged into the script's own, in time order. */
  withLogs(lines: readonly LogLine[]): LogLine[] {
    const summary: LogLine[] =
      this.replayed > 0
        ? [
            {
              level: 'info',
              message: `[sdk journal] a retried attempt: ${this.replayed} SDK call(s) answered from the journal of an earlier attempt, not run again`,
              at: Date.now(),
            },
          ]
        : [];
    return [...this.logs, ...lines, ...summary].sort((a, b) => a.at - b.at);
  }

  /**
   * One SDK call: numbered now (synchronously, so concurrent calls keep the script's order), then
   * answered from the journal or run live and journaled.
   */
  call(name: string, args: readonly unknown[], mode: CallMode, live: LiveCall): Promise<unknown> {
    const seq = this.next++;
    // Never journaled, so no earlier attempt has a row for it either: the numbering stays in step.
    if (mode === 'unrecorded') return this.barrier.then(() => live(this.db));
    const hash = argsSha256(args);
    const row = this.diverged ? undefined : this.recorded.get(seq);
    if (row !== undefined) {
      if (row.name === name && row.args_sha256 === hash) {
        if (row.replayable) {
          this.replayed++;
          return Promise.resolve().then(() => answer(row));
        }
        // A large read: journaled without its result; read it again.
        return this.runLive(seq, name, hash, mode, live, { rowExists: true });
      }
      this.diverge(seq, name, row);
    }
    return this.runLive(seq, name, hash, mode, live, { rowExists: false });
  }

  private diverge(seq: number, name: string, row: JournalRow): void {
    this.diverged = true;
    const what = row.name === name ? `sdk.${name} with other arguments` : `sdk.${name}`;
    this.logs.push({
      level: 'warn',
      message:
        `[sdk journal] this retried attempt called ${what} as call #${seq + 1}, where the earlier ` +
        `attempt called sdk.${row.name}: the script is not deterministic. Calls from here on run ` +
        `live; effects of the earlier attempt's calls from #${seq + 1} on are not undone.`,
      at: Date.now(),
    });
    const dropped = this.db('sdk_calls')
      .where({ worker_execution_id: this.workerExecutionId })
      .where('seq', '>=', seq)
      .delete()
      .then(() => undefined);
    this.barrier = this.barrier.then(() => dropped);
  }

  private async runLive(
    seq: number,
    name: string,
    hash: string,
    mode: CallMode,
    live: LiveCall,
    { rowExists }: { rowExists: boolean },
  ): Promise<unknown> {
    await this.barrier;
    const row = (result: unknown, error: JournalRow['error'], replayable = true) => ({
      worker_execution_id: this.workerExecutionId,
      seq,
      name,
      args_sha256: hash,
      result: error === null && replayable ? jsonText(this.redact(result)) : null,
      error: error === null ? null : JSON.stringify(this.redact(error)),
      replayable,
    });
    if (mode === 'read' || mode === 'external') {
      let result: unknown;
      try {
        result = await live(this.db);
      } catch (error) {
        if (error instanceof DomainError && !rowExists) {
          await this.insert(this.db, row(null, { status: error.status, message: error.message }));
        }
        throw error;
      }
      if (!rowExists) {
        const replayable = Buffer.byteLength(jsonText(result), 'utf8') <= READ_RESULT_STORE_MAX;
        const written = this.insert(this.db, row(result, null, replayable));
        if (mode === 'read') await written;
        else {
          // The answer goes back now; the row follows, and the step waits for it before its end.
          const tracked = written.catch((error: unknown) => {
            this.writeError ??= error;
          });
          this.writing.add(tracked);
          void tracked.finally(() => this.writing.delete(tracked));
        }
      }
      return result;
    }
    try {
      return await this.db.transaction(async (trx) => {
        const result = await live(trx);
        await trx('sdk_calls').insert(row(result, null));
        return result;
      });
    } catch (error) {
      if (isJournalConflict(error)) return this.answerCommitted(seq, name, hash);
      if (error instanceof DomainError) {
        await this.insert(this.db, row(null, { status: error.status, message: error.message }));
      }
      throw error;
    }
  }

  /** Another attempt of this execution committed call `seq` first: ours rolled back; answer theirs. */
  private async answerCommitted(seq: number, name: string, hash: string): Promise<unknown> {
    const committed = (await this.db('sdk_calls')
      .where({ worker_execution_id: this.workerExecutionId, seq })
      .first('seq', 'name', 'args_sha256', 'result', 'error', 'replayable')) as JournalRow | undefined;
    if (committed && committed.name === name && committed.args_sha256 === hash && committed.replayable) {
      this.replayed++;
      return answer(committed);
    }
    throw new Error(
      `sdk journal: another attempt of worker execution ${this.workerExecutionId} recorded call #${seq + 1} differently`,
    );
  }

  /** An error row (or a read's row) that another attempt may have written first: theirs stands. */
  private async insert(db: Database, values: Record<string, unknown>): Promise<void> {
    await db('sdk_calls').insert(values).onConflict(['worker_execution_id', 'seq']).ignore();
  }
}

function answer(row: JournalRow): unknown {
  if (row.error !== null) throw new DomainError(row.error.status, row.error.message);
  return row.result;
}

/** A worker execution that ended needs its journal no more (a retry answers the recorded outcome). */
export async function dropJournal(db: Database, workerExecutionId: string): Promise<void> {
  await db('sdk_calls').where({ worker_execution_id: workerExecutionId }).delete();
}
