import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip, createGzip } from 'node:zlib';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import {
  auditRemovedHistory,
  checkAccount,
  drainInBatches,
  HISTORY_TABLES,
  noRows,
  PURGE_BATCH_SIZE,
  type BatchPacing,
  type PurgeActor,
  type RunHistoryCounts,
  type RunHistoryScope,
  removablePayloadsSql,
  purgeableRunsSql,
  removePayloadBatch,
  removeRunBatch,
  totalOf,
} from './run-retention';

/**
 * `pas runs prune --archive FILE`: the history a prune removes, first written to a gzip-compressed
 * JSON-lines file, read back and checked, and only then removed.
 *
 * The file: a header line `{"format":"pas-run-archive","version":1,"before":…,"account_id":…}`,
 * then one line per row, `{"table":"workflow_executions","row":{…}}` (and `worker_executions`,
 * `sdk_calls`, `webhook_payloads`), each row every column as PostgreSQL's `to_json` writes it: a
 * `json` column (an SDK call's result, a payload's body) exactly as stored, timestamps with their
 * microseconds and offset. Per page of runs: the runs, then their steps, then those steps' SDK
 * calls, in the runs' order; the payloads last. Beside it, `FILE.manifest.json` holds the counts, the byte size and the
 * SHA-256 of the compressed file; it is written once the file has been read back and matched.
 */

export const ARCHIVE_FORMAT = 'pas-run-archive';
export const ARCHIVE_VERSION = 1;

export interface ArchiveManifest {
  format: typeof ARCHIVE_FORMAT;
  version: number;
  /** The archive's file name (the manifest lies beside it). */
  file: string;
  created_at: string;
  before: string;
  account_id: string | null;
  bytes: number;
  sha256: string;
  counts: RunHistoryCounts;
}

/** The archive on disk is not what was written (or cannot be read): nothing is removed. */
export class ArchiveUnverified extends Error {
  constructor(file: string, detail: string) {
    super(`The archive ${file} does not verify: ${detail}. Nothing was removed.`);
    this.name = 'ArchiveUnverified';
  }
}

export const manifestPathOf = (file: string) => `${file}.manifest.json`;

/** A keyset cursor: the sort column as PostgreSQL's text (microseconds kept), then the id. */
interface Cursor {
  at: string;
  id: string;
}

/** The archive's lines, page by page; `counts` fills as they are produced. */
async function* archiveText(
  db: Database,
  scope: RunHistoryScope,
  pageSize: number,
  header: Record<string, unknown>,
  counts: RunHistoryCounts,
): AsyncGenerator<string> {
  yield `${JSON.stringify(header)}\n`;
  const line = (table: string, alias: string) =>
    `'{"table":"${table}","row":' || to_json(${alias})::text || '}' AS line`;
  const runs = purgeableRunsSql(scope);
  let cursor: Cursor | null = null;
  for (;;) {
    const after: string = cursor ? ' AND (e.ended_at, e.id) > (?::timestamptz, ?)' : '';
    const page = (
      await db.raw(
        `SELECT e.id, e.ended_at::text AS at, ${line('workflow_executions', 'e')}
           FROM workflow_executions e WHERE ${runs.sql}${after}
          ORDER BY e.ended_at, e.id LIMIT ?`,
        [...runs.bindings, ...(cursor ? [cursor.at, cursor.id] : []), pageSize],
      )
    ).rows as Array<{ id: string; at: string; line: string }>;
    if (page.length === 0) break;
    const ids = page.map((row) => row.id);
    const steps = (
      await db.raw(
        `SELECT ${line('worker_executions', 'w')} FROM worker_executions w
          WHERE w.workflow_execution_id = ANY(?::text[])
          ORDER BY array_position(?::text[], w.workflow_execution_id), w.created_at, w.parallel_index, w.id`,
        [ids, ids],
      )
    ).rows as Array<{ line: string }>;
    const calls = (
      await db.raw(
        `SELECT ${line('sdk_calls', 'c')} FROM sdk_calls c
           JOIN worker_executions w ON w.id = c.worker_execution_id
          WHERE w.workflow_execution_id = ANY(?::text[])
          ORDER BY array_position(?::text[], w.workflow_execution_id), w.created_at, w.parallel_index,
                   w.id, c.seq`,
        [ids, ids],
      )
    ).rows as Array<{ line: string }>;
    counts.workflow_executions += page.length;
    counts.worker_executions += steps.length;
    counts.sdk_calls += calls.length;
    yield [...page, ...steps, ...calls].map((row) => `${row.line}\n`).join('');
    const last = page[page.length - 1]!;
    cursor = { at: last.at, id: last.id };
  }
  const payloads = removablePayloadsSql(scope);
  cursor = null;
  for (;;) {
    const after: string = cursor ? ' AND (p.received_at, p.id) > (?::timestamptz, ?)' : '';
    const page = (
      await db.raw(
        `SELECT p.id, p.received_at::text AS at, ${line('webhook_payloads', 'p')}
           FROM webhook_payloads p WHERE ${payloads.sql}${after}
          ORDER BY p.received_at, p.id LIMIT ?`,
        [...payloads.bindings, ...(cursor ? [cursor.at, cursor.id] : []), pageSize],
      )
    ).rows as Array<{ id: string; at: string; line: string }>;
    if (page.length === 0) break;
    counts.webhook_payloads += page.length;
    yield page.map((row) => `${row.line}\n`).join('');
    const last = page[page.length - 1]!;
    cursor = { at: last.at, id: last.id };
  }
}

