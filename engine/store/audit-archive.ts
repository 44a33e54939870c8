import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { Knex } from 'knex';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import type { Actor, AuditSource } from '../platform/principal';
import { auditRow } from './audit-trail';
import {
  type AuditPartition,
  ensureAuditPartitions,
  listAuditPartitions,
  monthOf,
  parseMonth,
  partitionName,
} from './audit-partitions';

/**
 * Archive and restore of the audit trail's months. `archiveAuditMonths` writes each month before a
 * given one to `audit_logs_YYYY_MM.jsonl.gz` (gzip, one record per line: PostgreSQL's `row_to_json`,
 * every column, timestamps in UTC to the microsecond) and `audit_logs_YYYY_MM.manifest.json`, reads
 * the file back, checks its row count and SHA-256 against the partition, and only then detaches and
 * drops the partition: the one way a record leaves the trail, since UPDATE, DELETE and TRUNCATE stay
 * refused. `restoreAuditArchive` brings a month back, read-only, as `audit_archive.audit_logs_YYYY_MM`.
 */

export const AUDIT_ARCHIVE_FORMAT = 'pas-audit-archive';
export const AUDIT_ARCHIVE_FORMAT_VERSION = 1;
/** Where restored months live, apart from the live trail (and from what the API reads). */
export const AUDIT_ARCHIVE_SCHEMA = 'audit_archive';
/** The file's order, total because (id, created_at) is the key: the same rows always hash alike. */
const ROW_ORDER = ['account_id', 'created_at', 'id'] as const;
const FETCH_ROWS = 2_000;
const RESTORE_BATCH = 1_000;
/** Arbitrary constant naming the advisory lock one archive run holds (the CLI's or the daily job's). */
const ARCHIVE_LOCK_KEY = 728_204_117;

export interface AuditArchiveManifest {
  format: typeof AUDIT_ARCHIVE_FORMAT;
  format_version: number;
  table: 'audit_logs';
  partition: string;
  month: string;
  /** The data file, beside the manifest. */
  file: string;
  rows: number;
  /** Earliest and latest `created_at` (UTC, microseconds); null for an empty month. */
  first_created_at: string | null;
  last_created_at: string | null;
  /** The gzip file as stored. */
  bytes: number;
  sha256_gzip: string;
  /** Its content once uncompressed (`gunzip -c FILE | sha256sum`). */
  sha256_content: string;
  columns: Array<{ name: string; type: string }>;
  order: string[];
  archived_at: string;
}

/** An archive that is not what its manifest (or the partition) says: nothing was dropped or loaded. */
export class AuditArchiveRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuditArchiveRefused';
  }
}

export interface ArchivedMonth {
  month: string;
  partition: string;
  rows: number;
  file: string;
  manifest: string;
  bytes: number;
  sha256_gzip: string;
  sha256_content: string;
  /** True when the files were already there (an earlier run with `drop: false`) and were checked. */
  reused: boolean;
  dropped: boolean;
}

