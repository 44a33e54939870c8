import {
  context,
  type Context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import type { Database } from './database';
import { OtlpJsonSpanExporter } from './otlp-json-exporter';

/**
 * OpenTelemetry traces over OTLP (issue 32). With `OTEL_EXPORTER_OTLP_ENDPOINT` set, each process
 * exports: the API's request span; the Temporal client's start of the run's workflow, the workflow
 * and each step's activity (Temporal's OpenTelemetry interceptors, which carry the context in the
 * workflow's headers); and inside them the calculation stages and every SQL statement. One trace id
 * joins an API request to its run's steps. Unset, nothing is registered: no span is made, and the
 * helpers below cost one null check.
 */
class EnterableContextManager extends AsyncLocalStorageContextManager {
  /** Makes `ctx` the active context from here on in this async chain (a Fastify hook's request). */
  enter(ctx: Context): void {
    (
      this as unknown as { _asyncLocalStorage: { enterWith(ctx: Context): void } }
    )._asyncLocalStorage.enterWith(ctx);
  }
}

interface Tracing {
  readonly provider: BasicTracerProvider;
  readonly processor: SpanProcessor;
  readonly contextManager: EnterableContextManager;
  readonly plugin: OpenTelemetryPlugin;
}

let active: Tracing | null = null;

/** The OTLP/HTTP traces address for an `OTEL_EXPORTER_OTLP_ENDPOINT` base, as the OTLP spec builds it. */
export const tracesUrl = (endpoint: string): string => `${endpoint.replace(/\/+$/, '')}/v1/traces`;

/**
 * Registers the process's tracer provider exporting to `endpoint` (OTLP over HTTP, JSON encoding). `batch`
 * false exports each span as it ends (tests). Idempotent per process: a second call is ignored.
 */
export function startTracing(options: { endpoint: string; serviceName: string; batch?: boolean }): void {
  if (active !== null) return;
  const exporter = new OtlpJsonSpanExporter(tracesUrl(options.endpoint));
  const processor =
    options.batch === false ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter);
  const resource = new Resource({ 'service.name': options.serviceName });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  const contextManager = new EnterableContextManager();
  contextManager.enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  active = {
    provider,
    processor,
    contextManager,
    plugin: new OpenTelemetryPlugin({ resource, spanProcessor: processor }),
  };
}

export const tracingEnabled = (): boolean => active !== null;

/** Temporal's OpenTelemetry plugin for clients and workers while tracing is on; none otherwise. */
export function temporalPlugins(): OpenTelemetryPlugin[] {
  return active === null ? [] : [active.plugin];
}

const tracer = () => trace.getTracer('portfolio-analytics-service');

/**
 * An API request's server span, made active for the rest of the request (its handler, the SQL, the
 * Temporal start of a run). A `traceparent` header continues the caller's trace.
 */
export function startRequestSpan(
  name: string,
  headers: Record<string, unknown>,
  attributes: Record<string, string>,
): Span | null {
  if (active === null) return null;
  const parent = propagation.extract(context.active(), headers);
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  active.contextManager.enter(trace.setSpan(parent, span));
  return span;
}

/** Runs `work` inside a child span of the active one (a calculation stage); plain `work` when off. */
export async function inSpan<T>(
  name: string,
  work: () => Promise<T>,
  attributes: Record<string, string> = {},
): Promise<T> {
  if (active === null) return work();
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work();
    } catch (error) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The synchronous form of `inSpan`. */
export function inSpanSync<T>(name: string, work: () => T, attributes: Record<string, string> = {}): T {
  if (active === null) return work();
  return tracer().startActiveSpan(name, { attributes }, (span) => {
    try {
      return work();
    } finally {
      span.end();
    }
  });
}

/**
 * A span per SQL statement of `db`, a child of whatever is active when knex sends it (a request, an
 * activity). Nothing is attached while tracing is off.
 */
export function traceQueries(db: Database): void {
  if (active === null) return;
  const open = new Map<string, Span>();
  const end = (uid: string, error?: unknown) => {
    const span = open.get(uid);
    if (!span) return;
    open.delete(uid);
    if (error !== undefined) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
    }
    span.end();
  };
  db.on('query', (query: { __knexQueryUid: string; sql: string; method?: string }) => {
    const statement = query.sql.length > 2000 ? `${query.sql.slice(0, 2000)}…` : query.sql;
    const operation = (query.method ?? statement.split(/\s+/)[0] ?? 'sql').toLowerCase();
    open.set(
      query.__knexQueryUid,
      tracer().startSpan(`sql ${operation}`, {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system': 'postgresql', 'db.statement': statement },
      }),
    );
  });
  db.on('query-response', (_response: unknown, query: { __knexQueryUid: string }) =>
    end(query.__knexQueryUid),
  );
  db.on('query-error', (error: unknown, query: { __knexQueryUid: string }) =>
    end(query.__knexQueryUid, error),
  );
}

/** Sends what is buffered (at shutdown, or a test before reading its receiver). */
export async function flushTracing(): Promise<void> {
  await active?.provider.forceFlush();
}

export async function stopTracing(): Promise<void> {
  await active?.provider.shutdown();
}
