import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { interruptedRunMessage } from '../../ops/backup/settle-interrupted-runs';
import { newId } from '../../engine/platform/ids';
import { embeddedPostgresUrl } from '../../ops/embedded/embedded-postgres';
import { scheduleIdOf } from '../../engine/workflows/workflow-schedules';
import { freePorts } from '../support/free-ports';

/**
 * The operator's path end to end, on the real service: `npm start` in one DATA_DIR, writes going on
 * (portfolios, datastores, workflow runs, a 50 MB multipart file before them), `pas backup` in the
 * middle of them, the service stopped, `pas restore` into a fresh DATA_DIR, `npm start` there.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

interface Service {
  env: Record<string, string>;
  baseUrl: string;
  child: ChildProcess;
  output: () => string;
}

async function serviceEnv(dataDir: string): Promise<Record<string, string>> {
  const [api, postgres, temporal, ui] = await freePorts(4);
  return {
    DATA_DIR: dataDir,
    PORT: String(api),
    EMBEDDED_POSTGRES_PORT: String(postgres),
    TEMPORAL_DEV_PORT: String(temporal),
    TEMPORAL_UI_PORT: String(ui),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '100000',
    // The probe of every simulation backend is not what this suite is about.
    CALC_BACKEND: 'typed',
  };
}

/** `npm start` (the launcher) with this environment, once it says it is running. */
async function start(env: Record<string, string>): Promise<Service> {
  let output = '';
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.DATABASE_URL;
  delete childEnv.TEMPORAL_ADDRESS;
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', '--import', 'tsx', 'ops/launcher/launcher.ts'],
    { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 180_000;
  while (!output.includes('Press Ctrl+C to stop.')) {
    if (child.exitCode !== null) throw new Error(`launcher exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`launcher did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { env, baseUrl: `http://127.0.0.1:${env.PORT}/v2`, child, output: () => output };
}

async function stop(service: Service): Promise<number | null> {
  if (service.child.exitCode !== null) return service.child.exitCode;
  const exited = new Promise<number | null>((resolve) => service.child.once('exit', (code) => resolve(code)));
  service.child.kill('SIGTERM');
  return exited;
}

/** The real `pas` bin against a DATA_DIR (no DATABASE_URL), as an operator runs it. */
function pasIn(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.DATABASE_URL;
  delete childEnv.TEMPORAL_ADDRESS;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'ops/cli/pas.mjs'), ...args], {
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function multipartForm(
  fields: Array<[string, string]>,
  chunk: Buffer,
): { body: Buffer; contentType: string } {
  const boundary = `----pas-backup-${randomBytes(8).toString('hex')}`;
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

/** A JSON answer read loosely: `get(body, 'portfolio', 'id')`. */
const get = (value: unknown, ...keys: string[]): unknown =>
  keys.reduce<unknown>((at, key) => (at as Record<string, unknown> | null)?.[key], value);

async function eventually<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function queryDataDir<T extends pg.QueryResultRow>(
  env: Record<string, string>,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({
    connectionString: await embeddedPostgresUrl(env.DATA_DIR!, Number(env.EMBEDDED_POSTGRES_PORT), 'pas'),
  });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe('pas backup under write load, pas restore into a fresh DATA_DIR', () => {
  let workDir: string;

  beforeAll(async () => {
    await mkdir(path.join(ROOT, '.test-data'), { recursive: true });
    workDir = await mkdtemp(path.join(ROOT, '.test-data', 'backup-'));
    // Run as root, PostgreSQL runs as "postgres", which must pass through to the DATA_DIRs inside.
    await chmod(workDir, 0o711);
  });
  afterAll(async () => {
    await rm(workDir, { recursive: true, force: true });
  });

  test('every write acknowledged before the backup started is restored equal (files by SHA-256), the audit trail is intact, schedules fire again, keys work, and the run in flight is FAILED by the stated rule', async () => {
    const envA = await serviceEnv(path.join(workDir, 'a'));
    const a = await start(envA);
    let b: Service | null = null;
    try {
      const sid = /Account SID:\s+(sid_[A-Za-z0-9]{25})/.exec(a.output())![1]!;
      const token = /Auth token:\s+([A-Za-z0-9]{40})/.exec(a.output())![1]!;
      const bearer = `Bearer ${sid}:${token}`;
      const api = async (base: string, method: string, url: string, body?: object) => {
        const res = await fetch(`${base}${url}`, {
          method,
          headers: { authorization: bearer, 'content-type': 'application/json' },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        const text = await res.text();
        return { status: res.status, body: (text ? JSON.parse(text) : null) as unknown };
      };

      // A second key, revoked: it must stay revoked after the restore.
      const revoked = await pasIn(envA, 'keys', 'create', '--json');
      expect(revoked.status).toBe(0);
      const revokedKey = JSON.parse(revoked.stdout) as { account_sid: string; auth_token: string };
      expect((await pasIn(envA, 'keys', 'revoke', revokedKey.account_sid)).status).toBe(0);

      // The 50 MB file, uploaded in five multipart parts.
      const content = randomBytes(50 * MiB);
      const uploadId = `backup-${newId('worker').slice(5, 17)}`;
      let fileId = '';
      for (let part = 1; part <= 5; part++) {
        const form = multipartForm(
          [
            ['upload_id', uploadId],
            ['part_number', String(part)],
            ['total_parts', '5'],
            ...(part === 1 ? ([['name', 'Fifty megabytes']] as Array<[string, string]>) : []),
          ],
          content.subarray((part - 1) * 10 * MiB, part * 10 * MiB),
        );
        const res = await fetch(`${a.baseUrl}/files`, {
          method: 'POST',
          headers: { authorization: bearer, 'content-type': form.contentType },
          body: form.body,
        });
        const answer = (await res.json()) as { file?: { id: string } };
        expect(res.status).toBe(200);
        if (part === 5) fileId = answer.file!.id;
      }
      expect(fileId).toMatch(/^file_/);

      // Workflows: a quick one the load runs, a TIME_BASED one that never fires on its own, and one whose
      // ENDER waits forever (until its 30 s limit), so that a run is in flight when the backup is taken.
      const workers = (enderScript: string) => {
        const [s, e] = [newId('worker'), newId('worker')];
        return [
          { id: s, name: 'Start', type: 'STARTER', next: [e] },
          { id: e, name: 'End', type: 'ENDER', script: enderScript },
        ];
      };
      const quick = await api(a.baseUrl, 'POST', '/workflows', {
        name: 'Quick',
        workers: workers('function main(args) { return { got: args.inputs }; }'),
      });
      expect(quick.status).toBe(200);
      const quickId = get(quick.body, 'workflow', 'id') as string;
      const scheduled = await api(a.baseUrl, 'POST', '/workflows', {
        name: 'Every first of January',
        trigger_type: 'TIME_BASED',
        trigger_config: { cron: '0 0 1 1 *', timezone: 'UTC' },
        trigger_enabled: true,
        workers: workers('function main() { return { scheduled: true }; }'),
      });
      expect(scheduled.status).toBe(200);
      const scheduledId = get(scheduled.body, 'workflow', 'id') as string;
      const hanging = await api(a.baseUrl, 'POST', '/workflows', {
        name: 'Waits',
        workers: workers('async function main() { await new Promise(() => {}); }'),
      });
      expect(hanging.status).toBe(200);
      const hangingId = get(hanging.body, 'workflow', 'id') as string;

      // Steady writes from three loops until told to stop; each acknowledged write is kept with the
      // time its answer arrived.
      const acknowledged: Array<{
        kind: 'portfolio' | 'datastore' | 'run';
        id: string;
        at: number;
        view: unknown;
      }> = [];
      let loading = true;
      const loop = async (write: (n: number) => Promise<void>) => {
        for (let n = 0; loading; n++) await write(n);
      };
      const loads = Promise.all([
        loop(async (n) => {
          const res = await api(a.baseUrl, 'POST', '/portfolios', {
            name: `Book ${n}`,
            securities: [{ id: `s${n}`, symbol: 'AAPL', quantity: n + 1 }],
          });
          expect([res.status, res.body]).toEqual([200, expect.anything()]);
          acknowledged.push({
            kind: 'portfolio',
            id: get(res.body, 'portfolio', 'id') as string,
            at: Date.now(),
            view: get(res.body, 'portfolio'),
          });
        }),
        loop(async (n) => {
          const res = await api(a.baseUrl, 'POST', '/datastores', {
            name: `Weights ${n}`,
            data: [
              ['symbol', 'weight'],
              ['AAPL', n / 100],
            ],
          });
          expect([res.status, res.body]).toEqual([200, expect.anything()]);
          acknowledged.push({
            kind: 'datastore',
            id: get(res.body, 'datastore', 'id') as string,
            at: Date.now(),
            view: get(res.body, 'datastore'),
          });
        }),
        loop(async (n) => {
          const res = await api(a.baseUrl, 'POST', `/workflows/${quickId}/run`, { parameters: { n } });
          expect([res.status, res.body]).toEqual([202, expect.anything()]);
          acknowledged.push({
            kind: 'run',
            id: get(res.body, 'workflow_execution', 'id') as string,
            at: Date.now(),
            view: null,
          });
          await new Promise((resolve) => setTimeout(resolve, 100));
        }),
      ]);
      await new Promise((resolve) => setTimeout(resolve, 3_000));

      const inFlight = await api(a.baseUrl, 'POST', `/workflows/${hangingId}/run`, { parameters: {} });
      expect([inFlight.status, inFlight.body]).toEqual([202, expect.anything()]);
      const inFlightId = get(inFlight.body, 'workflow_execution', 'id') as string;
      // The audit trail and the set of acknowledged writes as they stand when the backup starts.
      const auditBefore = await queryDataDir<{ id: string }>(envA, 'select * from audit_logs order by id');
      const backupStarted = Date.now();
      const backupFile = path.join(workDir, 'service.tar');
      const backup = await pasIn(envA, 'backup', '--output', backupFile);
      const backupEnded = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      loading = false;
      await loads;
      expect({ status: backup.status, stderr: backup.stderr }).toEqual({ status: 0, stderr: '' });
      expect(backup.stdout).toContain(`Backup written: ${backupFile}`);
      const before = acknowledged.filter((write) => write.at < backupStarted);
      const during = acknowledged.filter((write) => write.at >= backupStarted && write.at <= backupEnded);
      expect(before.filter((write) => write.kind === 'run').length).toBeGreaterThan(3);
      // The load really ran while the backup was being taken.
      expect(during.length).toBeGreaterThan(0);
      expect(await stop(a)).toBe(0);

      // A new machine: an empty DATA_DIR, other ports.
      const envB = await serviceEnv(path.join(workDir, 'b'));
      const restored = await pasIn(envB, 'restore', backupFile);
      expect({ status: restored.status, stderr: restored.stderr }).toEqual({ status: 0, stderr: '' });
      expect(restored.stdout).toContain('manifest and SHA-256 checksums are correct');
      expect(restored.stdout).toContain(inFlightId);

      b = await start(envB);
      expect(b.output()).not.toContain('Auth token'); // the owner exists: no first-start credentials

      // Keys: the owner's works, the revoked one stays revoked.
      expect((await api(b.baseUrl, 'GET', '/workspaces')).status).toBe(200);
      const revokedTry = await fetch(`${b.baseUrl}/workspaces`, {
        headers: { authorization: `Bearer ${revokedKey.account_sid}:${revokedKey.auth_token}` },
      });
      expect(revokedTry.status).toBe(401);

      // The file, byte for byte.
      // The list shows the file's url without its content.
      const files = await api(b.baseUrl, 'GET', '/files?page_size=100');
      expect(files.status).toBe(200);
      const listed = (get(files.body, 'files') as Array<{ id: string; url: string }>).find(
        (f) => f.id === fileId,
      );
      expect(listed?.url).toEqual(expect.stringContaining('/file/'));
      const url = listed!.url;
      const raw = await fetch(url.startsWith('http') ? url : `http://127.0.0.1:${envB.PORT}${url}`, {
        headers: { authorization: bearer },
      });
      expect(raw.status).toBe(200);
      expect(sha256(Buffer.from(await raw.arrayBuffer()))).toBe(sha256(content));

      // Every write acknowledged before the backup started, equal.
      for (const write of before) {
        if (write.kind === 'run') {
          const run = await api(
            b.baseUrl,
            'GET',
            `/workflows/${quickId}/workflow_executions?workflow_execution_id=${write.id}`,
          );
          expect([write.id, run.status]).toEqual([write.id, 200]);
          expect(['SUCCEEDED', 'FAILED']).toContain(get(run.body, 'workflow_execution', 'run_status'));
          continue;
        }
        const res = await api(b.baseUrl, 'GET', `/${write.kind}s/${write.id}`);
        expect([write.id, res.status]).toEqual([write.id, 200]);
        expect(get(res.body, write.kind)).toEqual(write.view);
      }

      // The audit trail as it stood when the backup started, row for row.
      const auditAfter = await queryDataDir<{ id: string }>(
        envB,
        'select * from audit_logs where id = any($1) order by id',
        [auditBefore.map((row) => row.id)],
      );
      expect(auditAfter).toEqual(auditBefore);

      // The run in flight at the snapshot: FAILED, saying why, nothing of it left RUNNING.
      const settled = await api(
        b.baseUrl,
        'GET',
        `/workflows/${hangingId}/workflow_executions?workflow_execution_id=${inFlightId}&with_resume=true`,
      );
      expect(get(settled.body, 'workflow_execution', 'run_status')).toBe('FAILED');
      expect(get(settled.body, 'workflow_execution', 'resume', 'failure', 'message')).toMatch(
        interruptedRunMessage('X').slice(0, 40),
      );
      expect(
        await queryDataDir(
          envB,
          "select id from worker_executions where workflow_execution_id = $1 and status = 'RUNNING'",
          [inFlightId],
        ),
      ).toEqual([]);

      // The schedule is back in the new Temporal and its firing makes a run.
      const connection = await Connection.connect({ address: `127.0.0.1:${envB.TEMPORAL_DEV_PORT}` });
      try {
        const handle = new Client({ connection }).schedule.getHandle(scheduleIdOf(scheduledId));
        expect(await eventually(() => handle.describe().then(() => true), 60_000)).toBe(true);
        await handle.trigger();
        const fired = await eventually(async () => {
          const list = await api(b!.baseUrl, 'GET', `/workflows/${scheduledId}/workflow_executions`);
          const run = (
            get(list.body, 'workflow_executions') as Array<{ trigger: string; run_status: string }>
          ).find((execution) => execution.trigger === 'TIME_BASED' && execution.run_status === 'SUCCEEDED');
          return run ?? undefined;
        }, 60_000);
        expect(fired).toBeDefined();
      } finally {
        await connection.close();
      }

      // Writes go on as usual.
      expect((await api(b.baseUrl, 'POST', '/portfolios', { name: 'After', securities: [] })).status).toBe(
        200,
      );
    } finally {
      await stop(a);
      if (b) expect(await stop(b)).toBe(0);
    }
  }, 600_000);
});
