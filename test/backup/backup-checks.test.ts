import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import knexFactory from 'knex';
import { createAccount, createApiKey } from '../../engine/identity/account-store';
import {
  type BackupManifest,
  DATABASE_PART,
  knownMigrations,
  MANIFEST_NAME,
} from '../../ops/backup/backup-manifest';
import { readTarEntries, TarWriter } from '../../ops/backup/backup-tar';
import { findPostgresTool, PostgresToolMissing } from '../../ops/backup/postgres-tools';
import { connectDatabase, type Database } from '../../engine/platform/database';
import { freePorts } from '../support/free-ports';
import { migrationSource } from '../../engine/platform/migrations-source';
import { pas } from '../support/pas-cli';
import { createTestDatabase } from '../support/test-database';

/**
 * What `pas restore` refuses, before it writes anything: damaged and truncated files, a target that
 * is not empty, a backup of a newer version; and the migration of a backup made at an older level.
 * Against DATABASE_URL databases on the suite's PostgreSQL.
 */
const ROOT = path.resolve(__dirname, '..', '..');

function adminUrl(): string {
  return process.env.TEST_DATABASE_ADMIN_URL!;
}

function databaseUrl(name: string): string {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

async function adminQuery<T>(sql: string, bindings: unknown[] = []): Promise<T[]> {
  const admin = knexFactory({ client: 'pg', connection: adminUrl(), pool: { min: 0, max: 1 } });
  try {
    return ((await admin.raw(sql, bindings as never[])) as { rows: T[] }).rows;
  } finally {
    await admin.destroy();
  }
}

let counter = 0;
/** A name for a database that does not exist yet (the restore creates it). */
const freshName = () => `pas_restore_${process.pid}_${Date.now()}_${counter++}`;

async function databaseExists(name: string): Promise<boolean> {
  return (await adminQuery('select 1 from pg_database where datname = ?', [name])).length > 0;
}

async function dropDatabase(name: string): Promise<void> {
  await adminQuery(`drop database if exists ${name} with (force)`);
}

/** The shape a database's schema has: columns, indexes and triggers, for comparing two of them. */
async function schemaOf(db: Database): Promise<unknown> {
  const columns = (await db.raw(
    `select table_name, column_name, data_type, is_nullable, column_default from information_schema.columns
      where table_schema = 'public' order by 1, 2`,
  )) as { rows: unknown[] };
  const indexes = (await db.raw(
    "select tablename, indexname, indexdef from pg_indexes where schemaname = 'public' order by 1, 2",
  )) as { rows: unknown[] };
  const triggers = (await db.raw(
    `select c.relname, t.tgname from pg_trigger t join pg_class c on c.oid = t.tgrelid
      where not t.tgisinternal order by 1, 2`,
  )) as { rows: unknown[] };
  return { columns: columns.rows, indexes: indexes.rows, triggers: triggers.rows };
}

describe('pas restore checks', () => {
  let source: Awaited<ReturnType<typeof createTestDatabase>>;
  let workDir: string;
  let backupFile: string;
  let accountId: string;
  const created: string[] = [];

  beforeAll(async () => {
    await mkdir(path.join(ROOT, '.test-data'), { recursive: true });
    workDir = await mkdtemp(path.join(ROOT, '.test-data', 'backup-checks-'));
    // Run as root, an embedded PostgreSQL runs as "postgres", which must pass through to a DATA_DIR inside.
    await chmod(workDir, 0o711);
    source = await createTestDatabase();
    ({ accountId } = await createAccount(source.db, { name: 'Acme', ownerEmail: 'pm@example.com' }));
    await createApiKey(source.db, { accountId, description: 'kept' });
    backupFile = path.join(workDir, 'good.tar');
    const made = pas(source.url, 'backup', '--output', backupFile);
    expect({ status: made.status, stderr: made.stderr }).toEqual({ status: 0, stderr: '' });
  }, 120_000);

  afterAll(async () => {
    for (const name of created) await dropDatabase(name);
    await source.drop();
    await rm(workDir, { recursive: true, force: true });
  });

  /** A restore that must be refused: exit 1, the message, and no target database created. */
  async function expectRefused(file: string, message: string | RegExp): Promise<void> {
    const name = freshName();
    created.push(name);
    const result = pas(databaseUrl(name), 'restore', file);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).not.toContain('Restoring into');
    expect(await databaseExists(name)).toBe(false);
  }

  async function copyWith(name: string, change: (bytes: Buffer) => Buffer): Promise<string> {
    const file = path.join(workDir, name);
    await writeFile(file, change(await readFile(backupFile)));
    return file;
  }

  async function entriesOf(file: string) {
    const handle = await open(file, 'r');
    try {
      return await readTarEntries(handle, file);
    } finally {
      await handle.close();
    }
  }

  test('a good backup restores into a database that does not exist yet, equal to its source', async () => {
    const name = freshName();
    created.push(name);
    const result = pas(databaseUrl(name), 'restore', backupFile);
    expect({ status: result.status, stderr: result.stderr }).toEqual({ status: 0, stderr: '' });
    expect(result.stdout).toContain("The backup was at this version's migration level.");
    const restored = connectDatabase(databaseUrl(name), 1);
    try {
      for (const table of ['accounts', 'users', 'api_keys', 'knex_migrations']) {
        expect([table, await restored(table).orderByRaw('1')]).toEqual([
          table,
          await source.db(table).orderByRaw('1'),
        ]);
      }
    } finally {
      await restored.destroy();
    }
  });

  test('a truncated backup is refused before anything is written', async () => {
    const { size } = await stat(backupFile);
    const entries = await entriesOf(backupFile);
    const dump = entries.find((entry) => entry.name === DATABASE_PART)!;
    // Cut inside the database part, and cut only the end-of-archive blocks.
    await expectRefused(
      await copyWith('cut-in-dump.tar', (bytes) =>
        bytes.subarray(0, dump.offset + Math.floor(dump.size / 2)),
      ),
      /truncated/,
    );
    await expectRefused(
      await copyWith('cut-at-end.tar', (bytes) => bytes.subarray(0, size - 1024)),
      /truncated/,
    );
    await expectRefused(await copyWith('empty.tar', () => Buffer.alloc(0)), /truncated/);
  });

  test('a corrupted backup is refused before anything is written', async () => {
    const entries = await entriesOf(backupFile);
    const dump = entries.find((entry) => entry.name === DATABASE_PART)!;
    const manifest = entries.find((entry) => entry.name === MANIFEST_NAME)!;
    await expectRefused(
      await copyWith('flipped-dump.tar', (bytes) => {
        const copy = Buffer.from(bytes);
        copy[dump.offset + 100] = copy[dump.offset + 100]! ^ 0xff;
        return copy;
      }),
      /SHA-256 of database\.pgdump does not match its manifest/,
    );
    await expectRefused(
      await copyWith('flipped-manifest.tar', (bytes) => {
        const copy = Buffer.from(bytes);
        copy[manifest.offset] = 0x78; // the opening brace
        return copy;
      }),
      /manifest is not valid JSON/,
    );
    await expectRefused(
      await copyWith('flipped-header.tar', (bytes) => {
        const copy = Buffer.from(bytes);
        copy[10] = copy[10]! ^ 0x01;
        return copy;
      }),
      /header at byte 0 is damaged/,
    );
    await expectRefused(path.join(workDir, 'no-such-file.tar'), /ENOENT/);
  });

  test('into DATA_DIR, a damaged backup leaves the folder uncreated', async () => {
    const dataDir = path.join(workDir, 'never-made');
    const damaged = await copyWith('cut-for-data-dir.tar', (bytes) => bytes.subarray(0, bytes.length - 1024));
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: '1' };
    delete env.DATABASE_URL;
    const result = spawnSync(process.execPath, [path.join(ROOT, 'ops/cli/pas.mjs'), 'restore', damaged], {
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/truncated/);
    expect(existsSync(dataDir)).toBe(false);
  });

  /** A copy of the good backup whose manifest `change` edits (the database part is kept as it is). */
  async function withManifest(name: string, change: (manifest: BackupManifest) => void): Promise<string> {
    const entries = await entriesOf(backupFile);
    const bytes = await readFile(backupFile);
    const slice = (part: string) => {
      const entry = entries.find((candidate) => candidate.name === part)!;
      return bytes.subarray(entry.offset, entry.offset + entry.size);
    };
    const manifest = JSON.parse(slice(MANIFEST_NAME).toString()) as BackupManifest;
    change(manifest);
    const file = path.join(workDir, name);
    const handle = await open(file, 'w');
    const tar = new TarWriter(handle, new Date());
    await tar.addBuffer(DATABASE_PART, slice(DATABASE_PART));
    await tar.addBuffer(MANIFEST_NAME, Buffer.from(JSON.stringify(manifest)));
    await tar.finish();
    await handle.close();
    return file;
  }

  test('a backup of a newer version (an unknown migration) is refused', async () => {
    const file = await withManifest('newer.tar', (manifest) => {
      manifest.migrations.applied.push('29991231000000_from_the_future');
      manifest.migrations.level = '29991231000000_from_the_future';
    });
    await expectRefused(
      file,
      /made by a newer version of the service .*29991231000000_from_the_future is unknown here/,
    );
  });

  test('a --force restore that fails puts back what the database held', async () => {
    // The archive is sound but the manifest promises one more account than it holds: the restore
    // fails after pg_restore, at the row-count check.
    const file = await withManifest('miscounted.tar', (manifest) => {
      manifest.database.row_counts.accounts! += 1;
    });
    const other = await createTestDatabase();
    try {
      await createAccount(other.db, { name: 'Kept', ownerEmail: 'kept@example.com' });
      const before = await other.db('accounts').orderBy('id');
      const failed = pas(other.url, 'restore', '--force', file);
      expect(failed.status).toBe(1);
      expect(failed.stderr).toMatch(
        /does not hold what the backup recorded \(accounts: \d+ rows, expected \d+\)/,
      );
      expect(await other.db('accounts').orderBy('id')).toEqual(before);
      const schemas = (await other.db.raw(
        "select nspname from pg_namespace where nspname like 'pas_replaced%'",
      )) as {
        rows: unknown[];
      };
      expect(schemas.rows).toEqual([]);
    } finally {
      await other.drop();
    }
  });

  test('a failed restore into a new DATA_DIR leaves no folder behind', async () => {
    const file = await withManifest('miscounted-for-data-dir.tar', (manifest) => {
      manifest.database.row_counts.accounts! += 1;
    });
    const dataDir = path.join(workDir, 'failed-restore');
    const [postgresPort] = await freePorts(1);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATA_DIR: dataDir,
      EMBEDDED_POSTGRES_PORT: String(postgresPort),
    };
    delete env.DATABASE_URL;
    const result = spawnSync(process.execPath, [path.join(ROOT, 'ops/cli/pas.mjs'), 'restore', file], {
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect({ status: result.status, stdout: result.stdout }).toEqual({
      status: 1,
      stdout: expect.stringContaining(`Restoring into DATA_DIR ${dataDir}`),
    });
    expect(result.stderr).toMatch(/does not hold what the backup recorded/);
    expect(existsSync(dataDir)).toBe(false);
  });

  test('a non-empty target is refused and left as it was; --force replaces it', async () => {
    const other = await createTestDatabase();
    try {
      await createAccount(other.db, { name: 'Someone else', ownerEmail: 'x@example.com' });
      const before = await other.db('accounts').orderBy('id');
      const refused = pas(other.url, 'restore', backupFile);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toMatch(/The target database is not empty \(it holds public\.[a-z_]+/);
      expect(refused.stderr).toContain('pass --force');
      expect(await other.db('accounts').orderBy('id')).toEqual(before);

      const forced = pas(other.url, 'restore', '--force', backupFile);
      expect({ status: forced.status, stderr: forced.stderr }).toEqual({ status: 0, stderr: '' });
      const fresh = connectDatabase(other.url, 1);
      try {
        expect(await fresh('accounts').orderBy('id')).toEqual(await source.db('accounts').orderBy('id'));
      } finally {
        await fresh.destroy();
      }
    } finally {
      await other.drop();
    }
  });

  test('a backup made before a migration is migrated forward on restore', async () => {
    const known = await knownMigrations();
    const last = known.at(-1)!;
    const oldName = freshName();
    created.push(oldName);
    await adminQuery(`create database ${oldName}`);
    const old = connectDatabase(databaseUrl(oldName), 2);
    try {
      // The database as the version before the last migration left it.
      await old.migrate.latest({
        migrationSource: {
          ...migrationSource,
          getMigrations: async () => (await migrationSource.getMigrations([])).slice(0, -1),
        },
      });
      await createAccount(old, { name: 'Older', ownerEmail: 'old@example.com' });
    } finally {
      await old.destroy();
    }
    const oldBackup = path.join(workDir, 'older.tar');
    const made = pas(databaseUrl(oldName), 'backup', '--output', oldBackup);
    expect(made.status).toBe(0);
    expect(made.stdout).toContain(`migration ${known.at(-2)}`);

    const name = freshName();
    created.push(name);
    const restored = pas(databaseUrl(name), 'restore', oldBackup);
    expect({ status: restored.status, stderr: restored.stderr }).toEqual({ status: 0, stderr: '' });
    expect(restored.stdout).toContain(`Migrated forward: ${last}.`);
    const db = connectDatabase(databaseUrl(name), 1);
    try {
      expect(await db('knex_migrations').orderBy('id').pluck('name')).toEqual(known);
      expect(await db('accounts').where({ name: 'Older' }).pluck('name')).toEqual(['Older']);
      // The same schema as a database migrated from scratch.
      expect(await schemaOf(db)).toEqual(await schemaOf(source.db));
    } finally {
      await db.destroy();
    }
  });

  test('a pg_dump too old for the server is named with its version and how to get one', () => {
    expect(() => findPostgresTool('pg_dump', 99, 'the server is PostgreSQL 99.0', '')).toThrow(
      PostgresToolMissing,
    );
    expect(() => findPostgresTool('pg_dump', 99, 'the server is PostgreSQL 99.0', '')).toThrow(
      /pg_dump 99 or later is needed \(the server is PostgreSQL 99\.0\), but .*tools\/postgresql\/bin\/pg_dump is 18\.\d+/,
    );
  });
});
