import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { flushTracing, startTracing, stopTracing, traceQueries } from '../../engine/platform/tracing';
import { startHarness, type WorkflowHarness, workerId } from './workflow-harness';

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  service: string;
}

/**
 * Traces (issue 32): with an OTLP endpoint, one trace id joins the API request that starts a run,
 * the Temporal start of its workflow, the workflow, each step's activity, and the SQL and
 * calculation stages inside them. The receiver is a plain HTTP server taking OTLP/HTTP JSON, as a
 * collector would.
 */
describe('OpenTelemetry traces across the API, the workflow and its steps', () => {
  const spans: ReceivedSpan[] = [];
  let receiver: Server;
  let h: WorkflowHarness;

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        if (request.url === '/v1/traces') {
          const payload = JSON.parse(body) as {
            resourceSpans: Array<{
              resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
              scopeSpans: Array<{ spans: ReceivedSpan[] }>;
            }>;
          };
          for (const resourceSpans of payload.resourceSpans) {
            const service =
              resourceSpans.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ??
              '';
            for (const scope of resourceSpans.scopeSpans) {
              for (const span of scope.spans) spans.push({ ...span, service });
            }
          }
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
    const { port } = receiver.address() as AddressInfo;
    // Before the harness: its API client and worker take Temporal's OpenTelemetry plugin from here.
    startTracing({ endpoint: `http://127.0.0.1:${port}`, serviceName: 'pas-test', batch: false });
    h = await startHarness({ worker: true });
    traceQueries(h.db);
  }, 180_000);
  afterAll(async () => {
    await h?.close();
    await stopTracing();
    await new Promise((resolve) => receiver.close(resolve));
  });

  test('one trace id: the run request, StartWorkflow, RunWorkflow, the steps’ activities, their SQL', async () => {
    const [start, step, end] = [workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Traced',
      workers: [
        { id: start, name: 'Start', type: 'STARTER', next: [step] },
        {
          id: step,
          name: 'Step',
          type: 'BASIC',
          script: 'function main(args) { return { n: 2 } }',
          next: [end],
        },
        { id: end, name: 'End', type: 'ENDER' },
      ],
    });
    const started = await h.run(workflow.id);
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    expect(ended.run_status).toBe('SUCCEEDED');
    await flushTracing();
    await new Promise((resolve) => setTimeout(resolve, 500));

    const request = spans.find((s) => s.name === 'POST /v2/workflows/:id/run');
    expect(request).toBeDefined();
    const trace = spans.filter((s) => s.traceId === request!.traceId);
    const names = new Set(trace.map((s) => s.name));
    expect(names).toContain('StartWorkflow:interpreterWorkflowV2');
    expect(names).toContain('RunWorkflow:interpreterWorkflowV2');
    const activities = trace.filter((s) => s.name.startsWith('RunActivity:'));
    expect(activities.length).toBeGreaterThanOrEqual(1);
    // SQL under the request (the run's record) and under a step's activity (its record).
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const ancestors = (span: ReceivedSpan): string[] => {
      const names: string[] = [];
      for (
        let p = span.parentSpanId ? byId.get(span.parentSpanId) : undefined;
        p;
        p = p.parentSpanId ? byId.get(p.parentSpanId) : undefined
      ) {
        names.push(p.name);
      }
      return names;
    };
    const sql = trace.filter((s) => s.name.startsWith('sql '));
    expect(sql.some((s) => ancestors(s).includes('POST /v2/workflows/:id/run'))).toBe(true);
    expect(sql.some((s) => ancestors(s).some((name) => name.startsWith('RunActivity:')))).toBe(true);
    // The workflow span descends from the request, through the client's start.
    const run = trace.find((s) => s.name === 'RunWorkflow:interpreterWorkflowV2')!;
    expect(ancestors(run)).toEqual(
      expect.arrayContaining(['StartWorkflow:interpreterWorkflowV2', 'POST /v2/workflows/:id/run']),
    );
    expect(new Set(trace.map((s) => s.service))).toEqual(new Set(['pas-test']));
  }, 120_000);

  test('a calculation’s stages are spans under its request', async () => {
    await h.call('POST', '/v2/calculations/exposure', {
      securities: [{ id: 'a', symbol: 'AAPL', quantity: 1 }],
    });
    await flushTracing();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const request = spans.find((s) => s.name === 'POST /v2/calculations/exposure')!;
    const stages = spans.filter((s) => s.parentSpanId === request.spanId && s.name.startsWith('calc '));
    expect(stages.map((s) => s.name)).toContain('calc checks');
  });
});
