import { type Span, SpanStatusCode } from '@opentelemetry/api';
import { startRequestSpan, tracingEnabled } from '../engine/platform/tracing';
import { prettyStream } from '../engine/platform/log-format';
import { AjvCompiler } from '@fastify/ajv-compiler';
import compress from '@fastify/compress';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { type Config, LOAD_SHEDDING_DEFAULTS } from '../engine/platform/config';
import { AJV_OPTIONS } from '../engine/platform/schema-validator';
import type { Database } from '../engine/platform/database';
import { primaryReads, type ReadReplica } from '../engine/platform/read-replica';
import { RESOURCE_KINDS, type ResourceKindName } from '../engine/kinds';
import type { ResourceKind } from '../engine/store/resource-kind';
import type { TemporalHealth } from '../engine/platform/dependency-health';
import { randomAlphanumeric } from '../engine/platform/ids';
import type { SimulationEngine } from '../engine/calculations/simulation-engine';
import type { WorkflowRunner } from '../engine/workflows/workflow-runner';
import authentication from './http/authentication';
import databaseBreaker from './http/database-breaker';
import errorHandler from './http/error-handler';
import gracefulDrain from './http/graceful-drain';
import loadShedding from './http/load-shedding';
import readYourWrites from './http/read-your-writes';
import methodNotAllowed from './http/method-not-allowed';
import openapi from './http/openapi';
import requestEncoding from './http/request-encoding';
import requestTiming from './http/request-timing';
import auditLogRoutes from './routes/audit-logs';
import analyticsRoutes from './routes/analytics';
import calculationRoutes from './routes/calculations';
import reportRoutes from './routes/reports';
import fileContentRoutes from './routes/file-content';
import fileRoutes from './routes/files';
import healthCheckRoutes from './routes/health-check';
import integrationWebhookRoutes from './routes/integrations';
import { resourceRoutes } from './http/resource-routes';
import marketDataRoutes from './routes/market-data';
import sdkFunctionRoutes from './routes/sdk-function';
import reportPageRoutes from './routes/report-pages';
import oauthTokenRoutes from './routes/oauth-token';
import workflowRoutes from './routes/workflows';
import scriptTrialRoutes from './routes/script-trials';
import workspaceRoutes from './routes/workspaces';
import secretRoutes from './routes/secrets';
import { SecretsKeyring } from '../engine/secrets/master-key';
import consoleRoutes from './console/console-routes';
import { settleStartsBehindReplies } from '../engine/workflows/run-workflow';

export const API_VERSION = '2.0.0';

/**
 * Routes beyond CRUD of a declared kind, registered right after its CRUD routes (which follow from
 * the declaration alone, engine/kinds/).
 */
const KIND_EXTRA_ROUTES: Partial<
  Record<ResourceKindName, FastifyPluginAsyncTypebox<{ db: Database; workflows: WorkflowRunner }>>
> = {
  integration: integrationWebhookRoutes,
};

export interface AppDependencies {
  config: Pick<Config, 'rateLimitPerMinute' | 'maxPayloadBytes' | 'logLevel' | 'trustProxy' | 'publicUrl'> &
    Partial<
      Pick<
        Config,
        | 'loadShedEventLoopDelayMs'
        | 'loadShedPoolQueue'
        | 'maxConcurrentUploads'
        | 'temporalUiUrl'
        | 'logFormat'
        | 'responseGzipLevel'
      >
    >;
  db: Database;
  /**
   * A streaming replica of `db` (DATABASE_READ_URL) for lists that tolerate a short lag; without
   * one every read is on `db`.
   */
  replica?: ReadReplica;
  workflows: WorkflowRunner;
  /** The calculations' simulation backend; the plain reference model when not given (tests). */
  simulation?: SimulationEngine;
  logger?: FastifyServerOptions['logger'];
  /** How often load shedding samples the event-loop delay (ms); tests shorten it. */
  loadSampleIntervalMs?: number;
  /** Asks Temporal about itself and the task queue's pollers, for the health check; none in most tests. */
  temporalHealth?: () => Promise<TemporalHealth>;
  /**
   * The secrets' master keys (SecretsKeyring.fromConfig at start-up). Without them the service runs,
   * and storing or reading a secret says that no master key is configured.
   */
  secrets?: SecretsKeyring;
}

