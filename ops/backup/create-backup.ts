import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  type BackupManifest,
  DATABASE_PART,
  MANIFEST_NAME,
  serviceIdentity,
} from './backup-manifest';
import { TarWriter } from './backup-tar';
import { findPostgresTool, libpqConnection, serverMajorVersion } from './postgres-tools';

/** Tables whose row counts the manifest records (those that exist at the backup's level). */
export const COUNTED_TABLES = [
  'accounts',
  'users',
  'api_keys',
  'entities',
  'audit_logs',
  'file_chunks',
  'workflow_executions',
  'worker_executions',
] as const;

/**
 * How pg_dump compresses the archive: zstd at level 1 (PostgreSQL 16+). pg_dump copies bytea as hex,
 * twice its size; zstd's entropy coding brings that back to about the bytes' own size, and JSON rows
 * to a fraction, at close to copy speed. lz4 leaves the hex doubled, and gzip, pg_dump's default,
 * took 7 to 16 times as long on file bytes (measured: `npm run bench -- backup`).
 */
function compressionFor(pgDumpMajor: number): string {
  return pgDumpMajor >= 16 ? 'zstd:1' : '0';
}

/** How long pg_dump waits for a table lock (a migration running) before it gives up. */
const LOCK_WAIT_TIMEOUT = '120s';

export interface BackupProgress {
  bytes: number;
  elapsedMs: number;
}

export interface BackupResult {
  file: string;
  bytes: number;
  seconds: number;
  manifest: BackupManifest;
}

export class BackupFailed extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BackupFailed';
  }
}

/** Migrations and row counts read inside the snapshot that pg_dump also reads. */
async function describeSnapshot(client: pg.Client): Promise<{
  applied: string[];
  rowCounts: Record<string, number>;
}> {
  const { rows: present } = await client.query<{ name: string }>(
    `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind in ('r', 'p') and c.relname = any($1)`,
    [['knex_migrations', ...COUNTED_TABLES]],
  );
  const has = new Set(present.map((row) => row.name));
  const applied = has.has('knex_migrations')
    ? (await client.query<{ name: string }>('select name from knex_migrations order by id')).rows.map(
        (row) => row.name,
      )
    : [];
  const rowCounts: Record<string, number> = {};
  for (const table of COUNTED_TABLES) {
    if (!has.has(table)) continue;
    const { rows } = await client.query<{ n: string }>(`select count(*) as n from ${table}`);
    rowCounts[table] = Number(rows[0]!.n);
  }
  return { applied, rowCounts };
}

/**
 * Writes a backup of the database at `databaseUrl` to `output`, while the service keeps running.
 * One snapshot covers everything: a REPEATABLE READ transaction exports its snapshot, pg_dump
 * dumps exactly that snapshot (`--snapshot`), and the manifest's migration level and row counts
 * are read in it too. The file is written as `<output>.partial`, flushed to disk and then renamed,
 * so a file under the final name is always complete; on any failure the partial file goes.
 */
export async function createBackup(options: {
  databaseUrl: string;
  output: string;
  onProgress?: (progress: BackupProgress) => void;
}): Promise<BackupResult> {
  const output = path.resolve(options.output);
  if (existsSync(output)) {
    throw new BackupFailed(`${output} already exists; choose another name or remove it first.`);
  }
  const started = Date.now();
  const server = await serverMajorVersion(options.databaseUrl);
  const pgDump = findPostgresTool('pg_dump', server.major, `the server is PostgreSQL ${server.version}`);
  const partial = `${output}.partial`;

  const snapshot = new pg.Client({ connectionString: options.databaseUrl });
  await snapshot.connect();
  let handle: Awaited<ReturnType<typeof open>> | null = null;
  let dumper: ReturnType<typeof spawn> | null = null;
  try {
    await snapshot.query('begin isolation level repeatable read, read only');
    const { rows } = await snapshot.query<{ id: string; at: Date }>(
      'select pg_export_snapshot() as id, now() as at',
    );
    const { id: snapshotId, at: snapshotAt } = rows[0]!;
    const described = await describeSnapshot(snapshot);

    handle = await open(partial, 'w', 0o600);
    const tar = new TarWriter(handle, snapshotAt);
    const connection = libpqConnection(options.databaseUrl);
    const child = spawn(
      pgDump.path,
      [
        '--format=custom',
        `--compress=${compressionFor(pgDump.major)}`,
        `--snapshot=${snapshotId}`,
        `--lock-wait-timeout=${LOCK_WAIT_TIMEOUT}`,
        '--no-owner',
        '--no-privileges',
        `--dbname=${connection.dbname}`,
      ],
      { env: connection.env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    dumper = child;
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    const exited = new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code) => resolve(code));
    });
    const hash = createHash('sha256');
    let dumped = 0;
    const counted = async function* () {
      for await (const chunk of child.stdout! as AsyncIterable<Buffer>) {
        hash.update(chunk);
        dumped += chunk.length;
        options.onProgress?.({ bytes: dumped, elapsedMs: Date.now() - started });
        yield chunk;
      }
    };
    const [size, code] = await Promise.all([tar.addStream(DATABASE_PART, counted()), exited]);
    if (code !== 0) {
      throw new BackupFailed(`pg_dump (${pgDump.path}) failed with exit code ${code}: ${stderr.trim()}`);
    }
    await snapshot.query('commit');

    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      format_version: BACKUP_FORMAT_VERSION,
      service: serviceIdentity(),
      migrations: { level: described.applied.at(-1) ?? null, applied: described.applied },
      snapshot_at: snapshotAt.toISOString(),
      completed_at: new Date().toISOString(),
      database: {
        server_version: server.version,
        pg_dump_version: pgDump.version,
        row_counts: described.rowCounts,
      },
      parts: [
        { name: DATABASE_PART, bytes: size, sha256: hash.digest('hex'), kind: 'pg_dump custom format' },
      ],
    };
    await tar.addBuffer(MANIFEST_NAME, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`));
    await tar.finish();
    await handle.sync();
    await handle.close();
    handle = null;
    await rename(partial, output);
    // The rename itself is durable only once the folder is flushed.
    const folder = await open(path.dirname(output), 'r');
    try {
      await folder.sync();
    } finally {
      await folder.close();
    }
    return { file: output, bytes: tar.bytesWritten, seconds: (Date.now() - started) / 1000, manifest };
  } catch (error) {
    if (dumper && dumper.exitCode === null) dumper.kill('SIGTERM');
    await handle?.close().catch(() => undefined);
    await rm(partial, { force: true });
    if (error instanceof BackupFailed) throw error;
    throw new BackupFailed(
      `Backup failed: ${error instanceof Error ? error.message : String(error)}; nothing was written to ${output}.`,
      { cause: error },
    );
  } finally {
    await snapshot.end().catch(() => undefined);
  }
}
