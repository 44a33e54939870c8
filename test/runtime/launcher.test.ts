import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Every live descendant of `pid`, read from /proc (Linux). */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z') parentOf.set(Number(entry), Number(fields[1]));
    } catch {
      // the process ended while we looked
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length) {
    const parent = queue.shift()!;
    for (const [child, ppid] of parentOf) {
      if (ppid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The descendant of `root` whose command line contains `part`. */
function descendantRunning(root: number, part: string): number | undefined {
  return descendants(root).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(part);
    } catch {
      return false;
    }
  });
}

async function eventually<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

interface Started {
  child: ChildProcess;
  output: () => string;
}

async function startLauncher(env: Record<string, string>): Promise<Started> {
  let output = '';
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', '--import', 'tsx', 'engine/runtime/launcher.ts'],
    {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 150_000;
  while (!output.includes('Press Ctrl+C to stop.')) {
    if (child.exitCode !== null) throw new Error(`launcher exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`launcher did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { child, output: () => output };
}

async function stop(started: Started): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => started.child.once('exit', (code) => resolve(code)));
  started.child.kill('SIGTERM');
  return exited;
}

/** `npm start` end to end: embedded PostgreSQL and Temporal, api and worker, clean stop, data reuse. */
describe('launcher', () => {
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(ROOT, '.test-data', 'launcher-'));
    env = {
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
      EMBEDDED_POSTGRES_PORT: String(await freePort()),
      TEMPORAL_DEV_PORT: String(await freePort()),
      TEMPORAL_UI_PORT: String(await freePort()),
      LOG_LEVEL: 'warn',
      // The outage test's load must meet 503s, not the rate limit.
      RATE_LIMIT_PER_MINUTE: '100000',
    };
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  test('starts everything, prints the URLs and first credentials, stops with no child left, reuses data', async () => {
    const first = await startLauncher(env);
    const out = first.output();
    const baseUrl = `http://127.0.0.1:${env.PORT}/v2`;
    expect(out).toContain(`API base URL:     ${baseUrl}`);
    expect(out).toContain(`Temporal UI:      http://127.0.0.1:${env.TEMPORAL_UI_PORT}`);
    const sid = /Account SID:\s+(sid_[A-Za-z0-9]{25})/.exec(out)?.[1];
    const token = /Auth token:\s+([A-Za-z0-9]{40})/.exec(out)?.[1];
    expect(sid).toBeDefined();
    expect(token).toBeDefined();

    const health = await fetch(`${baseUrl}/health_check`);
    expect(await health.json()).toMatchObject({
      api_status: 'OK',
      version: 'v2',
      name: 'Portfolio Analytics Service',
      // CALC_BACKEND defaults to auto: the start-up probe picked one of its candidates.
      calculation_backend: {
        chosen_by: 'probe',
        name: expect.stringMatching(/^(typed|threads|wasm|gpujs)$/),
      },
    });
    const ui = await fetch(`http://127.0.0.1:${env.TEMPORAL_UI_PORT}/`);
    expect(ui.status).toBe(200);
    const created = await fetch(`${baseUrl}/workspaces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sid}:${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'kept-across-restarts' }),
    });
    expect(created.status).toBe(200);

    const tree = descendants(first.child.pid!);
    expect(tree.length).toBeGreaterThanOrEqual(4); // postgres, temporal, api, worker (and postgres' own children)
    expect(await stop(first)).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(tree.filter(alive)).toEqual([]);

    const second = await startLauncher(env);
    try {
      expect(second.output()).not.toContain('Auth token');
      const res = await fetch(`${baseUrl}/workspaces/kept-across-restarts`, {
        headers: { authorization: `Bearer ${sid}:${token}` },
      });
      expect(res.status).toBe(200);
    } finally {
      const tree2 = descendants(second.child.pid!);
      expect(await stop(second)).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(tree2.filter(alive)).toEqual([]);
    }
  }, 400_000);

  test('the supervisor restarts a killed PostgreSQL (only 503s meanwhile, no acknowledged write lost), Temporal dev server and API; the CLI signs in with the stored password', async () => {
    const started = await startLauncher(env);
    const root = started.child.pid!;
    const baseUrl = `http://127.0.0.1:${env.PORT}/v2`;
    // A key made by the CLI through the running server's password file (no DATABASE_URL) proves the CLI
    // finds it.
    const cliEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    delete cliEnv.DATABASE_URL;
    const created = spawnSync(
      process.execPath,
      [path.join(ROOT, 'engine/cli/pas.mjs'), 'keys', 'create', '--json'],
      { env: cliEnv, encoding: 'utf8', timeout: 60_000 },
    );
    expect(created.status).toBe(0);
    const key = JSON.parse(created.stdout) as { account_sid: string; auth_token: string };
    const bearer = `Bearer ${key.account_sid}:${key.auth_token}`;

    const statusOf = async (url: string) => (await fetch(url)).status;
    const sinceHere = () => started.output().length;
    try {
      // PostgreSQL: crash recovery on its own data, same port and password.
      let mark = sinceHere();
      const postmaster = Number.parseInt(
        readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8'),
        10,
      );
      // Mixed reads and writes while it dies and comes back: only 200s and 503s, no acknowledged write lost.
      const statuses: Record<number, number> = {};
      const acknowledged: string[] = [];
      let loading = true;
      const load = (async () => {
        for (let n = 0; loading; n++) {
          const name = `outage-${n}`;
          const write = n % 2 === 0;
          const res = await fetch(`${baseUrl}/workspaces`, {
            method: write ? 'POST' : 'GET',
            headers: { authorization: bearer, 'content-type': 'application/json' },
            ...(write ? { body: JSON.stringify({ name }) } : {}),
          }).catch(() => null);
          await res?.arrayBuffer();
          const status = res?.status ?? 0;
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (write && status === 200) acknowledged.push(name);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      process.kill(postmaster, 'SIGKILL');
      expect(
        await eventually(
          async () =>
            started.output().slice(mark).includes('supervisor: postgres is running again') ? true : undefined,
          60_000,
        ),
      ).toBe(true);
      expect(started.output().slice(mark)).toContain('supervisor: postgres PostgreSQL (pid');
      expect(
        await eventually(
          async () => ((await statusOf(`${baseUrl}/health_check`)) === 200 ? true : undefined),
          30_000,
        ),
      ).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      loading = false;
      await load;
      expect(Object.keys(statuses).sort()).toEqual(['200', '503']);
      for (const name of acknowledged) {
        const res = await fetch(`${baseUrl}/workspaces/${name}`, { headers: { authorization: bearer } });
        expect([name, res.status]).toEqual([name, 200]);
      }

      // Temporal: restarted on its SQLite file.
      mark = sinceHere();
      const temporal = descendantRunning(root, 'start-dev');
      expect(temporal).toBeDefined();
      process.kill(temporal!, 'SIGKILL');
      expect(
        await eventually(
          async () =>
            started.output().slice(mark).includes('supervisor: temporal is running again') ? true : undefined,
          90_000,
        ),
      ).toBe(true);
      expect(started.output().slice(mark)).toContain('supervisor: temporal was killed by SIGKILL');

      // The API process: a new one listens on the same port.
      mark = sinceHere();
      const api = descendantRunning(root, 'api/server.ts');
      expect(api).toBeDefined();
      process.kill(api!, 'SIGKILL');
      expect(
        await eventually(
          async () =>
            started.output().slice(mark).includes('supervisor: api is running again') ? true : undefined,
          30_000,
        ),
      ).toBe(true);
      expect(
        await eventually(
          async () => ((await statusOf(`${baseUrl}/health_check`)) === 200 ? true : undefined),
          60_000,
        ),
      ).toBe(true);
      expect(started.child.exitCode).toBeNull();
    } finally {
      const tree = descendants(root);
      expect(await stop(started)).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(tree.filter(alive)).toEqual([]);
    }
  }, 400_000);

  test('a malformed variable stops start-up with a message naming it', async () => {
    const child = spawn(
      process.execPath,
      ['--no-node-snapshot', '--import', 'tsx', 'engine/runtime/launcher.ts'],
      {
        cwd: ROOT,
        env: { ...process.env, ...env, RATE_LIMIT_PER_MINUTE: 'lots' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('Invalid configuration: RATE_LIMIT_PER_MINUTE must be an integer, got "lots"');
  }, 60_000);
});