/**
 * Query strings, paths and headers are text, so their values are coerced to the declared types ("10"
 * to 10). A JSON body already carries its types: coercing it would accept `false` as the name "false"
 * or "" as null, which the document does not allow.
 */
function validatorsByPart() {
  const pool = AjvCompiler();
  type Compile = ReturnType<typeof pool>;
  return (externalSchemas: unknown, options?: { customOptions?: object }) => {
    const build = (coerceTypes: 'array' | false): Compile =>
      pool(externalSchemas as never, {
        customOptions: { ...options?.customOptions, ...AJV_OPTIONS, coerceTypes },
      });
    const text = build('array');
    const json = build(false);
    return ((route: { httpPart?: string }) =>
      route.httpPart === 'body' ? json(route as never) : text(route as never)) as Compile;
  };
}

/** Never let a credential reach the log: the webhook's `key` rides on the query string. */
function redactedUrl(url: string): string {
  return url.replace(/([?&]key=)[^&]*/gi, '$1[REDACTED]');
}

export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  // Pretty (a terminal, or LOG_FORMAT=pretty): one readable line per request, written below.
  const pretty = deps.logger === undefined && deps.config.logFormat === 'pretty';
  const app = Fastify({
    logger: deps.logger ?? {
      level: deps.config.logLevel,
      ...(pretty ? { stream: prettyStream(), base: { component: 'api' } } : {}),
      serializers: {
        req: (req: { method: string; url: string; ip?: string }) => ({
          method: req.method,
          url: redactedUrl(req.url),
          ip: req.ip,
        }),
      },
    },
    bodyLimit: deps.config.maxPayloadBytes,
    genReqId: () => 'req_' + randomAlphanumeric(25),
    trustProxy: deps.config.trustProxy,
    schemaController: { compilersFactory: { buildValidator: validatorsByPart() } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  if (tracingEnabled()) {
    const spans = new WeakMap<object, Span>();
    app.addHook('onRequest', async (request) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const span = startRequestSpan(`${request.method} ${route}`, request.headers, {
        'http.request.method': request.method,
        'http.route': route,
      });
      if (span) spans.set(request, span);
    });
    app.addHook('onResponse', async (request, reply) => {
      const span = spans.get(request);
      if (!span) return;
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
  }

  if (pretty) {
    app.addHook('onResponse', async (request, reply) => {
      // Probes and the launcher poll it every few seconds, and it answers 503 while starting.
      if (request.routeOptions.url === '/v2/health_check') return;
      const request_ = {
        method: request.method,
        route: redactedUrl(request.url),
        status: reply.statusCode,
        ms: reply.elapsedTime,
      };
      if (reply.statusCode >= 500) request.log.error({ request: request_ }, 'request');
      else request.log.info({ request: request_ }, 'request');
    });
  }

  // A run's 202 leaves its Temporal start going on behind it; closing waits for those starts before
  // the caller closes the Temporal connection and the pool.
  app.addHook('onClose', () => settleStartsBehindReplies());

  // Real clients (the PyPI `everysk` packages) send `Content-Type: application/json` on every request,
  // a bodiless DELETE or GET included. An empty body is no body, whatever its Content-Type says; a
  // route that needs one then answers its own 400 naming the missing field.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    parseJson(request, text, done);
  });

  await app.register(requestTiming);
  await app.register(methodNotAllowed);
  await app.register(errorHandler, { db: deps.db, maxPayloadBytes: deps.config.maxPayloadBytes });
  // First of the request hooks: a stopping replica hands requests back to the balancer unprocessed.
  await app.register(gracefulDrain);
  // Before authentication: an overloaded API, like an open breaker, answers 503 without touching
  // the database.
  await app.register(loadShedding, {
    db: deps.db,
    maxEventLoopDelayMs:
      deps.config.loadShedEventLoopDelayMs ?? LOAD_SHEDDING_DEFAULTS.loadShedEventLoopDelayMs,
    maxPoolQueue: deps.config.loadShedPoolQueue ?? LOAD_SHEDDING_DEFAULTS.loadShedPoolQueue,
    maxConcurrentUploads: deps.config.maxConcurrentUploads ?? LOAD_SHEDDING_DEFAULTS.maxConcurrentUploads,
    ...(deps.loadSampleIntervalMs ? { sampleIntervalMs: deps.loadSampleIntervalMs } : {}),
  });
  // Before authentication: an open breaker answers 503 without touching the database.
  await app.register(databaseBreaker, { db: deps.db });
  await app.register(authentication, { db: deps.db, rateLimitPerMinute: deps.config.rateLimitPerMinute });
  if (deps.replica) await app.register(readYourWrites, { replica: deps.replica });
  const reads = deps.replica ?? primaryReads(deps.db);
  await app.register(requestEncoding, { maxPayloadBytes: deps.config.maxPayloadBytes });
  await app.register(compress, {
    global: true,
    globalDecompression: false,
    encodings: ['gzip'],
    threshold: 0,
    // Level 1 by default (nginx's too): calculation answers run to megabytes, and zlib's usual level 6
    // costs about three times the CPU for a sixth less; 64 KiB chunks make a large answer fewer
    // hops to zlib's thread (see RESPONSE_GZIP_LEVEL).
    zlibOptions: { level: deps.config.responseGzipLevel ?? 1, chunkSize: 64 * 1024 },
  });
  await app.register(openapi, { version: API_VERSION });

  await app.register(
    async (v2) => {
      await v2.register(healthCheckRoutes, {
        simulation: deps.simulation ?? null,
        db: deps.db,
        replica: deps.replica ?? null,
        temporalHealth: deps.temporalHealth ?? null,
      });
      await v2.register(oauthTokenRoutes, { db: deps.db });
      await v2.register(workspaceRoutes, { db: deps.db });
      await v2.register(secretRoutes, {
        db: deps.db,
        keyring: deps.secrets ?? SecretsKeyring.unavailable('this process was started without a master key'),
      });
      for (const [name, kind] of Object.entries(RESOURCE_KINDS) as Array<[ResourceKindName, ResourceKind]>) {
        await v2.register(resourceRoutes(kind), { db: deps.db, reads });
        const extra = KIND_EXTRA_ROUTES[name];
        if (extra) await v2.register(extra, { db: deps.db, workflows: deps.workflows });
      }
      await v2.register(reportRoutes, { db: deps.db, reads, publicUrl: deps.config.publicUrl });
      await v2.register(auditLogRoutes, { db: deps.db, reads });
      await v2.register(calculationRoutes, { db: deps.db, backend: deps.simulation?.backend });
      await v2.register(analyticsRoutes, { db: deps.db, backend: deps.simulation?.backend });
      await v2.register(workflowRoutes, { db: deps.db, workflows: deps.workflows, reads });
      await v2.register(scriptTrialRoutes, { db: deps.db, workflows: deps.workflows });
      await v2.register(marketDataRoutes, { db: deps.db });
      await v2.register(fileRoutes, {
        db: deps.db,
        reads,
        maxPayloadBytes: deps.config.maxPayloadBytes,
        publicUrl: deps.config.publicUrl,
      });
    },
    { prefix: '/v2' },
  );
  // Addresses handed out in objects (a file's `url`, a report's `relative_url`) live outside /v2.
  const pageOptions = {
    db: deps.db,
    maxPayloadBytes: deps.config.maxPayloadBytes,
    publicUrl: deps.config.publicUrl,
  };
  await app.register(fileContentRoutes, { ...pageOptions, gzipLevel: deps.config.responseGzipLevel ?? 1 });
  await app.register(reportPageRoutes, pageOptions);
  await app.register(consoleRoutes, { db: deps.db, temporalUiUrl: deps.config.temporalUiUrl ?? null });
  await app.register(sdkFunctionRoutes, {
    db: deps.db,
    workflows: deps.workflows,
    maxPayloadBytes: deps.config.maxPayloadBytes,
    publicUrl: deps.config.publicUrl,
  });
  return app;
}
