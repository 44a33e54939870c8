import { calculationStageDuration } from '../../engine/platform/metrics';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StageTimer } from '../../engine/calculations/stage-timing';

interface Timing {
  readonly timer: StageTimer;
  /** When the handler returned (performance.now()); NaN while it runs. */
  done: number;
}

const timings = new WeakMap<FastifyRequest, Timing>();

/**
 * Runs a calculation handler with a stage timer: `parse` is the time from the request's arrival to
 * the handler (body, JSON, schema, credentials); the calculation adds its own stages.
 */
export async function timedCalculation<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  run: (timer: StageTimer) => Promise<T>,
): Promise<T> {
  const timing: Timing = { timer: new StageTimer(), done: NaN };
  timing.timer.add('parse', reply.elapsedTime);
  timings.set(request, timing);
  try {
    return await run(timing.timer);
  } finally {
    timing.done = performance.now();
  }
}

/**
 * Sends the stages of every calculation route of `app` (an encapsulated route plugin) as a
 * `Server-Timing` header; `serialize` is the time from the handler's return to this hook (the
 * response's JSON). An error response carries the stages that ran before it.
 */
export function serverTiming(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const timing = timings.get(request);
    if (timing !== undefined) {
      if (!Number.isNaN(timing.done)) timing.timer.add('serialize', performance.now() - timing.done);
      reply.header('Server-Timing', timing.timer.header());
      const calculation = (request.routeOptions.url ?? '').split('/').pop() ?? 'unknown';
      for (const { stage, ms } of timing.timer.stages()) {
        calculationStageDuration.observe({ calculation, stage }, ms / 1000);
      }
    }
    return payload;
  });
}

/**
 * The calculation routes' serializer: `JSON.stringify`. Their answers are large arrays of numbers
 * (an L risk attribution is 3000 × 16 values; a parametric one three times that), which the
 * schema-compiled serializer writes about ten times slower; the schema still documents them (OpenAPI),
 * and the calculation builds exactly the schema's objects, nothing more (test/api's contract checks).
 */
export const plainJsonSerializer = () => (data: unknown) => JSON.stringify(data);