/** Passes bytes through, hashing and counting them. */
function digest(): Transform & { sha256(): string; bytes(): number } {
  const hash = createHash('sha256');
  let bytes = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  return Object.assign(stream, { sha256: () => hash.digest('hex'), bytes: () => bytes });
}

/** A path that holds a file (or folder) already is refused: an earlier archive is never overwritten. */
async function refuseExisting(file: string): Promise<void> {
  for (const target of [file, manifestPathOf(file)]) {
    const found = await lstat(target).catch(() => null);
    if (found && (found.isFile() || found.isDirectory() || found.isSymbolicLink())) {
      throw new InvalidInput(`${target} exists already: give the archive a new file name.`);
    }
  }
}

/** Writes the archive of `scope` to `file` (flushed to disk); answers what its manifest will say. */
export async function writeRunArchive(
  db: Database,
  file: string,
  scope: RunHistoryScope,
  pageSize: number = PURGE_BATCH_SIZE,
): Promise<ArchiveManifest> {
  await refuseExisting(file);
  const counts = noRows();
  const header = {
    format: ARCHIVE_FORMAT,
    version: ARCHIVE_VERSION,
    before: scope.before.toISOString(),
    account_id: scope.accountId ?? null,
    created_at: new Date().toISOString(),
  };
  const hashed = digest();
  // A device or a pipe given as the target is written to as it is; the read-back then tells.
  const flags = (await lstat(file).catch(() => null)) ? 'w' : 'wx';
  await pipeline(
    Readable.from(archiveText(db, scope, pageSize, header, counts)),
    createGzip(),
    hashed,
    createWriteStream(file, { flags }),
  );
  // On disk before anything is removed, not only in the page cache (fsync acts on the file, through
  // any descriptor of it). A device that cannot sync says so with EINVAL: the read-back decides.
  const handle = await open(file, 'r');
  try {
    await handle.sync().catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EINVAL' && error.code !== 'ENOTSUP') throw error;
    });
  } finally {
    await handle.close();
  }
  return {
    format: ARCHIVE_FORMAT,
    version: ARCHIVE_VERSION,
    file: path.basename(file),
    created_at: header.created_at,
    before: header.before,
    account_id: header.account_id,
    bytes: hashed.bytes(),
    sha256: hashed.sha256(),
    counts,
  };
}

type RowHandler = (table: keyof RunHistoryCounts, row: { id?: string }) => Promise<void> | void;

/** Hands each row line of the archive to `onRow` (the header checked and skipped), as it inflates. */
async function readArchiveRows(file: string, onRow: RowHandler): Promise<void> {
  let first = true;
  const line = async (text: string) => {
    const value = JSON.parse(text) as Record<string, unknown>;
    if (first) {
      first = false;
      if (value.format !== ARCHIVE_FORMAT || value.version !== ARCHIVE_VERSION) {
        throw new Error(`the first line is not a ${ARCHIVE_FORMAT} header`);
      }
      return;
    }
    const table = value.table as keyof RunHistoryCounts;
    if (!HISTORY_TABLES.includes(table) || typeof value.row !== 'object' || value.row === null) {
      throw new Error(`a line is not a row of the run history: ${text.slice(0, 80)}`);
    }
    await onRow(table, value.row as { id?: string });
  };
  const decoder = new StringDecoder('utf8');
  let rest = '';
  await pipeline(createReadStream(file), createGunzip(), async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) {
      const parts = (rest + decoder.write(chunk)).split('\n');
      rest = parts.pop()!;
      for (const text of parts) await line(text);
    }
    if (rest + decoder.end() !== '') throw new Error('its last line is cut short');
  });
  if (first) throw new Error('it holds no header line');
}

