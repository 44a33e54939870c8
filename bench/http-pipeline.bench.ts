import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../api/app';
import { createAccount, createApiKey } from '../engine/identity/account-store';
import { connectDatabase, migrateLatest } from '../engine/platform/database';
import { startEmbeddedPostgres } from '../ops/embedded/embedded-postgres';
import type { WorkflowRunner } from '../engine/workflows/workflow-runner';
import { noWorkflowSchedules } from '../engine/workflows/workflow-schedules';

/** As the issue measured: 16 connections, 10 s per case, the same pool size on both sides. */
const CONNECTIONS = 16;
const POOL_SIZE = 10;
const PAGE_SIZE = 10;

interface CaseResult {
  label: string;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
}

async function load(
  label: string,
  url: string,
  headers: Record<string, string>,
  seconds: number,
  connections = CONNECTIONS,
): Promise<CaseResult> {
  const result = await autocannon({ url, headers, connections, duration: seconds, workers: 1 });
  return {
    label,
    perSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/**
 * What our per-request pipeline costs (credentials, the rate-limit upsert, the read with its audit
 * record, serialisation) against a bare Fastify route that reads the same rows through `pg` from the
 * same PostgreSQL with the same pool size, in the same run. Flags: `--quick` (3 s per case),
 * `--saturation` (adds a 60 s run of GET by id at 64 connections, which must answer no 5xx).
 */
export async function runHttpPipelineBench(argv: readonly string[] = []): Promise<void> {
  const seconds = argv.includes('--quick') ? 3 : 10;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pas-bench-'));
  const postgres = await startEmbeddedPostgres({
    dataDir,
    port: 54000 + Math.floor(Math.random() * 900),
    database: 'bench',
  });
  const db = connectDatabase(postgres.url, POOL_SIZE);
  const pool = new pg.Pool({ connectionString: postgres.url, max: POOL_SIZE });
  // The benchmark starts no workflow; a run request would fail loudly rather than pretend.
  const noWorkflows: WorkflowRunner = {
    start: () => Promise.reject(new Error('workflows are not part of this benchmark')),
    startedDefinition: () => Promise.reject(new Error('workflows are not part of this benchmark')),
    schedules: noWorkflowSchedules('workflows are not part of this benchmark'),
  };
  const bare = Fastify({ logger: false });
  try {
    await migrateLatest(db);
    const { accountId, owner } = await createAccount(db, { name: 'bench', ownerEmail: 'bench@example.com' });
    const key = await createApiKey(db, { accountId, userId: owner.id });
    const app = await buildApp({
      config: {
        rateLimitPerMinute: 100_000_000,
        maxPayloadBytes: 104_857_600,
        logLevel: 'silent',
        trustProxy: false,
        publicUrl: 'http://127.0.0.1',
      },
      db,
      workflows: noWorkflows,
    });
    const auth = { authorization: `Bearer ${key.account_sid}:${key.auth_token}` };
    let portfolioId = '';
    for (let i = 0; i < 20; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/v2/portfolios',
        headers: auth,
        payload: {
          name: `Bench ${i}`,
          base_currency: 'USD',
          securities: Array.from({ length: 10 }, (_, j) => ({
            id: `sec${j}`,
            symbol: `SYM${j}`,
            quantity: j + 1,
          })),
        },
      });
      if (res.statusCode !== 200)
        throw new Error(`creating a portfolio answered ${res.statusCode}: ${res.body}`);
      portfolioId = res.json().portfolio.id;
    }

    // The same indexed reads, bare: no credentials, no rate limit, no audit, no schema.
    bare.get<{ Params: { id: string } }>('/bare/portfolios/:id', async (request) => {
      const { rows } = await pool.query(
        `SELECT * FROM entities WHERE account_id = $1 AND kind = 'portfolio' AND workspace = 'main' AND id = $2`,
        [accountId, request.params.id],
      );
      return { portfolio: rows[0] };
    });
    // The page our list answers: a list leaves out each portfolio's securities, so the bare route
    // does not read them either (PostgreSQL drops them from the body).
    bare.get('/bare/portfolios', async () => {
      const { rows } = await pool.query(
        `SELECT id, name, description, tags, workspace, created_at, updated_at, version,
                body - 'securities' AS body
           FROM entities WHERE account_id = $1 AND kind = 'portfolio' AND workspace = 'main'
          ORDER BY created_at DESC, id DESC LIMIT $2`,
        [accountId, PAGE_SIZE + 1],
      );
      return { portfolios: rows.slice(0, PAGE_SIZE) };
    });
    const ours = await app.listen({ port: 0, host: '127.0.0.1' });
    const baseUrl = await bare.listen({ port: 0, host: '127.0.0.1' });

    // Warm-up: JIT, pools, prepared plans, the credential cache.
    for (const url of [
      `${ours}/v2/portfolios/${portfolioId}`,
      `${ours}/v2/portfolios?page_size=${PAGE_SIZE}`,
      `${baseUrl}/bare/portfolios/${portfolioId}`,
      `${baseUrl}/bare/portfolios`,
    ]) {
      await load('warm-up', url, auth, 1);
    }

    const bareById = await load(
      'bare Fastify+pg: SELECT by id',
      `${baseUrl}/bare/portfolios/${portfolioId}`,
      {},
      seconds,
    );
    const views = async () =>
      Number(
        (
          await db('audit_logs')
            .where({ entity_id: portfolioId, operation: 'VIEW', status: 'SUCCESS' })
            .count<{ n: string }[]>({ n: '*' })
        )[0]!.n,
      );
    const viewsBefore = await views();
    const byId = await load(
      'GET /v2/portfolios/:id (API key)',
      `${ours}/v2/portfolios/${portfolioId}`,
      auth,
      seconds,
    );
    // Every answered read has its VIEW record (reads cut off at the end may add a few more).
    const viewsWritten = (await views()) - viewsBefore;
    const bareList = await load('bare Fastify+pg: list of 10', `${baseUrl}/bare/portfolios`, {}, seconds);
    const list = await load(
      `GET /v2/portfolios?page_size=${PAGE_SIZE} (API key)`,
      `${ours}/v2/portfolios?page_size=${PAGE_SIZE}`,
      auth,
      seconds,
    );
    const workspaces = await load('GET /v2/workspaces (API key)', `${ours}/v2/workspaces`, auth, seconds);
    const health = await load('GET /v2/health_check', `${ours}/v2/health_check`, {}, seconds);
    const reports = [bareById, byId, bareList, list, workspaces, health];
    const saturation = argv.includes('--saturation')
      ? await load(
          'saturation: GET /v2/portfolios/:id, 64 connections, 60 s',
          `${ours}/v2/portfolios/${portfolioId}`,
          auth,
          60,
          64,
        )
      : null;
    if (saturation) reports.push(saturation);

    const cpu = os.cpus();
    console.log(
      `\nHTTP pipeline on ${cpu.length} cores (${cpu[0]?.model ?? 'unknown CPU'}), load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(
          ' ',
        )}, Node ${process.version}, embedded PostgreSQL, pool ${POOL_SIZE}, ${CONNECTIONS} connections, ${seconds} s per case (autocannon)`,
    );
    console.log('| case | req/s | p50 ms | p99 ms | requests | non-2xx | errors |');
    console.log('|---|---|---|---|---|---|---|');
    for (const r of reports) {
      console.log(
        `| ${r.label} | ${r.perSecond.toFixed(0)} | ${r.p50Ms} | ${r.p99Ms} | ${r.requests} | ${r.non2xx} | ${r.errors} |`,
      );
    }
    const ratio = (ours: CaseResult, baseline: CaseResult) => ours.perSecond / baseline.perSecond;
    console.log(
      `\nGET by id: ${ratio(byId, bareById).toFixed(2)}× the bare route's req/s (issue 33 target ≥ 0.85); ` +
        `list: ${ratio(list, bareList).toFixed(2)}× (target ≥ 0.6; the bare list reads the page without its ` +
        `securities, as ours does)`,
    );
    console.log(`GET by id: ${viewsWritten} VIEW records written for ${byId.requests} answered reads`);
    if (saturation)
      console.log(`saturation: ${saturation.non2xx} non-2xx of ${saturation.requests} (target 0 5xx)`);
    await app.close();
  } finally {
    await bare.close();
    await pool.end();
    await db.destroy();
    await postgres.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
