import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { newId } from '../../engine/platform/ids';
import { freePorts } from '../support/free-ports';

const ROOT = path.resolve(__dirname, '..', '..');

/** The ports `npm start` takes, all different; the worker's metrics take METRICS_PORT + 1 too. */
async function launcherPorts(): Promise<Record<string, string>> {
  // Each port with the next one free too (needed only for METRICS_PORT); no two blocks overlap.
  const [metrics, api, postgres, temporal, ui] = await freePorts(5, { span: 2 });
  return {
    PORT: String(api),
    EMBEDDED_POSTGRES_PORT: String(postgres),
    TEMPORAL_DEV_PORT: String(temporal),
    TEMPORAL_UI_PORT: String(ui),
    METRICS_PORT: String(metrics),
  };
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

const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A multipart/form-data body: text fields, then the `chunk` file field with these bytes. */
function multipartForm(
  fields: Array<[string, string]>,
  chunk: Buffer,
): { body: Buffer; contentType: string } {
  const boundary = `----pas-launcher-${randomBytes(8).toString('hex')}`;
  const head = fields.map(
    ([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
  );
  const body = Buffer.concat([
    Buffer.from(head.join('')),
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="chunk"; filename="blob"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n',
    ),
    chunk,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
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
    ['--no-node-snapshot', '--import', 'tsx', 'ops/launcher/launcher.ts'],
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
      ...(await launcherPorts()),
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
    // The first start makes the secrets' master key, readable by the service's user alone, and says
    // to back it up apart from the data.
    expect(out).toContain(`Secrets key:      ${path.join(dataDir, 'secrets.key')} (made now)`);
    expect(out).toContain('Back it up apart from the data: a backup does not hold it');
    expect(statSync(path.join(dataDir, 'secrets.key')).mode & 0o777).toBe(0o600);
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
    // Without a terminal the start lines are JSON, and each process serves its metrics (issue 32).
    expect(out).toMatch(/^\{"level":30,.*"component":"launcher","msg":"Migrations ready"/m);
    expect(out).toContain(`Metrics:          http://127.0.0.1:${env.METRICS_PORT}/metrics (api)`);
    const apiMetrics = await (await fetch(`http://127.0.0.1:${env.METRICS_PORT}/metrics`)).text();
    expect(apiMetrics).toMatch(
      /pas_http_request_duration_seconds_count\{process="api",method="GET",route="\/v2\/health_check",status_class="2xx"\} [1-9]/,
    );
    const workerMetrics = await (
      await fetch(`http://127.0.0.1:${Number(env.METRICS_PORT) + 1}/metrics`)
    ).text();
    expect(workerMetrics).toMatch(
      /^pas_db_pool_connections\{(?=[^}]*process="worker")(?=[^}]*state="idle")[^}]*\} \d+/m,
    );
    // The Temporal SDK's own worker series, from its core, on the same scrape.
    expect(workerMetrics).toMatch(/^temporal_worker_task_slots_available\{/m);
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
      expect(second.output()).not.toContain('Secrets key:');
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

  test('the supervisor restarts a killed PostgreSQL (only 503s meanwhile, no acknowledged write lost), Temporal dev server (every run accepted meanwhile completes once) and API (an upload resumes from its last staged part); the CLI signs in with the stored password', async () => {
    const started = await startLauncher(env);
    const root = started.child.pid!;
    const baseUrl = `http://127.0.0.1:${env.PORT}/v2`;
    // A key made by the CLI through the running server's password file (no DATABASE_URL) proves the CLI
    // finds it.
    const cliEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    delete cliEnv.DATABASE_URL;
    const created = spawnSync(
      process.execPath,
      [path.join(ROOT, 'ops/cli/pas.mjs'), 'keys', 'create', '--json'],
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

      // Temporal: restarted on its SQLite file, while runs are being requested. Every run the API
      // accepted (202) completes, exactly once: the ones in flight resume, the ones that arrived while
      // Temporal was down wait in the run outbox.
      const api = (method: 'GET' | 'POST', url: string, body?: object) =>
        fetch(`${baseUrl}${url}`, {
          method,
          headers: { authorization: bearer, 'content-type': 'application/json' },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
      const [startId, endId] = [newId('worker'), newId('worker')];
      const stored = await api('POST', '/workflows', {
        name: 'Through a Temporal crash',
        workers: [
          {
            id: startId,
            name: 'Start',
            type: 'STARTER',
            next: [endId],
          },
          {
            id: endId,
            name: 'End',
            type: 'ENDER',
            script: 'function main(args) { return { got: args.inputs }; }',
          },
        ],
      });
      expect(stored.status).toBe(200);
      const workflowId = ((await stored.json()) as { workflow: { id: string } }).workflow.id;
      const runStatuses: Record<number, number> = {};
      const accepted: Array<{ id: string; n: number }> = [];
      let requesting = true;
      const requests = (async () => {
        for (let n = 0; requesting; n++) {
          const res = await api('POST', `/workflows/${workflowId}/run`, { parameters: { n } }).catch(
            () => null,
          );
          const status = res?.status ?? 0;
          runStatuses[status] = (runStatuses[status] ?? 0) + 1;
          if (status === 202) {
            const body = (await res!.json()) as { workflow_execution: { id: string } };
            accepted.push({ id: body.workflow_execution.id, n });
          } else {
            await res?.arrayBuffer();
          }
          await new Promise((resolve) => setTimeout(resolve, 150));
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 1_500));
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
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      requesting = false;
      await requests;
      expect(runStatuses).toEqual({ 202: accepted.length });
      expect(accepted.length).toBeGreaterThan(10);
      for (const { id, n } of accepted) {
        const ended = await eventually(async () => {
          const res = await api(
            'GET',
            `/workflows/${workflowId}/workflow_executions?workflow_execution_id=${id}&with_resume=true`,
          );
          const body = (await res.json()) as {
            workflow_execution: {
              run_status: string;
              ender_worker_execution_id: string;
              resume: { worker_executions: Record<string, number> };
            };
          };
          return body.workflow_execution.run_status === 'RUNNING' ? undefined : body.workflow_execution;
        }, 120_000);
        expect([id, ended?.run_status]).toEqual([id, 'SUCCEEDED']);
        // One execution of each worker: nothing ran twice.
        expect(ended!.resume.worker_executions).toMatchObject({ total: 2, completed: 2, error: 0 });
        const ender = await api(
          'GET',
          `/workflows/${workflowId}/worker_executions?worker_execution_id=${ended!.ender_worker_execution_id}`,
        );
        expect(await ender.text()).toContain(`"got":{"n":${n}}`);
      }

      // The API process, killed in the middle of a multipart upload's second part: a new one listens
      // on the same port, and the upload resumes from its last staged part.
      const content = randomBytes(2 * MiB + 5_000);
      const parts = [content.subarray(0, MiB), content.subarray(MiB, 2 * MiB), content.subarray(2 * MiB)];
      const uploadId = `resume-${newId('worker').slice(5, 17)}`;
      const partForm = (part: number) =>
        multipartForm(
          [
            ['upload_id', uploadId],
            ['part_number', String(part)],
            ['total_parts', '3'],
            ...(part === 1 ? ([['name', 'Resumed upload']] as Array<[string, string]>) : []),
          ],
          parts[part - 1]!,
        );
      const sendPart = async (part: number) => {
        const form = partForm(part);
        const res = await fetch(`${baseUrl}/files`, {
          method: 'POST',
          headers: { authorization: bearer, 'content-type': form.contentType },
          body: form.body,
        });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      expect(await sendPart(1)).toEqual({
        status: 200,
        body: { status: 'staged', parts_received: 1, total_parts: 3, upload_id: uploadId },
      });
      // Part 2 goes out slowly: half of its bytes, then the API process dies under it.
      const second = partForm(2);
      const inFlight = new Promise<string>((resolve) => {
        const req = httpRequest(`${baseUrl}/files`, {
          method: 'POST',
          headers: {
            authorization: bearer,
            'content-type': second.contentType,
            'content-length': String(second.body.length),
          },
        });
        req.on('response', (res) => resolve(`answered ${res.statusCode}`));
        req.on('error', (error) => resolve(`failed: ${error.message}`));
        req.write(second.body.subarray(0, second.body.length >> 1));
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      mark = sinceHere();
      const apiProcess = descendantRunning(root, 'api/server.ts');
      expect(apiProcess).toBeDefined();
      process.kill(apiProcess!, 'SIGKILL');
      expect(await inFlight).toMatch(/^failed: /);
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
      // The client asks where it stands (resending part 1 changes nothing) and goes on from there.
      expect(await sendPart(1)).toEqual({
        status: 200,
        body: { status: 'staged', parts_received: 1, total_parts: 3, upload_id: uploadId },
      });
      expect((await sendPart(2)).body).toMatchObject({ status: 'staged', parts_received: 2 });
      const last = await sendPart(3);
      expect(last.status).toBe(200);
      const file = last.body.file as { id: string; url: string; size: number };
      expect(file.size).toBe(content.length);
      const raw = await fetch(`http://127.0.0.1:${env.PORT}${file.url}`, {
        headers: { authorization: bearer },
      });
      expect(raw.status).toBe(200);
      expect(sha256(Buffer.from(await raw.arrayBuffer()))).toBe(sha256(content));
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
      ['--no-node-snapshot', '--import', 'tsx', 'ops/launcher/launcher.ts'],
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
  test('in a terminal: one line per component, the credentials within the first 15 lines, requests as short lines, no bundle listing', async () => {
    const fresh = await mkdtemp(path.join(ROOT, '.test-data', 'launcher-tty-'));
    const ports = await launcherPorts();
    // script(1) gives `npm start` a pseudo-terminal, as a person's shell would.
    const child = spawn('script', ['-qfec', 'npm start', '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, ...ports, DATA_DIR: fresh, LOG_FORMAT: '', LOG_LEVEL: 'info', TERM: 'xterm' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      const deadline = Date.now() + 150_000;
      while (!output.includes('Press Ctrl+C to stop.')) {
        if (child.exitCode !== null) throw new Error(`npm start exited early:\n${output}`);
        if (Date.now() > deadline) throw new Error(`npm start did not start:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const sid = /Account SID:\s+(sid_[A-Za-z0-9]{25})/.exec(output)![1]!;
      const token = /Auth token:\s+([A-Za-z0-9]{40})/.exec(output)![1]!;
      const res = await fetch(`http://127.0.0.1:${ports.PORT}/v2/workspaces`, {
        headers: { authorization: `Bearer ${sid}:${token}` },
      });
      expect(res.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const lines = output.replace(/\r/g, '').split('\n');
      mkdirSync(path.join(ROOT, 'test-artifacts'), { recursive: true });
      writeFileSync(path.join(ROOT, 'test-artifacts', 'npm-start-terminal.txt'), lines.join('\n'));
      const first15 = lines.slice(0, 15).join('\n');
      for (const component of ['PostgreSQL', 'Migrations', 'Temporal', 'Worker', 'API']) {
        expect(first15).toMatch(new RegExp(`✓ ${component} +\\d+\\.\\d s`));
      }
      expect(first15).toContain('Account SID:');
      expect(first15).toContain('Auth token:');
      expect(output).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}api +GET \/v2\/workspaces 200 [\d.]+ ms$/m);
      expect(output).not.toMatch(/modules by path|webpack [\d.]+ compiled/);
      expect(output).not.toMatch(/^\{"level"/m);
      expect(output).not.toContain('health_check');
    } finally {
      // Ctrl+C, as a person stops it; the whole group if it has not stopped within 60 s.
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin!.write('\u0003');
      const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 60_000);
      await exited;
      clearTimeout(timer);
      await rm(fresh, { recursive: true, force: true });
    }
  }, 200_000);
});