/** The SHA-256 and size of a file's bytes as they read back now. */
async function hashFile(file: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), bytes };
}

/**
 * Reads the archive back: its bytes must hash to the manifest's SHA-256 and size, and its lines
 * decompress, parse and count to the manifest's counts. Throws ArchiveUnverified otherwise.
 */
export async function verifyRunArchive(file: string, manifest: ArchiveManifest): Promise<void> {
  const counts = noRows();
  let read: { sha256: string; bytes: number };
  try {
    read = await hashFile(file);
    if (read.bytes === manifest.bytes && read.sha256 === manifest.sha256) {
      await readArchiveRows(file, (table) => {
        counts[table] += 1;
      });
    }
  } catch (error) {
    throw new ArchiveUnverified(file, error instanceof Error ? error.message : String(error));
  }
  if (read.bytes !== manifest.bytes || read.sha256 !== manifest.sha256) {
    throw new ArchiveUnverified(
      file,
      `read back ${read.bytes} bytes with SHA-256 ${read.sha256}, ` +
        `wrote ${manifest.bytes} bytes with SHA-256 ${manifest.sha256}`,
    );
  }
  for (const table of HISTORY_TABLES) {
    if (counts[table] !== manifest.counts[table]) {
      throw new ArchiveUnverified(
        file,
        `it holds ${counts[table]} ${table} row(s), ${manifest.counts[table]} were written`,
      );
    }
  }
}

/** Hands the ids of one table's rows in the archive to `onChunk`, `size` at a time. */
async function forEachIdChunk(
  file: string,
  table: 'workflow_executions' | 'webhook_payloads',
  size: number,
  onChunk: (ids: string[]) => Promise<void>,
): Promise<void> {
  let chunk: string[] = [];
  await readArchiveRows(file, async (rowTable, row) => {
    if (rowTable !== table || typeof row.id !== 'string') return;
    chunk.push(row.id);
    if (chunk.length === size) {
      await onChunk(chunk);
      chunk = [];
    }
  });
  if (chunk.length > 0) await onChunk(chunk);
}

export interface ArchivedPrune {
  manifest: ArchiveManifest;
  manifestFile: string;
  removed: RunHistoryCounts;
  accounts: Map<string, RunHistoryCounts>;
  /** Archived runs that were not removed: retried or locked by a writer since the archive. */
  keptRuns: number;
  keptPayloads: number;
}

/**
 * Archives the history `scope` covers to `file`, verifies it, writes the manifest, then removes
 * exactly the archived rows, in batches, each run checked again as it goes (one retried since stays,
 * and is counted as kept). Any failure before the removal (the file cannot be written, reads back
 * different, the manifest cannot be written) removes nothing.
 */
export async function pruneToArchive(
  db: Database,
  file: string,
  scope: RunHistoryScope,
  actor: PurgeActor,
  pacing: BatchPacing = {},
): Promise<ArchivedPrune> {
  await checkAccount(db, scope.accountId);
  const size = pacing.batchSize ?? PURGE_BATCH_SIZE;
  const manifest = await writeRunArchive(db, file, scope, size);
  await verifyRunArchive(file, manifest);
  const manifestFile = manifestPathOf(file);
  await writeFile(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`, { flag: 'wx' });

  const accounts = new Map<string, RunHistoryCounts>();
  const noop = () => undefined;
  // A retry chain archived whole goes one link per round: a run stays while its retry exists.
  for (;;) {
    const before = totalOf(accounts).workflow_executions;
    await forEachIdChunk(file, 'workflow_executions', size, async (ids) => {
      await drainInBatches(() => removeRunBatch(db, scope, ids.length, ids), accounts, pacing, noop);
    });
    if (totalOf(accounts).workflow_executions === before) break;
  }
  await forEachIdChunk(file, 'webhook_payloads', size, async (ids) => {
    await drainInBatches(() => removePayloadBatch(db, scope, ids.length, ids), accounts, pacing, noop);
  });
  await auditRemovedHistory(db, actor, scope.before, accounts, {
    file: manifest.file,
    sha256: manifest.sha256,
  });
  const removed = totalOf(accounts);
  return {
    manifest,
    manifestFile,
    removed,
    accounts,
    keptRuns: manifest.counts.workflow_executions - removed.workflow_executions,
    keptPayloads: manifest.counts.webhook_payloads - removed.webhook_payloads,
  };
}
