import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { connectDatabase, migrateLatest } from '../../engine/platform/database';
import {
  type BackupManifest,
  checkMigrationLevel,
  DATABASE_PART,
  knownMigrations,
  MANIFEST_NAME,
  parseManifest,
} from './backup-manifest';
import { BackupFileInvalid, readTarEntries, type TarEntry } from './backup-tar';
import { COUNTED_TABLES } from './create-backup';
import { findPostgresTool, libpqConnection, serverMajorVersion } from './postgres-tools';
import { settleInterruptedRuns } from './settle-interrupted-runs';

export interface VerifiedBackup {
  file: string;
  manifest: BackupManifest;
  database: TarEntry;
}

export interface RestoreProgress {
  phase: 'verify' | 'restore';
  bytes: number;
  total: number;
  elapsedMs: number;
}

export class RestoreRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestoreRefused';
  }
}

const MANIFEST_MAX_BYTES = 1024 * 1024;
const READ_CHUNK = 1024 * 1024;

function entryStream(file: string, entry: TarEntry): AsyncIterable<Buffer> {
  if (entry.size === 0) return (async function* () {})();
  return createReadStream(file, {
    start: entry.offset,
    end: entry.offset + entry.size - 1,
    highWaterMark: READ_CHUNK,
  });
}

/**
 * Checks a backup file whole before anything is restored: its tar structure (a truncated file is
 * refused), its manifest (format, a migration level this code knows), and the size and SHA-256 of
 * every part, read to the last byte.
 */
export async function verifyBackup(
  file: string,
  onProgress?: (progress: RestoreProgress) => void,
): Promise<VerifiedBackup> {
  const absolute = path.resolve(file);
  let entries: TarEntry[];
  let manifestBytes: Buffer;
  const handle = await open(absolute, 'r').catch((error: unknown) => {
    throw new BackupFileInvalid(absolute, error instanceof Error ? error.message : String(error));
  });
  try {
    entries = await readTarEntries(handle, absolute);
    const manifestEntry = entries.find((entry) => entry.name === MANIFEST_NAME);
    if (!manifestEntry) throw new BackupFileInvalid(absolute, `it has no ${MANIFEST_NAME}.`);
    if (manifestEntry.size > MANIFEST_MAX_BYTES) {
      throw new BackupFileInvalid(absolute, `its ${MANIFEST_NAME} is implausibly large.`);
    }
    manifestBytes = Buffer.alloc(manifestEntry.size);
    await handle.read(manifestBytes, 0, manifestEntry.size, manifestEntry.offset);
  } finally {
    await handle.close();
  }
  let manifest: BackupManifest;
  try {
    manifest = parseManifest(manifestBytes);
    checkMigrationLevel(manifest, await knownMigrations());
  } catch (error) {
    throw new BackupFileInvalid(absolute, error instanceof Error ? error.message : String(error));
  }
  const listed = new Set([MANIFEST_NAME, ...manifest.parts.map((part) => part.name)]);
  const stray = entries.find((entry) => !listed.has(entry.name));
  if (stray)
    throw new BackupFileInvalid(absolute, `it holds ${stray.name}, which its manifest does not list.`);

  const total = manifest.parts.reduce((sum, part) => sum + part.bytes, 0);
  const started = Date.now();
  let done = 0;
  for (const part of manifest.parts) {
    const entry = entries.find((candidate) => candidate.name === part.name);
    if (!entry) throw new BackupFileInvalid(absolute, `${part.name} is missing.`);
    if (entry.size !== part.bytes) {
      throw new BackupFileInvalid(
        absolute,
        `${part.name} holds ${entry.size} bytes where its manifest says ${part.bytes}.`,
      );
    }
    const hash = createHash('sha256');
    for await (const chunk of entryStream(absolute, entry)) {
      hash.update(chunk);
      done += chunk.length;
      onProgress?.({ phase: 'verify', bytes: done, total, elapsedMs: Date.now() - started });
    }
    if (hash.digest('hex') !== part.sha256) {
      throw new BackupFileInvalid(
        absolute,
        `the SHA-256 of ${part.name} does not match its manifest (corrupted).`,
      );
    }
  }
  return { file: absolute, manifest, database: entries.find((entry) => entry.name === DATABASE_PART)! };
}

