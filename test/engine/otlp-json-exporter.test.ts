import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { OtlpJsonSpanExporter, otlpTraces } from '../../engine/platform/otlp-json-exporter';

/** Our OTLP/HTTP JSON span exporter (issue 32): OTLP's encoding, and the request a collector gets. */
describe('the OTLP JSON span exporter', () => {
  function finishedSpans() {
    const memory = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      resource: new Resource({ 'service.name': 'pas-test' }),
      spanProcessors: [new SimpleSpanProcessor(memory)],
    });
    const tracer = provider.getTracer('scope-a', '1.0');
    const parent = tracer.startSpan('parent', { kind: SpanKind.SERVER, startTime: [1_700_000_000, 5] });
    parent.setAttributes({
      'http.route': '/v2/x',
      'http.response.status_code': 200,
      ratio: 0.5,
      ok: true,
      list: ['a', 'b'],
    });
    parent.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
    parent.end([1_700_000_001, 0]);
    return memory.getFinishedSpans();
  }

  test('ids, kinds counted from 1, times in nanoseconds as text, typed attributes, status', () => {
    const [span] = finishedSpans();
    const encoded = otlpTraces([span!]);
    const resource = encoded.resourceSpans[0]!;
    expect(resource.resource.attributes).toContainEqual({
      key: 'service.name',
      value: { stringValue: 'pas-test' },
    });
    expect(resource.scopeSpans[0]!.scope).toEqual({ name: 'scope-a', version: '1.0' });
    const out = resource.scopeSpans[0]!.spans[0]!;
    expect(out).toMatchObject({
      traceId: span!.spanContext().traceId,
      spanId: span!.spanContext().spanId,
      name: 'parent',
      kind: 2,
      startTimeUnixNano: '1700000000000000005',
      endTimeUnixNano: '1700000001000000000',
      status: { code: 2, message: 'boom' },
    });
    expect(out.attributes).toEqual([
      { key: 'http.route', value: { stringValue: '/v2/x' } },
      { key: 'http.response.status_code', value: { intValue: '200' } },
      { key: 'ratio', value: { doubleValue: 0.5 } },
      { key: 'ok', value: { boolValue: true } },
      { key: 'list', value: { arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] } } },
    ]);
  });

  test('POSTs application/json to the collector; a refusal is a failed export', async () => {
    const bodies: string[] = [];
    let status = 200;
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        expect(request.headers['content-type']).toBe('application/json');
        bodies.push(body);
        response.writeHead(status).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
    try {
      const exporter = new OtlpJsonSpanExporter(url);
      const result = (spans = finishedSpans()) =>
        new Promise<number>((resolve) => exporter.export(spans, (r) => resolve(r.code)));
      expect(await result()).toBe(ExportResultCode.SUCCESS);
      expect(JSON.parse(bodies[0]!).resourceSpans[0].scopeSpans[0].spans[0].name).toBe('parent');
      status = 503;
      expect(await result()).toBe(ExportResultCode.FAILED);
      await exporter.shutdown();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
