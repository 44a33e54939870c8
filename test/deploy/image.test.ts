import { randomBytes } from 'node:crypto';
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
import { createTestDatabase } from '../support/test-database';

/**
 * The image of docker-compose.yml, built from this repository and run: its migrate, api and worker
 * commands with the compose file's environment, against the suite's real PostgreSQL and Temporal. By
 * podman where podman can run (containers on the host's network, where the suite's servers listen on
 * 127.0.0.1); elsewhere by replaying the Dockerfile into a scratch folder. The suite's name says which;
 * TEST_IMAGE_RUNTIME=replay picks the replay where podman works too. The topology suite runs the same
 * image against the Temporal cluster (test/deploy/topology.test.ts).
 */

const podman = new Podman();
const { how } = imagePath(podman);
const TAG = 'localhost/portfolio-analytics-service:test';

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
      const run = await call('POST', `/v2/workflows/${workflowId}/run`, bearer, { parameters: { n: 41 } });
      expect(run.status).toBe(202);
      const executionId = (run.body.workflow_execution as { id: string }).id;

      let execution: { run_status: string; ender_worker_execution_id: string | null } | undefined;
      const deadline = Date.now() + 90_000;
      do {
        const polled = await call(
          'GET',
          `/v2/workflows/${workflowId}/workflow_executions?workflow_execution_id=${executionId}&wait_seconds=10`,
          bearer,
        );
        expect(polled.status).toBe(200);
        execution = polled.body.workflow_execution as typeof execution;
      } while (execution!.run_status === 'RUNNING' && Date.now() < deadline);
      expect(execution!.run_status).toBe('SUCCEEDED');
      const ender = await call(
        'GET',
        `/v2/workflows/worker_executions?worker_execution_id=${execution!.ender_worker_execution_id}`,
        bearer,
      );
      expect(ender.status).toBe(200);
      expect((ender.body.worker_execution as { result: unknown }).result).toEqual({ n: 42 });

      // Temporal's history names who ran each task: the worker the image runs, and nothing else.
      const connection = await Connection.connect({ address: process.env.TEST_TEMPORAL_ADDRESS! });
      try {
        const history = await new Client({ connection }).workflow.getHandle(executionId).fetchHistory();
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
});
