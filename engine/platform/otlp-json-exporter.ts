import type { Attributes, AttributeValue, HrTime } from '@opentelemetry/api';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/**
 * Spans to an OTLP/HTTP collector in OTLP's JSON encoding (`POST <endpoint>/v1/traces`,
 * `application/json`), as every collector (the OpenTelemetry Collector, Jaeger, Tempo) accepts it.
 * Written here rather than taken from @opentelemetry/exporter-trace-otlp-http, whose protobuf, metrics
 * and logs machinery would add about 5 MB to the image for the one thing used: this request.
 */
export class OtlpJsonSpanExporter implements SpanExporter {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly url: string,
    private readonly timeoutMs = 10_000,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const sent = fetch(this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(otlpTraces(spans)),
      signal: AbortSignal.timeout(this.timeoutMs),
    }).then(
      (response) => {
        void response.body?.cancel();
        done(
          response.ok
            ? { code: ExportResultCode.SUCCESS }
            : {
                code: ExportResultCode.FAILED,
                error: new Error(`the collector answered ${response.status}`),
              },
        );
      },
      (error: unknown) =>
        done({
          code: ExportResultCode.FAILED,
          error: error instanceof Error ? error : new Error(String(error)),
        }),
    );
    this.pending.add(sent);
    void sent.finally(() => this.pending.delete(sent));
  }

  async forceFlush(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
  }
}

const nanos = (time: HrTime): string => (BigInt(time[0]) * 1_000_000_000n + BigInt(time[1])).toString();

type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number }
  | { arrayValue: { values: AnyValue[] } };

function anyValue(value: AttributeValue | null | undefined): AnyValue {
  if (Array.isArray(value)) return { arrayValue: { values: value.map((v) => anyValue(v)) } };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number')
    return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { stringValue: String(value ?? '') };
}

const keyValues = (attributes: Attributes) =>
  Object.entries(attributes).map(([key, value]) => ({ key, value: anyValue(value) }));

/** OTLP's ExportTraceServiceRequest for `spans`, grouped by resource and instrumentation scope. */
export function otlpTraces(spans: readonly ReadableSpan[]) {
  const byResource = new Map<
    object,
    { resource: ReadableSpan['resource']; scopes: Map<string, ReadableSpan[]> }
  >();
  for (const span of spans) {
    let entry = byResource.get(span.resource);
    if (!entry) {
      entry = { resource: span.resource, scopes: new Map() };
      byResource.set(span.resource, entry);
    }
    const scope = `${span.instrumentationLibrary.name}\u0000${span.instrumentationLibrary.version ?? ''}`;
    entry.scopes.set(scope, [...(entry.scopes.get(scope) ?? []), span]);
  }
  return {
    resourceSpans: [...byResource.values()].map(({ resource, scopes }) => ({
      resource: { attributes: keyValues(resource.attributes) },
      scopeSpans: [...scopes.values()].map((group) => ({
        scope: {
          name: group[0]!.instrumentationLibrary.name,
          version: group[0]!.instrumentationLibrary.version,
        },
        spans: group.map((span) => ({
          traceId: span.spanContext().traceId,
          spanId: span.spanContext().spanId,
          ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
          name: span.name,
          // OTLP numbers kinds from 1 (INTERNAL); the API from 0.
          kind: span.kind + 1,
          startTimeUnixNano: nanos(span.startTime),
          endTimeUnixNano: nanos(span.endTime),
          attributes: keyValues(span.attributes),
          events: span.events.map((event) => ({
            name: event.name,
            timeUnixNano: nanos(event.time),
            attributes: keyValues(event.attributes ?? {}),
          })),
          status: {
            code: span.status.code,
            ...(span.status.message ? { message: span.status.message } : {}),
          },
        })),
      })),
    })),
  };
}