export function archiveFiles(dir: string, partition: string): { data: string; manifest: string } {
  return {
    data: path.join(dir, `${partition}.jsonl.gz`),
    manifest: path.join(dir, `${partition}.manifest.json`),
  };
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;

interface Tally {
  rows: number;
  content: Hash;
  first: string | null;
  last: string | null;
  accounts: Map<string, number>;
}

/**
 * The rows of `relation` as the archive's text, in batches, in ROW_ORDER; `tally` counts them and
 * hashes the text. Run in a transaction with TimeZone UTC (row_to_json writes timestamps in it).
 */
async function* relationText(trx: Knex.Transaction, relation: string, tally: Tally): AsyncGenerator<Buffer> {
  const cursor = 'audit_archive_rows';
  await trx.raw(
    `DECLARE ${cursor} NO SCROLL CURSOR FOR
       SELECT row_to_json(r)::text AS line, r.account_id,
              to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at
         FROM ${relation} r ORDER BY ${ROW_ORDER.map((c) => `r.${c}`).join(', ')}`,
  );
  for (;;) {
    const { rows } = (await trx.raw(`FETCH ${FETCH_ROWS} FROM ${cursor}`)) as {
      rows: Array<{ line: string; account_id: string; at: string }>;
    };
    if (rows.length === 0) break;
    let text = '';
    for (const row of rows) {
      text += `${row.line}\n`;
      tally.accounts.set(row.account_id, (tally.accounts.get(row.account_id) ?? 0) + 1);
      if (tally.first === null || row.at < tally.first) tally.first = row.at;
      if (tally.last === null || row.at > tally.last) tally.last = row.at;
    }
    tally.rows += rows.length;
    const chunk = Buffer.from(text, 'utf8');
    tally.content.update(chunk);
    yield chunk;
  }
  await trx.raw(`CLOSE ${cursor}`);
}

function newTally(): Tally {
  return { rows: 0, content: createHash('sha256'), first: null, last: null, accounts: new Map() };
}

async function tallyRelation(trx: Knex.Transaction, relation: string): Promise<Tally> {
  const tally = newTally();
  const chunks = relationText(trx, relation, tally);
  while (!(await chunks.next()).done) {
    // Counting and hashing only.
  }
  return tally;
}

/** Column names and types as `format_type` writes them, in table order. */
async function describeColumns(
  trx: Knex.Transaction,
  relation: string,
): Promise<Array<{ name: string; type: string }>> {
  const { rows } = (await trx.raw(
    `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
      WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [relation],
  )) as { rows: Array<{ name: string; type: string }> };
  return rows;
}

/** Written beside its final name, flushed, then renamed: a file under the final name is whole. */
async function writeWhole(file: string, content: string): Promise<void> {
  const partial = `${file}.partial`;
  await writeFile(partial, content, { mode: 0o600, flush: true });
  await rename(partial, file);
}

async function syncFolder(dir: string): Promise<void> {
  const folder = await open(dir, 'r');
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}

/** Streams the partition into the gzip file and writes the manifest that describes what was read. */
async function writeArchive(
  trx: Knex.Transaction,
  partition: AuditPartition,
  files: { data: string; manifest: string },
): Promise<{ manifest: AuditArchiveManifest; tally: Tally }> {
  const tally = newTally();
  const gzip = createHash('sha256');
  let bytes = 0;
  const partial = `${files.data}.partial`;
  await pipeline(
    relationText(trx, quote(partition.name), tally),
    createGzip({ level: 6 }),
    async function* (source: AsyncIterable<Buffer>) {
      for await (const chunk of source) {
        gzip.update(chunk);
        bytes += chunk.length;
        yield chunk;
      }
    },
    createWriteStream(partial, { mode: 0o600, flush: true }),
  );
  await rename(partial, files.data);
  const manifest: AuditArchiveManifest = {
    format: AUDIT_ARCHIVE_FORMAT,
    format_version: AUDIT_ARCHIVE_FORMAT_VERSION,
    table: 'audit_logs',
    partition: partition.name,
    month: partition.month,
    file: path.basename(files.data),
    rows: tally.rows,
    first_created_at: tally.first,
    last_created_at: tally.last,
    bytes,
    sha256_gzip: gzip.digest('hex'),
    sha256_content: tally.content.digest('hex'),
    columns: await describeColumns(trx, quote(partition.name)),
    order: [...ROW_ORDER],
    archived_at: new Date().toISOString(),
  };
  await writeWhole(files.manifest, `${JSON.stringify(manifest, null, 2)}\n`);
  await syncFolder(path.dirname(files.data));
  return { manifest, tally };
}

const SHA256 = /^[0-9a-f]{64}$/;
const COLUMN_NAME = /^[a-z_][a-z0-9_]*$/;
/** Types a restore may declare: those of the trail's columns, and a few a later migration might add. */
const COLUMN_TYPE =
  /^(text|jsonb|json|boolean|smallint|integer|bigint|numeric|real|double precision|uuid|date|timestamp with time zone|timestamp without time zone|text\[\])$/;

function refuse(file: string, detail: string): never {
  throw new AuditArchiveRefused(`${file}: ${detail}`);
}

/** The manifest, checked for shape: a restore builds SQL from its names and types. */
function checkManifest(file: string, value: unknown): AuditArchiveManifest {
  const m = value as Partial<AuditArchiveManifest> | null;
  if (!m || typeof m !== 'object') refuse(file, 'is not a manifest of an audit archive.');
  if (m.format !== AUDIT_ARCHIVE_FORMAT)
    refuse(file, `is not a manifest of an audit archive (format ${String(m.format)}).`);
  if (m.format_version !== AUDIT_ARCHIVE_FORMAT_VERSION)
    refuse(
      file,
      `has format version ${String(m.format_version)}; this version reads ${AUDIT_ARCHIVE_FORMAT_VERSION}.`,
    );
  if (typeof m.month !== 'string' || !/^\d{4}-(0[1-9]|1[0-2])$/.test(m.month))
    refuse(file, 'names no month.');
  if (
    m.table !== 'audit_logs' ||
    m.partition !== partitionName(m.month) ||
    m.file !== `${m.partition}.jsonl.gz`
  )
    refuse(file, 'names a table, partition or file that does not match its month.');
  if (!Number.isSafeInteger(m.rows) || m.rows! < 0 || !Number.isSafeInteger(m.bytes) || m.bytes! < 0)
    refuse(file, 'has no valid row count or size.');
  if (!SHA256.test(String(m.sha256_gzip)) || !SHA256.test(String(m.sha256_content)))
    refuse(file, 'has no valid SHA-256 checksums.');
  const columns = Array.isArray(m.columns) ? m.columns : [];
  const names = columns.map((c) => c?.name);
  if (
    columns.length === 0 ||
    !columns.every((c) => COLUMN_NAME.test(String(c?.name)) && COLUMN_TYPE.test(String(c?.type))) ||
    new Set(names).size !== names.length ||
    !ROW_ORDER.every((c) => names.includes(c))
  )
    refuse(file, 'lists columns this version cannot restore.');
  if (JSON.stringify(m.order) !== JSON.stringify(ROW_ORDER)) refuse(file, 'lists its rows in another order.');
  return m as AuditArchiveManifest;
}

/** FILE may name the manifest or the data file; answers both paths. */
function archivePathsOf(file: string): { data: string; manifest: string } {
  const resolved = path.resolve(file);
  const match = /^(.*)\.(manifest\.json|jsonl\.gz)$/.exec(resolved);
  if (!match) {
    throw new InvalidInput(
      `${resolved} is not an audit archive: name its audit_logs_YYYY_MM.manifest.json or .jsonl.gz.`,
    );
  }
  return { data: `${match[1]}.jsonl.gz`, manifest: `${match[1]}.manifest.json` };
}

/** Number of newline bytes in `chunk`. */
function countLines(chunk: Buffer): number {
  let lines = 0;
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines += 1;
  return lines;
}

/**
 * Reads an archive whole from disk: its manifest, then the gzip file's size and SHA-256, and its
 * content's SHA-256 and line count once uncompressed. A short, altered or unreadable file is refused.
 */
export async function verifyAuditArchive(file: string): Promise<{
  manifest: AuditArchiveManifest;
  files: { data: string; manifest: string };
}> {
  const files = archivePathsOf(file);
  if (!existsSync(files.manifest))
    refuse(files.manifest, 'is missing: an archive is checked against its manifest.');
  if (!existsSync(files.data)) refuse(files.data, 'is missing.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(files.manifest, 'utf8'));
  } catch {
    refuse(files.manifest, 'is not valid JSON.');
  }
  const manifest = checkManifest(files.manifest, parsed);
  if (path.basename(files.data) !== manifest.file)
    refuse(files.data, `is not ${manifest.file}, which its manifest names.`);
  const { size } = await stat(files.data);
  if (size !== manifest.bytes)
    refuse(files.data, `holds ${size} bytes; its manifest says ${manifest.bytes}.`);

  const gzip = createHash('sha256');
  const content = createHash('sha256');
  let lines = 0;
  let lastByte = 10;
  try {
    await pipeline(
      createReadStream(files.data),
      async function* (source: AsyncIterable<Buffer>) {
        for await (const chunk of source) {
          gzip.update(chunk);
          yield chunk;
        }
      },
      createGunzip(),
      async (source: AsyncIterable<Buffer>) => {
        for await (const chunk of source) {
          content.update(chunk);
          lines += countLines(chunk);
          lastByte = chunk[chunk.length - 1] ?? lastByte;
        }
      },
    );
  } catch (error) {
    refuse(
      files.data,
      `is not a whole gzip file (${error instanceof Error ? error.message : String(error)}).`,
    );
  }
  if (gzip.digest('hex') !== manifest.sha256_gzip)
    refuse(files.data, 'does not have the SHA-256 its manifest records.');
  if (content.digest('hex') !== manifest.sha256_content)
    refuse(files.data, 'uncompressed, does not have the SHA-256 its manifest records.');
  if (lines !== manifest.rows || lastByte !== 10)
    refuse(files.data, `holds ${lines} records; its manifest says ${manifest.rows}.`);
  return { manifest, files };
}

/**
 * Who an archive record names: the service's daily job (`SCHEDULER`, user e-mail `System`) or an
 * operator at `pas audit archive` (`PLATFORM`, as `pas runs prune` records it).
 */
function archiveActor(accountId: string, source: AuditSource): Actor {
  return {
    principal: {
      accountId,
      userId: '',
      userEmail: 'operator (pas CLI)',
      isOwner: false,
      permissions: [],
      credentialId: '',
      credentialType: 'API_KEY',
    },
    source,
    ip: null,
    userAgent: source === 'SCHEDULER' ? null : 'pas audit archive',
  };
}

/**
 * One record per account whose records the month held (with its own count and the month's total),
 * or, for an empty month, one in the service's own account: every archive leaves a trace.
 */
async function recordArchive(
  trx: Knex.Transaction,
  manifest: AuditArchiveManifest,
  accounts: Map<string, number>,
  source: AuditSource,
): Promise<void> {
  const { rows: present } = (await trx.raw(
    'SELECT id FROM accounts WHERE id = ANY(?) OR (cardinality(?::text[]) = 0 AND is_system) ORDER BY id',
    [[...accounts.keys()], [...accounts.keys()]],
  )) as { rows: Array<{ id: string }> };
  for (const { id } of present) {
    const mine = accounts.get(id) ?? 0;
    const row = auditRow(archiveActor(id, source), {
      operation: 'DELETE',
      activity: `Archived ${mine} audit log records of ${manifest.month} to ${manifest.file} and dropped the month from the trail`,
      entityId: manifest.partition,
      entityType: 'AuditLogArchive',
      entityName: manifest.month,
      after: {
        month: manifest.month,
        table: manifest.table,
        partition: manifest.partition,
        records: mine,
        records_all_accounts: manifest.rows,
        file: manifest.file,
        sha256_gzip: manifest.sha256_gzip,
        sha256_content: manifest.sha256_content,
        first_created_at: manifest.first_created_at,
        last_created_at: manifest.last_created_at,
      },
    });
    await trx('audit_logs').insert({ ...row, user_id: null, credential_id: null, credential_type: null });
  }
}

const LOCK_NOT_AVAILABLE = '55P03';

/**
 * DETACH needs the trail's strongest lock for an instant; behind a long transaction it waits at
 * most a few seconds at a time (audit writes queue behind a waiting DETACH), then tries again.
 */
async function detachAndDrop(trx: Knex.Transaction, partition: string): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await trx.transaction(async (step) => {
        await step.raw("SET LOCAL lock_timeout = '3s'");
        await step.raw(`ALTER TABLE audit_logs DETACH PARTITION ${quote(partition)}`);
      });
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE || attempt === 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 2_000 * attempt));
    }
  }
  await trx.raw(`DROP TABLE ${quote(partition)}`);
}

async function archiveMonth(
  db: Database,
  partition: AuditPartition,
  options: { dir: string; drop: boolean; source: AuditSource },
): Promise<ArchivedMonth> {
  const files = archiveFiles(options.dir, partition.name);
  return db.transaction(async (trx) => {
    await trx.raw("SET LOCAL TimeZone = 'UTC'");
    // No record enters the month between the read and the drop.
    await trx.raw(`LOCK TABLE ${quote(partition.name)} IN SHARE MODE`);
    let manifest: AuditArchiveManifest;
    let accounts: Map<string, number>;
    const reused = existsSync(files.manifest) || existsSync(files.data);
    if (reused) {
      // Files left by an earlier run: they must hold exactly what the partition holds now.
      ({ manifest } = await verifyAuditArchive(files.manifest));
      const stored = await tallyRelation(trx, quote(partition.name));
      const sha = stored.content.digest('hex');
      if (stored.rows !== manifest.rows || sha !== manifest.sha256_content) {
        refuse(
          files.data,
          `holds ${manifest.rows} records (content SHA-256 ${manifest.sha256_content.slice(0, 12)}…) but partition ` +
            `${partition.name} holds ${stored.rows} (${sha.slice(0, 12)}…); nothing was dropped. Move the two ` +
            'files away to archive the month afresh.',
        );
      }
      accounts = stored.accounts;
    } else {
      try {
        const written = await writeArchive(trx, partition, files);
        // Read back from disk: what is dropped next must be in the file, byte for byte.
        const checked = await verifyAuditArchive(files.manifest);
        if (checked.manifest.rows !== written.tally.rows)
          refuse(files.data, 'does not hold the rows the partition holds.');
        ({ manifest } = written);
        accounts = written.tally.accounts;
      } catch (error) {
        // What this run wrote and could not vouch for goes; nothing was dropped.
        await rm(files.data, { force: true });
        await rm(`${files.data}.partial`, { force: true });
        await rm(files.manifest, { force: true });
        throw error;
      }
    }
    if (options.drop) {
      await recordArchive(trx, manifest, accounts, options.source);
      await detachAndDrop(trx, partition.name);
    }
    return {
      month: partition.month,
      partition: partition.name,
      rows: manifest.rows,
      file: files.data,
      manifest: files.manifest,
      bytes: manifest.bytes,
      sha256_gzip: manifest.sha256_gzip,
      sha256_content: manifest.sha256_content,
      reused,
      dropped: options.drop,
    };
  });
}

/** Runs `work` holding the archive lock, on a connection of its own; null when another run holds it. */
async function withArchiveLock<T>(db: Database, work: () => Promise<T>): Promise<T | null> {
  const connection = await db.client.acquireConnection();
  try {
    const { rows } = (await db
      .raw('SELECT pg_try_advisory_lock(?) AS locked', [ARCHIVE_LOCK_KEY])
      .connection(connection)) as { rows: Array<{ locked: boolean }> };
    if (!rows[0]!.locked) return null;
    try {
      return await work();
    } finally {
      await db
        .raw('SELECT pg_advisory_unlock(?)', [ARCHIVE_LOCK_KEY])
        .connection(connection)
        .catch(() => undefined);
    }
  } finally {
    await db.client.releaseConnection(connection);
  }
}

export class AuditArchiveBusy extends Error {
  constructor() {
    super('Another archive of the audit trail is running (pas audit archive, or the service’s daily job).');
    this.name = 'AuditArchiveBusy';
  }
}

/**
 * Archives every month partition before `before` (YYYY-MM, at most the current month) to `dir`,
 * oldest first, and with `drop` detaches and drops each once its file is verified. Records waiting
 * in the default partition get their month's partition first, so they are archived with it. Stops
 * at the first month that fails; the months before it stay archived.
 */
export async function archiveAuditMonths(
  db: Database,
  options: {
    before: string;
    dir: string;
    drop: boolean;
    source: AuditSource;
    now?: Date;
    onMonth?: (archived: ArchivedMonth) => void;
  },
): Promise<ArchivedMonth[]> {
  const now = options.now ?? new Date();
  parseMonth(options.before, '--before');
  if (options.before > monthOf(now)) {
    throw new InvalidInput(
      `--before ${options.before} is after the current month (${monthOf(now)}), which still takes records.`,
    );
  }
  const done = await withArchiveLock(db, async () => {
    await ensureAuditPartitions(db, now);
    await mkdir(options.dir, { recursive: true, mode: 0o700 });
    const due = (await listAuditPartitions(db)).filter((p) => p.month < options.before);
    const archived: ArchivedMonth[] = [];
    for (const partition of due) {
      const month = await archiveMonth(db, partition, options);
      archived.push(month);
      options.onMonth?.(month);
    }
    return archived;
  });
  if (done === null) throw new AuditArchiveBusy();
  return done;
}

export interface AuditMaintenanceSettings {
  /** Months kept before the current one; null: every record is kept. */
  retentionMonths: number | null;
  archiveDir: string;
}

/**
 * The service's daily job: partitions for the months ahead, then, with a retention, every month
 * older than it archived and dropped. Null when another process is running an archive.
 */
export async function runAuditMaintenance(
  db: Database,
  settings: AuditMaintenanceSettings,
  now: Date = new Date(),
): Promise<{ partitionsMade: string[]; archived: ArchivedMonth[] } | null> {
  const partitionsMade = await ensureAuditPartitions(db, now);
  if (settings.retentionMonths === null) return { partitionsMade, archived: [] };
  try {
    const archived = await archiveAuditMonths(db, {
      before: monthOf(now, -settings.retentionMonths),
      dir: settings.archiveDir,
      drop: true,
      source: 'SCHEDULER',
      now,
    });
    return { partitionsMade, archived };
  } catch (error) {
    if (error instanceof AuditArchiveBusy) return null;
    throw error;
  }
}

export interface RestoredMonth {
  month: string;
  table: string;
  rows: number;
}

function restoredTable(month: string): string {
  return `${AUDIT_ARCHIVE_SCHEMA}.${partitionName(month)}`;
}

async function* archiveLines(file: string): AsyncGenerator<string> {
  const lines = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Infinity });
  for await (const line of lines) yield line;
}

/**
 * Brings an archived month back for an investigation, as `audit_archive.audit_logs_YYYY_MM`: the
 * archive is verified against its manifest first, then loaded in one transaction, read back and
 * compared with the manifest (count and SHA-256 of the same text), and made immutable like the trail.
 */
export async function restoreAuditArchive(db: Database, file: string): Promise<RestoredMonth> {
  const { manifest, files } = await verifyAuditArchive(file);
  const table = restoredTable(manifest.month);
  const relation = `${quote(AUDIT_ARCHIVE_SCHEMA)}.${quote(manifest.partition)}`;
  await db.transaction(async (trx) => {
    await trx.raw("SET LOCAL TimeZone = 'UTC'");
    await trx.raw(`CREATE SCHEMA IF NOT EXISTS ${quote(AUDIT_ARCHIVE_SCHEMA)}`);
    const { rows: existing } = (await trx.raw('SELECT to_regclass(?) AS found', [table])) as {
      rows: Array<{ found: string | null }>;
    };
    if (existing[0]!.found !== null) {
      throw new AuditArchiveRefused(
        `${table} is already restored; \`pas audit drop-restored ${manifest.month}\` removes it first.`,
      );
    }
    await trx.raw(
      `CREATE TABLE ${relation} (${manifest.columns.map((c) => `${quote(c.name)} ${c.type}`).join(', ')})`,
    );
    let batch: string[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      await trx.raw(
        `INSERT INTO ${relation} SELECT * FROM json_populate_recordset(NULL::${relation}, ?::json)`,
        [`[${batch.join(',')}]`],
      );
      batch = [];
    };
    for await (const line of archiveLines(files.data)) {
      batch.push(line);
      if (batch.length >= RESTORE_BATCH) await flush();
    }
    await flush();
    // Read back as it was archived: anything the JSON lines cannot carry (a jsonb column holding
    // JSON null reads back as SQL NULL; the service stores none) fails here, not silently.
    const loaded = await tallyRelation(trx, relation);
    if (loaded.rows !== manifest.rows || loaded.content.digest('hex') !== manifest.sha256_content) {
      refuse(
        files.data,
        'did not load back into the same records (count or SHA-256 differ); nothing was restored.',
      );
    }
    await trx.raw(`
      ALTER TABLE ${relation} ADD PRIMARY KEY (id, created_at);
      CREATE INDEX ON ${relation} (account_id, created_at);
      CREATE TRIGGER audit_logs_no_update BEFORE UPDATE OR DELETE ON ${relation}
        FOR EACH ROW EXECUTE FUNCTION audit_logs_immutable();
      CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON ${relation}
        FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_immutable();
    `);
    // COMMENT takes no parameters; the text is built from a checked manifest (month, file, hex).
    const comment = `Audit records of ${manifest.month}, restored read-only from ${manifest.file} (content SHA-256 ${manifest.sha256_content})`;
    await trx.raw(`COMMENT ON TABLE ${relation} IS '${comment.replace(/'/g, "''")}'`);
  });
  return { month: manifest.month, table, rows: manifest.rows };
}

/** The restored months, oldest first. */
export async function listRestoredAuditMonths(
  db: Database,
): Promise<Array<{ month: string; table: string }>> {
  const { rows } = (await db.raw(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ? AND c.relkind = 'r' ORDER BY c.relname`,
    [AUDIT_ARCHIVE_SCHEMA],
  )) as { rows: Array<{ name: string }> };
  return rows.flatMap(({ name }) => {
    const match = /^audit_logs_(\d{4})_(\d{2})$/.exec(name);
    return match ? [{ month: `${match[1]}-${match[2]}`, table: `${AUDIT_ARCHIVE_SCHEMA}.${name}` }] : [];
  });
}

/** Ends an investigation: the restored copy of `month` goes (its archive file stays where it is). */
export async function dropRestoredAuditMonth(db: Database, month: string): Promise<string> {
  const table = restoredTable(month);
  const { rows } = (await db.raw('SELECT to_regclass(?) AS found', [table])) as {
    rows: Array<{ found: string | null }>;
  };
  if (rows[0]!.found === null) throw new InvalidInput(`${table} is not restored.`);
  await db.raw(`DROP TABLE ${quote(AUDIT_ARCHIVE_SCHEMA)}.${quote(partitionName(month))}`);
  return table;
}