const MAINTENANCE_DATABASE = 'postgres';

/** Creates the database a URL names when it does not exist yet (3D000), from the server's maintenance database. */
async function ensureDatabase(url: string): Promise<void> {
  const probe = new pg.Client({ connectionString: url });
  try {
    await probe.connect();
    return;
  } catch (error) {
    if (!(error instanceof Error && 'code' in error && error.code === '3D000')) throw error;
  } finally {
    await probe.end().catch(() => undefined);
  }
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  target.pathname = `/${MAINTENANCE_DATABASE}`;
  const admin = new pg.Client({ connectionString: target.toString() });
  await admin.connect();
  try {
    await admin.query(`create database ${admin.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
}

/** Where `--force` keeps what it replaces until the restore has succeeded. */
const REPLACED_SCHEMA = 'pas_replaced_by_restore';

/** What the database already holds outside PostgreSQL's own schemas (first few names). */
async function userObjects(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(
    `select n.nspname || '.' || c.relname as name
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname not in ('pg_catalog', 'information_schema', $1) and n.nspname not like 'pg_toast%'
        and n.nspname not like 'pg_temp%' and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
      order by 1 limit 5`,
    [REPLACED_SCHEMA],
  );
  return rows.map((row) => row.name);
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * An empty target, or one made empty when the operator said so (`force`). The service keeps
 * everything in the `public` schema; `force` renames it aside (kept until the restore has
 * succeeded, put back if it fails) and starts a new one. Answers whether it did.
 */
async function prepareEmptyDatabase(url: string, force: boolean): Promise<boolean> {
  await ensureDatabase(url);
  return withClient(url, async (client) => {
    let found = await userObjects(client);
    let replaced = false;
    if (found.length > 0 && force) {
      await client.query(`drop schema if exists ${REPLACED_SCHEMA} cascade`);
      await client.query(`alter schema public rename to ${REPLACED_SCHEMA}`);
      await client.query('create schema public');
      replaced = true;
      found = await userObjects(client);
    }
    if (found.length > 0) {
      if (replaced) await putBack(url);
      throw new RestoreRefused(
        `The target database is not empty (it holds ${found.join(', ')}${found.length === 5 ? ', …' : ''}); ` +
          (force
            ? 'those are outside the public schema, which is all --force replaces.'
            : 'restore into an empty database, or pass --force to replace what it holds.'),
      );
    }
    return replaced;
  });
}

/** After a failed restore with `force`: the schema it replaced comes back as it was. */
function putBack(url: string): Promise<void> {
  return withClient(url, async (client) => {
    await client.query('drop schema if exists public cascade');
    await client.query(`alter schema ${REPLACED_SCHEMA} rename to public`);
  });
}

/**
 * Feeds the database part to pg_restore, hashing it again on the way; the last chunk is held back
 * until the hash matches, so a file changed since it was verified never reaches a commit
 * (`--single-transaction`: pg_restore commits only after its input ends).
 */
async function runPgRestore(
  verified: VerifiedBackup,
  databaseUrl: string,
  onProgress?: (progress: RestoreProgress) => void,
): Promise<void> {
  const server = await serverMajorVersion(databaseUrl);
  const dumpMajor = Number.parseInt(verified.manifest.database.pg_dump_version, 10);
  const pgRestore = findPostgresTool(
    'pg_restore',
    Math.max(dumpMajor, 0),
    `the backup was made by pg_dump ${verified.manifest.database.pg_dump_version}; the target is PostgreSQL ${server.version}`,
  );
  const connection = libpqConnection(databaseUrl);
  const child = spawn(
    pgRestore.path,
    [
      '--single-transaction',
      '--exit-on-error',
      '--no-owner',
      '--no-privileges',
      `--dbname=${connection.dbname}`,
    ],
    { env: connection.env, stdio: ['pipe', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  const stdin = child.stdin!;
  // pg_restore exiting early closes its input; the exit code then says why.
  stdin.on('error', () => undefined);
  const write = (chunk: Buffer) =>
    new Promise<void>((resolve) => {
      if (stdin.write(chunk)) resolve();
      else {
        const go = () => {
          stdin.off('close', go);
          stdin.off('drain', go);
          resolve();
        };
        stdin.once('drain', go);
        stdin.once('close', go);
      }
    });

  const started = Date.now();
  const hash = createHash('sha256');
  let held: Buffer | null = null;
  let fed = 0;
  const total = verified.database.size;
  try {
    for await (const chunk of entryStream(verified.file, verified.database)) {
      hash.update(chunk);
      if (held) await write(held);
      if (stdin.destroyed) break;
      held = chunk;
      fed += chunk.length;
      onProgress?.({ phase: 'restore', bytes: fed, total, elapsedMs: Date.now() - started });
    }
    const expected = verified.manifest.parts.find((part) => part.name === DATABASE_PART)!.sha256;
    if (!stdin.destroyed && hash.digest('hex') !== expected) {
      throw new BackupFileInvalid(verified.file, `${DATABASE_PART} changed while it was being restored.`);
    }
    if (held && !stdin.destroyed) await write(held);
    stdin.end();
  } catch (error) {
    child.kill('SIGTERM');
    await exited.catch(() => undefined);
    throw error;
  }
  const code = await exited;
  if (code !== 0)
    throw new Error(`pg_restore (${pgRestore.path}) failed with exit code ${code}: ${stderr.trim()}`);
}

async function countRows(url: string, tables: string[]): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const counts: Record<string, number> = {};
    for (const table of tables) {
      const { rows } = await client.query<{ n: string }>(
        `select count(*) as n from ${client.escapeIdentifier(table)}`,
      );
      counts[table] = Number(rows[0]!.n);
    }
    return counts;
  } finally {
    await client.end();
  }
}

export interface RestoreResult {
  migrationsApplied: string[];
  /** Runs that were RUNNING at the snapshot, now FAILED (see settle-interrupted-runs.ts). */
  settledRuns: string[];
  seconds: number;
}

/**
 * Restores a verified backup into the (empty, or emptied with `force`) database at `databaseUrl`:
 * pg_restore in one transaction, a check of the row counts against the manifest, the migrations
 * this version adds, then the runs that were in flight at the snapshot are settled. With `force`,
 * what the database held is dropped only once all of that has succeeded.
 */
export async function restoreBackup(options: {
  verified: VerifiedBackup;
  databaseUrl: string;
  force: boolean;
  onProgress?: (progress: RestoreProgress) => void;
}): Promise<RestoreResult> {
  const started = Date.now();
  const replaced = await prepareEmptyDatabase(options.databaseUrl, options.force);
  let result: RestoreResult;
  try {
    result = await restoreInto(options);
  } catch (error) {
    if (replaced) await putBack(options.databaseUrl);
    throw error;
  }
  if (replaced) {
    await withClient(options.databaseUrl, (client) => client.query(`drop schema ${REPLACED_SCHEMA} cascade`));
  }
  return { ...result, seconds: (Date.now() - started) / 1000 };
}

async function restoreInto(options: {
  verified: VerifiedBackup;
  databaseUrl: string;
  onProgress?: (progress: RestoreProgress) => void;
}): Promise<RestoreResult> {
  await runPgRestore(options.verified, options.databaseUrl, options.onProgress);

  const expected = options.verified.manifest.database.row_counts;
  const tables = COUNTED_TABLES.filter((table) => table in expected);
  const restored = await countRows(options.databaseUrl, tables);
  const differing = tables.filter((table) => restored[table] !== expected[table]);
  if (differing.length > 0) {
    throw new Error(
      `The restored database does not hold what the backup recorded (${differing
        .map((table) => `${table}: ${restored[table]} rows, expected ${expected[table]}`)
        .join('; ')}).`,
    );
  }

  const db = connectDatabase(options.databaseUrl, 2);
  try {
    const migrationsApplied = await migrateLatest(db);
    const settledRuns = await settleInterruptedRuns(db, options.verified.manifest.snapshot_at);
    return { migrationsApplied, settledRuns, seconds: 0 };
  } finally {
    await db.destroy();
  }
}
