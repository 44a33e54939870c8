import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePorts } from '../support/free-ports';
import {
  eventually,
  hostService,
  isRunning,
  processesIn,
  type HostedService,
} from './fixtures/child-services';

// startEmbeddedPostgres runs in a child process (test/runtime/fixtures/service-host.ts), as it does under
// `npm start`: the exit tests need an owner process they can abandon or kill, and a jest worker cannot be.

interface Ready {
  url: string;
  adminUrl: string;
}

const tempDirs: string[] = [];
const hosts: HostedService<Ready>[] = [];

async function tempDataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pas-pg-test-'));
  tempDirs.push(dir);
  return dir;
}

async function startHosted(dataDir: string, port: number, database = 'pas_test') {
  const host = await hostService<Ready>('postgres', { dataDir, port, database });
  hosts.push(host);
  return host;
}

async function stopHosted(host: HostedService<Ready>): Promise<number | null> {
  host.send('stop');
  return host.exited;
}

/** The generated password, as the service reads it. */
function storedPassword(dataDir: string): string {
  return readFileSync(path.join(dataDir, 'postgres-password'), 'utf8').trim();
}

/** The SQLSTATE of a failed sign-in, or 'connected'. */
async function signInOutcome(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    return 'connected';
  } catch (error) {
    return String((error as { code?: unknown }).code);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function query<Row>(url: string, sql: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Row[];
  } finally {
    await client.end();
  }
}

