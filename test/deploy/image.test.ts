import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { newId } from '../../engine/platform/ids';
import {
  type ImageDeployment,
  imagePath,
  Podman,
  type PreparedImage,
  prepareImage,
  startImageDeployment,
} from '../support/container-image';
import { services } from '../support/compose-file';
import { createTestDatabase } from '../support/test-database';

/**
 * The image of docker-compose.yml, built from this repository by podman and run: its migrate, api and
 * worker commands with the compose file's environment and security options, against the suite's real
 * PostgreSQL and Temporal (containers on the host's network, where the suite's servers listen on
 * 127.0.0.1). Where podman cannot run, the suite fails saying why (npm test's first step installs
 * it). The topology suite runs the same image against the Temporal cluster
 * (test/deploy/topology.test.ts).
 */

const podman = new Podman();
const { how } = imagePath(podman);
const TAG = 'localhost/portfolio-analytics-service:test';
/** Issue 29's bound on the image, in podman's (decimal) megabytes. */
const MAX_IMAGE_BYTES = 500 * 1000 * 1000;
const ROOT = path.resolve(__dirname, '..', '..');

describe(`the image, ${how}`, () => {
  let image: PreparedImage | undefined;
  let deployment: ImageDeployment | undefined;
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  const taskQueue = `image-${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    const started = Date.now();
    image = await prepareImage(podman, TAG);
    const { runtime, timings } = image;
    database = await createTestDatabase({ migrate: false });
    const startedServices = Date.now();
    deployment = await startImageDeployment(runtime, {
      databaseUrl: database.url,
      temporalAddress: process.env.TEST_TEMPORAL_ADDRESS!,
      // The suite's Temporal server is shared: a queue of its own keeps other suites' runs off this worker.
      taskQueue,
    });
    timings.push(`migrate + api + worker healthy in ${Math.round((Date.now() - startedServices) / 1000)} s`);
    console.log(
      `image test (${how}): ${timings.join('; ')}; set-up ${Math.round((Date.now() - started) / 1000)} s`,
    );
  }, 1_800_000);

  afterAll(async () => {
    // Each step runs even when an earlier one failed, so no container or process outlives the suite.
    const results = await Promise.allSettled([deployment?.stop()]);
    results.push(...(await Promise.allSettled([image?.close()])));
    results.push(...(await Promise.allSettled([database?.drop()])));
    const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed) throw failed.reason;
  }, 120_000);

  /** The services' output beside a failed expectation. */
  async function explained<T>(check: () => Promise<T>): Promise<T> {
    try {
      return await check();
    } catch (error) {
      const logs = await deployment?.logs().catch(() => '');
      (error as Error).message += `\n\nservice output:\n${logs?.slice(-6000)}`;
      throw error;
    }
  }

  async function call(method: string, url: string, bearer?: string, body?: unknown) {
    const res = await fetch(`${deployment!.apiUrl}${url}`, {
      method,
      headers: {
        ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  let bearer: string;

  test('GET /v2/health_check through the API answers 200 with the database, Temporal and a worker up', () =>
    explained(async () => {
      const health = await call('GET', '/v2/health_check');
      expect(health.status).toBe(200);
      expect(health.body).toMatchObject({
        api_status: 'OK',
        version: 'v2',
        dependencies: {
          database: { status: 'up' },
          temporal: { status: 'up' },
          workers: { status: 'up' },
        },
      });
    }));

  test('an account made with the image’s `npm run pas -- accounts create` authenticates a request', () =>
    explained(async () => {
      const created = await deployment!.pas(
        'accounts',
        'create',
        '--name',
        'Image desk',
        '--owner-email',
        'ops@example.com',
        '--json',
      );
      expect({ status: created.status, stderr: created.stderr }).toEqual({ status: 0, stderr: '' });
      const key = JSON.parse(created.stdout) as { account_sid: string; auth_token: string };
      expect(key.account_sid).toMatch(/^sid_[A-Za-z0-9]{25}$/);
      bearer = `${key.account_sid}:${key.auth_token}`;

      expect((await call('GET', '/v2/workspaces')).status).toBe(401);
      const workspace = await call('POST', '/v2/workspaces', bearer, { name: 'image-check' });
      expect(workspace.status).toBe(200);
      const read = await call('GET', '/v2/workspaces/image-check', bearer);
      expect(read.status).toBe(200);
    }));

  test('a workflow run executes on the worker the image runs', () =>
    explained(async () => {
      expect(bearer).toBeDefined();
      const [s, b, e] = [newId('worker'), newId('worker'), newId('worker')];
      const stored = await call('POST', '/v2/workflows', bearer, {
        name: 'Image check',
        workers: [
          { id: s, name: 'S', type: 'STARTER', next: [b] },
          {
            id: b,
            name: 'Add one',
            type: 'BASIC',
            script: 'function main(args) { return { n: args.inputs.n + 1 }; }',
            next: [e],
          },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      });
      expect(stored.status).toBe(200);
      const workflowId = (stored.body.workflow as { id: string }).id;
      const execution = await runToEnd(workflowId, { n: 41 });
      const executionId = execution.id;
      expect(execution.run_status).toBe('SUCCEEDED');
      const ender = await call(
        'GET',
        `/v2/workflows/worker_executions?worker_execution_id=${execution.ender_worker_execution_id}`,
        bearer,
      );
      expect(ender.status).toBe(200);
      expect((ender.body.worker_execution as { result: unknown }).result).toEqual({ n: 42 });

      // Temporal's history names who ran each task: the worker the image runs, and nothing else.
      const connection = await Connection.connect({ address: process.env.TEST_TEMPORAL_ADDRESS! });
      try {
        const handle = new Client({ connection }).workflow.getHandle(executionId);
        // The records close before the Temporal run does: wait for it, then read its history.
        await handle.result().catch(() => undefined);
        const history = await handle.fetchHistory();
        const identities = (history.events ?? []).flatMap((event) =>
          [
            event.workflowTaskStartedEventAttributes?.identity,
            event.workflowTaskCompletedEventAttributes?.identity,
            event.activityTaskStartedEventAttributes?.identity,
            event.activityTaskCompletedEventAttributes?.identity,
          ].filter((identity): identity is string => !!identity),
        );
        expect(identities.length).toBeGreaterThan(0);
        expect(identities.filter((identity) => !deployment!.worker.ownsIdentity(identity))).toEqual([]);
      } finally {
        await connection.close();
      }
    }));
  test('the image is at most 500 MB, with one Node (the base image’s) and no npm cache', () =>
    explained(async () => {
      const inspected = await podman.mustRun(['image', 'inspect', '--format', '{{.Size}}', TAG]);
      const bytes = Number(inspected.stdout.trim());
      console.log(`image size: ${(bytes / 1e6).toFixed(1)} MB (bound ${MAX_IMAGE_BYTES / 1e6} MB)`);
      expect(bytes).toBeGreaterThan(100e6);
      expect(bytes).toBeLessThanOrEqual(MAX_IMAGE_BYTES);
      const inside = await podman.mustRun([
        'run',
        '--rm',
        '--network',
        'none',
        '--entrypoint',
        'sh',
        TAG,
        '-c',
        'command -v node; find / -xdev -type f -name node -perm -u+x 2>/dev/null; ls -d /root/.npm /home/node/.npm 2>&1 || true',
      ]);
      const lines = inside.stdout.trim().split('\n');
      expect(lines[0]).toBe('/usr/local/bin/node');
      // The only Node binary in the image is the base image's.
      expect(lines.filter((line) => line.startsWith('/') && !line.includes('No such file'))).toEqual([
        '/usr/local/bin/node',
        '/usr/local/bin/node',
      ]);
    }));

  async function untilSettled(id: string): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 300_000;
    for (;;) {
      const read = await call('GET', `/v2/worker_templates/${id}`, bearer);
      expect(read.status).toBe(200);
      const template = read.body.worker_template as Record<string, unknown>;
      if (template.container_status !== 'PENDING') return template;
      if (Date.now() > deadline) throw new Error(`template ${id} stayed PENDING`);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }

  /** Starts a run and waits (long polls) until it is no longer RUNNING. */
  async function runToEnd(workflowId: string, parameters: unknown) {
    const run = await call('POST', `/v2/workflows/${workflowId}/run`, bearer, { parameters });
    expect(run.status).toBe(202);
    const executionId = (run.body.workflow_execution as { id: string }).id;
    let execution: { id: string; run_status: string; ender_worker_execution_id: string | null } | undefined;
    const deadline = Date.now() + 180_000;
    do {
      const polled = await call(
        'GET',
        `/v2/workflows/${workflowId}/workflow_executions?workflow_execution_id=${executionId}&wait_seconds=10`,
        bearer,
      );
      expect(polled.status).toBe(200);
      execution = polled.body.workflow_execution as typeof execution;
    } while (execution!.run_status === 'RUNNING' && Date.now() < deadline);
    return execution!;
  }

  /** A step of a run, with its result and error (the route's grouped list, then the one execution). */
  async function stepResult(workflowId: string, executionId: string, workerId: string) {
    const listed = await call(
      'GET',
      `/v2/workflows/${workflowId}/worker_executions?workflow_execution_id=${executionId}`,
      bearer,
    );
    expect(listed.status).toBe(200);
    const grouped = listed.body.worker_executions as Array<{ worker_id: string; execution: { id: string } }>;
    const id = grouped.find((step) => step.worker_id === workerId)?.execution.id;
    if (id === undefined) return { status: 'NOT RUN', result: null, error_message: null };
    const one = await call(
      'GET',
      `/v2/workflows/${workflowId}/worker_executions?worker_execution_id=${id}`,
      bearer,
    );
    expect(one.status).toBe(200);
    return one.body.worker_execution as { status: string; result: unknown; error_message?: string | null };
  }

  test('bubblewrap in the worker container needs both of the compose file’s security options, and no more', () =>
    explained(async () => {
      const worker = services.worker!;
      const options = worker.security_opt ?? [];
      expect(options).toEqual(['seccomp=./plugins/sandbox/container-seccomp.json', 'systempaths=unconfined']);
      expect(worker).not.toHaveProperty('privileged');
      expect(worker).not.toHaveProperty('cap_add');
      const dir = await mkdtemp(path.join(os.tmpdir(), 'pas-image-sandbox-'));
      try {
        const script = path.join(dir, 'sandbox-check.ts');
        await writeFile(
          script,
          [
            "import { runPythonScript } from '/app/plugins/sandbox/python-sandbox';",
            'runPythonScript({',
            '  args: { inputs: { n: 2 } },',
            '  source: \'def main(args):\\n    return {"n": args["inputs"]["n"] * 2}\\n\',',
            '  limits: { timeoutMs: 10000, memoryLimitMb: 256, maxOutputBytes: 1048576, maxLogBytes: 65536 },',
            '}).then((outcome) => console.log(JSON.stringify(outcome)));',
          ].join('\n'),
        );
        await chmod(dir, 0o755);
        const attempt = async (securityOpt: string[]) => {
          const result = await image!.runtime.oneShot(
            'sandbox-check',
            ['node', '--import', 'tsx', script],
            {},
            120_000,
            { securityOpt, volumes: [`${dir}:${dir}:ro`] },
          );
          const line = result.stdout.trim().split('\n').pop() ?? '';
          const outcome = JSON.parse(line) as { ok: boolean; result?: unknown; error?: { message: string } };
          return outcome.ok ? outcome.result : outcome.error!.message;
        };
        expect(await attempt(options)).toEqual({ n: 4 });
        // Either one alone is not enough: the engine's default filter refuses sethostname (and on
        // Docker the namespace calls), the masked /proc refuses a new proc mount.
        expect(await attempt([options[1]!])).toMatch(/bwrap: Can't set hostname/);
        expect(await attempt([options[0]!])).toMatch(/bwrap: Can't mount proc/);
        expect(existsSync(path.join(ROOT, 'plugins', 'sandbox', 'container-seccomp.json'))).toBe(true);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }));

  test('a Python template with a requirement builds in the worker container (PENDING → SUCCESS) and its step runs there; hostile reads and sockets fail inside the sandbox', () =>
    explained(async () => {
      expect(bearer).toBeDefined();
      const published = await call('POST', '/v2/worker_templates', bearer, {
        name: 'Six version (Python)',
        script_runtime: 'python3.11',
        requirements: ['six==1.16.0'],
        script: [
          'import six',
          'def main(args):',
          '    return {"six": six.__version__, "n": args["inputs"]["n"] * 2}',
        ].join('\n'),
      });
      expect(published.status).toBe(200);
      const template = published.body.worker_template as { id: string; container_status: string };
      expect(template.container_status).toBe('PENDING');
      const settled = await untilSettled(template.id);
      // The build log beside the status, so a failed build explains itself.
      expect({ status: settled.container_status, environment: settled.environment }).toEqual({
        status: 'SUCCESS',
        environment: expect.objectContaining({ build_log_tail: expect.stringMatching(/six/) }),
      });

      const apiPort = new URL(deployment!.apiUrl).port;
      const hostile = [
        'import os, socket, time',
        'def attempt(action):',
        '    try:',
        '        return "SUCCEEDED: " + str(action())[:60]',
        '    except Exception as error:',
        '        return type(error).__name__',
        'def fork_bomb():',
        '    children = []',
        '    try:',
        '        for _ in range(200):',
        '            pid = os.fork()',
        '            if pid == 0:',
        '                time.sleep(30)',
        '                os._exit(0)',
        '            children.append(pid)',
        '        return "200 processes"',
        '    finally:',
        '        for pid in children:',
        '            os.kill(pid, 9)',
        'def main(args):',
        '    return {',
        '        "fork_bomb": attempt(fork_bomb),',
        '        "app_file": attempt(lambda: open("/app/package.json").read()),',
        '        "passwd": attempt(lambda: open("/etc/passwd").read()),',
        `        "api_socket": attempt(lambda: socket.create_connection(("127.0.0.1", ${apiPort}), timeout=3)),`,
        '        "internet": attempt(lambda: socket.create_connection(("pypi.org", 443), timeout=3)),',
        '        "inputs": args["inputs"],',
        '    }',
      ].join('\n');
      const [s, t, h, e] = [newId('worker'), newId('worker'), newId('worker'), newId('worker')];
      const stored = await call('POST', '/v2/workflows', bearer, {
        name: 'Python in the image',
        workers: [
          { id: s, name: 'S', type: 'STARTER', next: [t] },
          { id: t, name: 'Template', type: 'BASIC', template_id: template.id, next: [h] },
          { id: h, name: 'Hostile', type: 'BASIC', script_runtime: 'python3.11', script: hostile, next: [e] },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      });
      expect(stored.status).toBe(200);
      const workflowId = (stored.body.workflow as { id: string }).id;
      const execution = await runToEnd(workflowId, { n: 21 });
      const steps = await Promise.all([t, h].map((id) => stepResult(workflowId, execution.id, id)));
      // The steps' errors beside the run's status, so a failure explains itself.
      expect({
        run: execution.run_status,
        errors: steps.map((step) => step?.error_message ?? null),
      }).toEqual({ run: 'SUCCEEDED', errors: [null, null] });
      expect(await stepResult(workflowId, execution.id, t)).toMatchObject({
        status: 'COMPLETED',
        result: { six: '1.16.0', n: 42 },
      });
      const hostileStep = await stepResult(workflowId, execution.id, h);
      expect(hostileStep?.status).toBe('COMPLETED');
      const outcome = hostileStep!.result as Record<string, string>;
      expect(outcome).toMatchObject({
        // The sandbox's process limit holds inside the container, where the worker runs as `node`.
        fork_bomb: 'BlockingIOError',
        app_file: 'FileNotFoundError',
        passwd: 'FileNotFoundError',
        api_socket: expect.stringMatching(/^(ConnectionRefusedError|OSError|TimeoutError)$/),
        internet: expect.stringMatching(/^(gaierror|OSError|TimeoutError)$/),
      });
    }));

  test('`pas backup` in the image, then `pas restore` in the image into an empty database, brings back the data', () =>
    explained(async () => {
      expect(bearer).toBeDefined();
      const dir = await mkdtemp(path.join(os.tmpdir(), 'pas-image-backup-'));
      // The image's processes run as `node`.
      await chmod(dir, 0o777);
      const restored = await createTestDatabase({ migrate: false });
      try {
        const file = path.join(dir, 'pas.tar');
        const backup = await deployment!.pasWith({ volumes: [`${dir}:${dir}`] }, 'backup', '--output', file);
        expect({ status: backup.status, stderr: backup.stderr.slice(-2000) }).toMatchObject({ status: 0 });
        expect((await stat(file)).size).toBeGreaterThan(10_000);

        const restore = await deployment!.pasWith(
          { volumes: [`${dir}:${dir}`], env: { DATABASE_URL: restored.url } },
          'restore',
          file,
        );
        expect({
          status: restore.status,
          output: (restore.stdout + restore.stderr).slice(-2000),
        }).toMatchObject({
          status: 0,
        });
        // What the earlier tests wrote through the image's API is in the restored database.
        const workspaces = await restored.db('workspaces').where({ name: 'image-check' }).count({ n: '*' });
        expect(Number(workspaces[0]!.n)).toBe(1);
        const workflows = (await restored
          .db('entities')
          .where({ kind: 'workflow' })
          .whereIn('name', ['Image check', 'Python in the image'])
          .select('name')) as Array<{ name: string }>;
        expect(workflows.map((row) => row.name).sort()).toEqual(['Image check', 'Python in the image']);
        // A non-empty target is refused, also inside the image.
        const again = await deployment!.pasWith(
          { volumes: [`${dir}:${dir}`], env: { DATABASE_URL: restored.url } },
          'restore',
          file,
        );
        expect(again.status).not.toBe(0);
        expect(again.stdout + again.stderr).toMatch(/not empty|--force/);
      } finally {
        await restored.drop();
        await rm(dir, { recursive: true, force: true });
      }
    }));
});
