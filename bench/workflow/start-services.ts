/**
 * What the workflow bench runs against: an embedded PostgreSQL and a Temporal dev server started side
 * by side, the real Fastify app listening on a port with an API key, and the worker host.
 */
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import { buildApp } from '../../api/app';
import { createAccount, createApiKey } from '../../engine/identity/account-store';
import { connectDatabase, type Database, migrateLatest } from '../../engine/platform/database';
import { newId } from '../../engine/platform/ids';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../ops/embedded/embedded-postgres';
import { startTemporalDevServer, type TemporalDevServer } from '../../ops/embedded/temporal-dev-server';
import { SEARCH_ATTRIBUTES } from '../../engine/workflows/run-input';
import { temporalWorkflowRunner } from '../../engine/workflows/temporal-workflow-runner';
import { type BenchOptions, NAMESPACE } from './options';
import { startWorkerHost, type WorkerHost } from './worker-host';

export type Api = (
  method: 'GET' | 'POST',
  url: string,
  body?: object,
) => Promise<{ status: number; body: string }>;

/** What the bench runs against, once started. */
export interface BenchServices {
  db: Database;
  client: Client;
  api: Api;
  baseUrl: string;
  suffix: string;
  bareTaskQueue: string;
  host: WorkerHost;
  servicesSeconds: number;
  workersSeconds: number;
}

/**
 * PostgreSQL and the Temporal dev server side by side, the database migrated with an account and an
 * API key, the Fastify app listening, and the worker host polling both task queues. Each thing
 * started pushes its stop onto `cleanup`.
 */
export async function startServices(
  options: BenchOptions,
  cliPath: string,
  dataDir: string,
  ports: number[],
  benchStarted: number,
  cleanup: Array<() => Promise<unknown>>,
): Promise<BenchServices> {
  const [postgresPort, temporalPort, uiPort] = ports;
  const [postgresStart, temporalStart] = await Promise.allSettled([
    startEmbeddedPostgres({ dataDir, port: postgresPort!, database: 'bench' }),
    startTemporalDevServer({
      cliPath,
      dataDir: options.temporalInMemory ? null : dataDir,
      host: '127.0.0.1',
      port: temporalPort!,
      uiPort: uiPort!,
      namespace: NAMESPACE,
      searchAttributes: { ...SEARCH_ATTRIBUTES },
    }),
  ]);
  const started = [postgresStart, temporalStart].filter((s) => s.status === 'fulfilled');
  for (const s of started) {
    const service = (s as PromiseFulfilledResult<EmbeddedPostgres | TemporalDevServer>).value;
    cleanup.push(() => service.stop());
  }
  if (postgresStart.status === 'rejected') throw postgresStart.reason;
  if (temporalStart.status === 'rejected') throw temporalStart.reason;
  const postgres = postgresStart.value;
  const temporal = temporalStart.value;

  const db = connectDatabase(postgres.url, 10);
  cleanup.push(() => db.destroy());
  await migrateLatest(db);
  const { accountId, owner } = await createAccount(db, { name: 'bench', ownerEmail: 'bench@example.com' });
  const key = await createApiKey(db, { accountId, userId: owner.id });

  const connection = await Connection.connect({ address: temporal.address });
  cleanup.push(() => connection.close());
  const client = new Client({ connection, namespace: NAMESPACE });
  const suffix = newId('worker').slice(5, 17);
  const taskQueue = `bench-workflows-${suffix}`;
  const bareTaskQueue = `bench-bare-${suffix}`;
  const app = await buildApp({
    config: {
      rateLimitPerMinute: 1_000_000,
      maxPayloadBytes: 1024 * 1024,
      logLevel: 'silent',
      trustProxy: false,
      publicUrl: 'http://127.0.0.1',
    },
    db,
    workflows: temporalWorkflowRunner(client, taskQueue),
  });
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  cleanup.push(() => app.close());
  const servicesSeconds = (performance.now() - benchStarted) / 1000;

  const workersStarted = performance.now();
  const host = await startWorkerHost(
    { databaseUrl: postgres.url, temporalAddress: temporal.address, taskQueue, bareTaskQueue },
    options.inProcess,
  );
  cleanup.push(() => host.stop());
  const workersSeconds = (performance.now() - workersStarted) / 1000;

  const headers = {
    authorization: `Bearer ${key.account_sid}:${key.auth_token}`,
    'content-type': 'application/json',
  };
  const api: Api = async (method, url, body) => {
    const res = await fetch(`${baseUrl}/v2${url}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text };
  };
  return { db, client, api, baseUrl, suffix, bareTaskQueue, host, servicesSeconds, workersSeconds };
}