function postmasterPid(clusterDir: string): number {
  return Number.parseInt(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8'), 10);
}

afterEach(async () => {
  // A failed test must not leave servers behind: stop hosts, then any postmaster they orphaned.
  for (const host of hosts.splice(0)) {
    if (host.child.exitCode === null && host.child.signalCode === null) host.child.kill('SIGKILL');
  }
  for (const dir of tempDirs) {
    const cluster = path.join(dir, 'postgres');
    for (const pid of processesIn(cluster)) {
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {
        // Already gone.
      }
    }
    await eventually(() => processesIn(cluster).length === 0, 10_000);
  }
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('startEmbeddedPostgres', () => {
  test('initialises a cluster, serves queries on 127.0.0.1, and stops without leaving a process', async () => {
    const dataDir = await tempDataDir();
    const [port] = await freePorts(1);
    const host = await startHosted(dataDir, port!);
    const password = storedPassword(dataDir);
    expect(password).toMatch(/^[0-9a-f]{64}$/);
    expect(host.answer).toEqual({
      ready: {
        url: `postgres://postgres:${password}@127.0.0.1:${port}/pas_test`,
        adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
      },
    });
    const { url, adminUrl } = host.answer.ready!;
    expect(await query(url, 'select 1 as one, current_database() as db')).toEqual([
      { one: 1, db: 'pas_test' },
    ]);
    expect(
      await query(
        adminUrl,
        "select current_database() as db, current_setting('listen_addresses') as listen, " +
          "current_setting('unix_socket_directories') as sockets, pg_encoding_to_char(encoding) as encoding " +
          'from pg_database where datname = current_database()',
      ),
    ).toEqual([{ db: 'postgres', listen: '127.0.0.1', sockets: '', encoding: 'UTF8' }]);

    const cluster = path.join(dataDir, 'postgres');
    const pid = postmasterPid(cluster);
    expect(isRunning(pid)).toBe(true);
    expect(processesIn(cluster).length).toBeGreaterThan(1); // postmaster plus its auxiliary processes

    expect(await stopHosted(host)).toBe(0);
    expect(isRunning(pid)).toBe(false);
    expect(processesIn(cluster)).toEqual([]);
    expect(existsSync(path.join(cluster, 'postmaster.pid'))).toBe(false);
    expect(
      spawnSync('ps', ['-o', 'pid=', '-p', String(pid)])
        .stdout.toString()
        .trim(),
    ).toBe('');
  });

  test('a second start on the same folder reuses the cluster and its data', async () => {
    const dataDir = await tempDataDir();
    const [port] = await freePorts(1);
    const first = await startHosted(dataDir, port!);
    await query(
      first.answer.ready!.url,
      "create table kept (note text); insert into kept values ('still here')",
    );
    expect(await stopHosted(first)).toBe(0);
    expect(first.stderr()).toContain('initialising a new PostgreSQL cluster');
    expect(first.stderr()).toContain('created database "pas_test"');

    const second = await startHosted(dataDir, port!);
    expect(second.answer.ready).toBeDefined();
    expect(await query(second.answer.ready!.url, 'select note from kept')).toEqual([{ note: 'still here' }]);
    expect(second.stderr()).not.toContain('initialising a new PostgreSQL cluster');
    expect(second.stderr()).not.toContain('created database');
    expect(await stopHosted(second)).toBe(0);
  });

  test('the server does not outlive a parent that exits without stopping it', async () => {
    const dataDir = await tempDataDir();
    const [port] = await freePorts(1);
    const host = await startHosted(dataDir, port!);
    const cluster = path.join(dataDir, 'postgres');
    const pid = postmasterPid(cluster);

    host.send('exit');
    expect(await host.exited).toBe(0);
    expect(await eventually(() => processesIn(cluster).length === 0, 10_000)).toBe(true);
    expect(isRunning(pid)).toBe(false);
  });

  test('removes a postmaster.pid whose process is gone and starts', async () => {
    const dataDir = await tempDataDir();
    const [port] = await freePorts(1);
    expect(await stopHosted(await startHosted(dataDir, port!))).toBe(0);
    // What a postmaster killed with SIGKILL leaves behind: its pid file, naming a process that is gone.
    const gone = spawnSync('true').pid!;
    const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
    await writeFile(
      pidFile,
      `${gone}\n${path.join(dataDir, 'postgres')}\n1700000000\n${port}\n\n127.0.0.1\n`,
    );

    const host = await startHosted(dataDir, port!);
    expect(host.answer.error).toBeUndefined();
    expect(host.stderr()).toContain(`removing stale ${pidFile} (pid ${gone} is not running)`);
    expect(await query(host.answer.ready!.url, 'select 1 as one')).toEqual([{ one: 1 }]);
    expect(await stopHosted(host)).toBe(0);
  });

  test('refuses to start beside a server left running by a killed parent', async () => {
    const dataDir = await tempDataDir();
    const [port, otherPort] = await freePorts(2);
    const killed = await startHosted(dataDir, port!);
    const cluster = path.join(dataDir, 'postgres');
    const orphan = postmasterPid(cluster);
    // SIGKILL runs no exit handler, so the postmaster survives its parent.
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(isRunning(orphan)).toBe(true);

    const second = await startHosted(dataDir, otherPort!);
    expect(await second.exited).toBe(1);
    expect(second.answer.error).toContain(`PostgreSQL is already running on ${cluster} (pid `);
    expect(second.answer.error).toMatch(new RegExp(`\\(pid [\\d, ]*\\b${orphan}\\b`));
    // The running server was left alone and still answers.
    expect(await query(killed.answer.ready!.url, 'select 1 as one')).toEqual([{ one: 1 }]);
  });

  test('a new cluster refuses the old fixed password; its own is kept in DATA_DIR with mode 0600', async () => {
    const dataDir = await tempDataDir();
    const [port] = await freePorts(1);
    const host = await startHosted(dataDir, port!);
    const file = path.join(dataDir, 'postgres-password');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // 28P01: invalid_password.
    expect(await signInOutcome(`postgres://postgres:postgres@127.0.0.1:${port}/pas_test`)).toBe('28P01');
    expect(await signInOutcome(`postgres://postgres:postgres@127.0.0.1:${port}/postgres`)).toBe('28P01');
    expect(await signInOutcome(host.answer.ready!.url)).toBe('connected');
    expect(host.stderr()).not.toContain(storedPassword(dataDir));

    // A second start keeps the password (and tightens a file someone loosened).
    expect(await stopHosted(host)).toBe(0);
    const before = storedPassword(dataDir);
    await chmod(file, 0o644);
    const again = await startHosted(dataDir, port!);
    expect(again.answer.ready!.url).toBe(`postgres://postgres:${before}@127.0.0.1:${port}/pas_test`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(again.stderr()).toContain('restricting it to the service');
    expect(await stopHosted(again)).toBe(0);
  });

  test('a cluster created with the old fixed password is given a generated one on its next start', async () => {
    const dataDir = await tempDataDir();
    const [port] = await freePorts(1);
    // What an earlier version left: a cluster whose password is `postgres`, and no password file.
    const first = await startHosted(dataDir, port!);
    await query(first.answer.ready!.url, "create table kept (note text); insert into kept values ('mine')");
    await query(first.answer.ready!.adminUrl, "alter role postgres password 'postgres'");
    expect(await stopHosted(first)).toBe(0);
    await rm(path.join(dataDir, 'postgres-password'));

    const second = await startHosted(dataDir, port!);
    expect(second.answer.error).toBeUndefined();
    expect(second.stderr()).toContain('replaced the legacy PostgreSQL password with the generated one');
    const password = storedPassword(dataDir);
    expect(password).toMatch(/^[0-9a-f]{64}$/);
    expect(second.answer.ready!.url).toBe(`postgres://postgres:${password}@127.0.0.1:${port}/pas_test`);
    expect(await query(second.answer.ready!.url, 'select note from kept')).toEqual([{ note: 'mine' }]);
    expect(await signInOutcome(`postgres://postgres:postgres@127.0.0.1:${port}/pas_test`)).toBe('28P01');
    expect(await stopHosted(second)).toBe(0);

    // Started again, it signs in with the generated password straight away.
    const third = await startHosted(dataDir, port!);
    expect(third.stderr()).not.toContain('legacy');
    expect(await query(third.answer.ready!.url, 'select note from kept')).toEqual([{ note: 'mine' }]);
    expect(await stopHosted(third)).toBe(0);
  });
});
