import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../ops/embedded/embedded-postgres';
import { findPostgresTool, serverMajorVersion } from '../../ops/backup/postgres-tools';
import { freePorts } from './free-ports';

/**
 * A primary of its own (embedded PostgreSQL, as `npm start` runs it) and a hot standby of it made
 * as an operator makes one: `pg_basebackup -R` (tools/postgresql, installed by npm ci), then
 * `postgres` on the copy, streaming from the primary on another loopback port. The suite's shared
 * server is left alone: a base backup of it would copy every suite's database.
 */
export interface StreamingPair {
  /** A database's URL on the primary, and on the standby. */
  primaryUrl(database: string): string;
  standbyUrl(database: string): string;
  /** Fast shutdown of the standby; startStandby() brings it back on the same files and port. */
  stopStandby(): Promise<void>;
  startStandby(): Promise<void>;
  close(): Promise<void>;
}

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 60_000;

/** PostgreSQL refuses to run as root; embedded-postgres then runs it as the user `postgres`, and so do we. */
function postgresUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** The `postgres` server binary the embedded cluster runs (the package ships ES modules only). */
function postgresBinary(): string {
  const binaries = createRequire(__filename)(`@embedded-postgres/${process.platform}-${process.arch}`) as {
    postgres: string;
  };
  return binaries.postgres;
}

/** `url` (the primary's, with its password) pointed at another port and database. */
function urlOn(url: string, port: number, database: string): string {
  const parsed = new URL(url);
  parsed.port = String(port);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function run(command: string, args: string[], user: { uid: number; gid: number } | null) {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`${path.basename(command)} exited with ${code}: ${stderr.trim()}`);
}

/** Until the standby answers as a standby (or the time runs out, with its log). */
async function untilStandbyAnswers(url: string, log: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      const { rows } = await client.query<{ standby: boolean }>('select pg_is_in_recovery() as standby');
      if (rows[0]?.standby) return;
      throw new Error('the copy started as a primary (no standby.signal)');
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`the standby did not start: ${String(error)}\n${log()}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

export async function startStreamingPair(): Promise<StreamingPair> {
  const user = postgresUser();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pas-replica-'));
  // The user `postgres` passes through it to both clusters.
  await chmod(dir, 0o711);
  const [primaryPort, standbyPort] = (await freePorts(2)) as [number, number];
  let primary: EmbeddedPostgres | null = null;
  let standby: ChildProcess | null = null;
  let standbyLog = '';
  const stopOnExit = () => standby?.kill('SIGINT');
  process.on('exit', stopOnExit);

  const standbyDir = path.join(dir, 'standby');
  const startStandby = async () => {
    standbyLog = '';
    const child = spawn(
      postgresBinary(),
      [
        '-D',
        standbyDir,
        '-p',
        String(standbyPort),
        '-c',
        `listen_addresses=${HOST}`,
        '-c',
        'unix_socket_directories=',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) },
    );
    child.stderr!.on('data', (chunk: Buffer) => (standbyLog = (standbyLog + chunk.toString()).slice(-4000)));
    standby = child;
    await untilStandbyAnswers(urlOn(primary!.adminUrl, standbyPort, 'postgres'), () => standbyLog);
  };
  const stopStandby = async () => {
    const child = standby;
    standby = null;
    if (child === null || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGINT');
    });
  };

  try {
    primary = await startEmbeddedPostgres({
      dataDir: path.join(dir, 'primary'),
      port: primaryPort,
      database: 'postgres',
    });
    await mkdir(standbyDir, { mode: 0o700 });
    if (user) await chown(standbyDir, user.uid, user.gid);
    const { major, version } = await serverMajorVersion(primary.adminUrl);
    const basebackup = findPostgresTool('pg_basebackup', major, `the primary is PostgreSQL ${version}`);
    // initdb's pg_hba.conf already lets local connections replicate; -R writes standby.signal and
    // primary_conninfo (this connection string, password included) into the copy.
    const source = new URL(primary.adminUrl);
    source.searchParams.set('application_name', 'pas-test-standby');
    await run(
      basebackup.path,
      ['-d', source.toString(), '-D', standbyDir, '-R', '-X', 'stream', '-c', 'fast'],
      user,
    );
    await startStandby();
  } catch (error) {
    await stopStandby();
    await primary?.stop();
    process.off('exit', stopOnExit);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const primaryAdmin = primary.adminUrl;
  return {
    primaryUrl: (database) => urlOn(primaryAdmin, primaryPort, database),
    standbyUrl: (database) => urlOn(primaryAdmin, standbyPort, database),
    stopStandby,
    startStandby,
    async close() {
      await stopStandby();
      await primary?.stop();
      process.off('exit', stopOnExit);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
