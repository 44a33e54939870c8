import { readFileSync } from 'node:fs';
import path from 'node:path';
import { migrationSource } from '../../engine/platform/migrations-source';

/**
 * manifest.json, the last part of a backup file: what made it, from which migration level, when,
 * and the size and SHA-256 of every other part. A restore checks all of it before touching its
 * target.
 */
export const MANIFEST_NAME = 'manifest.json';
export const DATABASE_PART = 'database.pgdump';
export const BACKUP_FORMAT = 'portfolio-analytics-service backup';
export const BACKUP_FORMAT_VERSION = 1;

export interface BackupPart {
  name: string;
  bytes: number;
  sha256: string;
  /** How to read it: the database part is a pg_dump custom-format archive. */
  kind: 'pg_dump custom format';
}

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  service: { name: string; version: string };
  /** The knex migrations applied in the dumped database, oldest first; `level` is the last. */
  migrations: { level: string | null; applied: string[] };
  /** When the snapshot was taken (ISO 8601, UTC): every write committed before it is in the backup. */
  snapshot_at: string;
  /** When the backup file was complete. */
  completed_at: string;
  database: {
    server_version: string;
    pg_dump_version: string;
    /** Rows of a few tables at the snapshot, read in the snapshot: a restore compares them. */
    row_counts: Record<string, number>;
  };
  parts: BackupPart[];
}

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

export function serviceIdentity(): { name: string; version: string } {
  const pkg = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
  };
  return { name: pkg.name, version: pkg.version };
}

/** The migrations this code knows, in order. */
export async function knownMigrations(): Promise<string[]> {
  return (await migrationSource.getMigrations([])).map((m) => migrationSource.getMigrationName(m));
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Parses and checks a manifest; the message names the first thing wrong. */
export function parseManifest(bytes: Buffer): BackupManifest {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new Error('its manifest is not valid JSON (corrupted?).');
  }
  if (!isObject(value) || value.format !== BACKUP_FORMAT) {
    throw new Error('its manifest is not one of this service.');
  }
  if (value.format_version !== BACKUP_FORMAT_VERSION) {
    throw new Error(
      `it is in backup format ${String(value.format_version)}; this version reads format ${BACKUP_FORMAT_VERSION}.`,
    );
  }
  const migrations = value.migrations;
  const parts = value.parts;
  const database = value.database;
  if (
    !isObject(migrations) ||
    !Array.isArray(migrations.applied) ||
    !migrations.applied.every((name) => typeof name === 'string') ||
    !isObject(database) ||
    typeof database.pg_dump_version !== 'string' ||
    !isObject(database.row_counts) ||
    !isObject(value.service) ||
    typeof value.snapshot_at !== 'string' ||
    !Array.isArray(parts) ||
    !parts.every(
      (part) =>
        isObject(part) &&
        typeof part.name === 'string' &&
        Number.isSafeInteger(part.bytes) &&
        typeof part.sha256 === 'string' &&
        /^[0-9a-f]{64}$/.test(part.sha256),
    )
  ) {
    throw new Error('its manifest lacks a field or has one of the wrong type.');
  }
  if (!parts.some((part) => isObject(part) && part.name === DATABASE_PART)) {
    throw new Error(`its manifest lists no ${DATABASE_PART}.`);
  }
  return value as unknown as BackupManifest;
}

/**
 * A backup can be restored by this code when every migration it had applied is one this code
 * knows, in the same order: it is then this version's level or an older one, which the restore
 * migrates forward.
 */
export function checkMigrationLevel(manifest: BackupManifest, known: string[]): void {
  const unknown = manifest.migrations.applied.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new Error(
      `it was made by a newer version of the service (${manifest.service.name} ${manifest.service.version}, ` +
        `migration ${unknown.at(-1)} is unknown here); restore it with that version or a later one.`,
    );
  }
  const order = manifest.migrations.applied.map((name) => known.indexOf(name));
  if (order.some((index, i) => i > 0 && index < order[i - 1]!)) {
    throw new Error('its migrations are listed out of order (corrupted manifest?).');
  }
}
