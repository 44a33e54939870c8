import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from './database';

/**
 * The process's Prometheus metrics (issue 32). One registry per process, served on its own port
 * (`METRICS_PORT`, off when unset; `npm start` sets one for the api and one for the worker), never on
 * the API's: route names, volumes and latencies are operational detail for the people who run the
 * service, not for its API clients, and a scrape must not need an account's credentials.
 * docs/operations.md lists every series and the dashboard in monitoring/ graphs them.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const registers = [registry];
/** Request and step latencies: 5 ms to 30 s. */
const LATENCY = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const httpRequestDuration = new Histogram({
  name: 'pas_http_request_duration_seconds',
  help: 'HTTP requests by route template (not the raw URL), method and status class (2xx, 4xx, …).',
  labelNames: ['method', 'route', 'status_class'] as const,
  buckets: LATENCY,
  registers,
});

export const httpRateLimited = new Counter({
  name: 'pas_http_rate_limited_total',
  help: 'Requests answered 429 by the per-account rate limit.',
  registers,
});

export const httpLoadShed = new Counter({
  name: 'pas_http_load_shed_total',
  help: 'Requests answered 503 to shed load, by reason (event_loop, pool_queue, uploads, draining, database).',
  labelNames: ['reason'] as const,
  registers,
});

export const draining = new Gauge({
  name: 'pas_draining',
  help: '1 while the process drains (stops taking requests before it exits), else 0.',
  registers,
});

export const calculationStageDuration = new Histogram({
  name: 'pas_calculation_stage_duration_seconds',
  help: 'Calculation requests by calculation and stage (the Server-Timing stages).',
  labelNames: ['calculation', 'stage'] as const,
  buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers,
});

export const runsStarted = new Counter({
  name: 'pas_runs_started_total',
  help: 'Workflow runs recorded, by trigger (MANUAL, API, TIME_BASED, FILE_RECEIVED).',
  labelNames: ['trigger'] as const,
  registers,
});

export const runStartsEager = new Counter({
  name: 'pas_run_starts_eager_total',
  help: 'Runs this worker started with Temporal’s eager start: their first workflow task came back in the start’s answer.',
  registers,
});

export const runsFinished = new Counter({
  name: 'pas_runs_finished_total',
  help: 'Workflow runs ended, by trigger and final status (SUCCEEDED, FAILED).',
  labelNames: ['trigger', 'status'] as const,
  registers,
});

export const runDuration = new Histogram({
  name: 'pas_run_duration_seconds',
  help: 'Workflow runs from start to end, by trigger and final status.',
  labelNames: ['trigger', 'status'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
  registers,
});

export const stepDuration = new Histogram({
  name: 'pas_step_duration_seconds',
  help: 'Workflow steps (worker executions) by runtime (javascript, python) and outcome (completed, error).',
  labelNames: ['runtime', 'outcome'] as const,
  buckets: LATENCY,
  registers,
});

export const sandboxLimitKills = new Counter({
  name: 'pas_sandbox_limit_kills_total',
  help: 'Steps stopped by a sandbox limit, by runtime and limit (timeout, memory, output).',
  labelNames: ['runtime', 'limit'] as const,
  registers,
});

export const pythonEnvironmentBuilds = new Counter({
  name: 'pas_python_environment_builds_total',
  help: 'Python environment builds for templates, by result (built, reused, failed).',
  labelNames: ['result'] as const,
  registers,
});

export const egressRequests = new Counter({
  name: 'pas_egress_requests_total',
  help: 'Outbound calls of scripts through HTTP and SMTP integrations, by kind (http, smtp) and outcome (ok: answered, whatever its status; refused: the egress policy stopped it before sending; failed: timeout, too large, connection or TLS failure).',
  labelNames: ['kind', 'outcome'] as const,
  registers,
});

export const egressDuration = new Histogram({
  name: 'pas_egress_request_duration_seconds',
  help: 'Outbound calls of scripts through integrations, from the call to its answer (redirects included), by kind and outcome.',
  labelNames: ['kind', 'outcome'] as const,
  buckets: LATENCY,
  registers,
});

export const runHistoryRemoved = new Counter({
  name: 'pas_run_history_removed_total',
  help: 'Rows of finished runs removed by run retention (RUN_RETENTION_DAYS, pas runs prune), by table (workflow_executions, worker_executions, sdk_calls, webhook_payloads).',
  labelNames: ['table'] as const,
  registers,
});

const pools = new Set<Database>();

/** The connection pool of each database this process watches: in use, idle, and requests waiting. */
export const databasePool = new Gauge({
  name: 'pas_db_pool_connections',
  help: 'Database pool of the process: connections in use and idle, and requests waiting for one.',
  labelNames: ['state'] as const,
  registers,
  collect() {
    let used = 0;
    let free = 0;
    let waiting = 0;
    for (const db of pools) {
      const pool = db.client.pool as
        { numUsed(): number; numFree(): number; numPendingAcquires(): number } | undefined;
      if (!pool) continue;
      used += pool.numUsed();
      free += pool.numFree();
      waiting += pool.numPendingAcquires();
    }
    this.set({ state: 'in_use' }, used);
    this.set({ state: 'idle' }, free);
    this.set({ state: 'waiting' }, waiting);
  },
});

/** Reports `db`'s pool in pas_db_pool_connections until the process ends or `unwatch` is called. */
export function watchPool(db: Database): () => void {
  pools.add(db);
  return () => pools.delete(db);
}

/** Labels every series of this process with its role (api, worker), as Prometheus's `job` may not. */
export function setProcessRole(role: 'api' | 'worker'): void {
  registry.setDefaultLabels({ process: role });
}

/** The status class of an HTTP status: 2xx, 3xx, 4xx or 5xx. */
export const statusClass = (status: number): string => `${Math.floor(status / 100)}xx`;

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * GET /metrics on `host:port` (Prometheus text format): this registry, then whatever `more` adds
 * (the worker appends the Temporal SDK's own series). Anything else is a 404.
 */
export async function startMetricsServer(
  host: string,
  port: number,
  more?: () => Promise<string>,
): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || (request.url ?? '').split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: GET /metrics\n');
      return;
    }
    void (async () => {
      try {
        const own = await registry.metrics();
        const extra = more ? await more().catch(() => '') : '';
        response.writeHead(200, { 'content-type': registry.contentType }).end(`${own}\n${extra}`);
      } catch (error) {
        response.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(error)}\n`);
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    // A scraper's kept-alive connection would hold close() (and the process) open.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * A TCP port free on 127.0.0.1 right now (for a helper server the process starts next), handed out
 * by the kernel from its ephemeral range: the pool meant for automatic ports, so the pick never
 * takes a port an operator configured for another service that has not bound it yet.
 */
export async function freeLoopbackPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
