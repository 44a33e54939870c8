import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { buildApp } from '../api/app';
import { createAccount, createApiKey } from '../engine/accounts/account-store';
import { connectDatabase, migrateLatest } from '../engine/db/database';
import { startEmbeddedPostgres } from '../engine/runtime/embedded-postgres';
import type { WorkflowRunner } from '../engine/workflows/workflow-runner';
import { noWorkflowSchedules } from '../engine/workflows/workflow-schedules';
import { measureLatency, printReports } from './measure';

const REQUESTS = 3000;
const CONCURRENCY = 8;

/**
 * What our per-request pipeline costs: credential lookup, the PostgreSQL rate-limit upsert,
 * headers, audit, serialisation; against a bare Fastify route on the same machine in the same run.
 */
export async function runHttpPipelineBench(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pas-bench-'));
  const postgres = await startEmbeddedPostgres({
    dataDir,
    port: 54000 + Math.floor(Math.random() * 900),
    database: 'bench',
  });
  const db = connectDatabase(postgres.url, 10);
  // The benchmark starts no workflow; a run request would fail loudly rather than pretend.
  const noWorkflows: WorkflowRunner = {
    start: () => Promise.reject(new Error('workflows are not part of this benchmark')),
    startedDefinition: () => Promise.reject(new Error('workflows are not part of this benchmark')),
    schedules: noWorkflowSchedules('workflows are not part of this benchmark'),
  };
  const bare = Fastify({ logger: false });
  bare.get('/v2/health_check', async () => ({ api_status: 'OK', version: 'v2', name: 'bare' }));
  try {
    await migrateLatest(db);
    const { accountId, owner } = await createAccount(db, { name: 'bench', ownerEmail: 'bench@example.com' });
    const key = await createApiKey(db, { accountId, userId: owner.id });
    const app = await buildApp({
      config: {
        rateLimitPerMinute: 1_000_000,
        maxPayloadBytes: 104_857_600,
        logLevel: 'silent',
        trustProxy: false,
        publicUrl: 'http://127.0.0.1',
      },
      db,
      workflows: noWorkflows,
    });
    const ours = await app.listen({ port: 0, host: '127.0.0.1' });
    const baseUrl = await bare.listen({ port: 0, host: '127.0.0.1' });
    const auth = { authorization: `Bearer ${key.account_sid}:${key.auth_token}` };
    const get =
      (url: string, headers: Record<string, string> = {}) =>
      async () => {
        const res = await fetch(url, { headers });
        if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
        await res.arrayBuffer();
      };
    // Warm-up: JIT, connection pools, prepared plans.
    await measureLatency('warm-up', 300, CONCURRENCY, get(`${ours}/v2/workspaces`, auth));
    const baseline = await measureLatency(
      'bare Fastify route',
      REQUESTS,
      CONCURRENCY,
      get(`${baseUrl}/v2/health_check`),
    );
    const health = await measureLatency(
      'GET /v2/health_check',
      REQUESTS,
      CONCURRENCY,
      get(`${ours}/v2/health_check`),
    );
    const list = await measureLatency(
      'GET /v2/workspaces (API key)',
      REQUESTS,
      CONCURRENCY,
      get(`${ours}/v2/workspaces`, auth),
    );
    printReports(
      `HTTP pipeline on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}, embedded PostgreSQL`,
      [baseline, health, list],
      baseline,
    );
    await app.close();
  } finally {
    await bare.close();
    await db.destroy();
    await postgres.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
