import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Database } from '../../engine/platform/database';
import { isDatabaseUnavailable } from '../../engine/platform/database-faults';
import { ServiceUnavailable } from '../../engine/platform/errors';

/** How often an open breaker asks the database whether it is back; recovery takes at most about this. */
const PROBE_INTERVAL_MS = 1_000;
const RETRY_AFTER_SECONDS = 2;

/**
 * A circuit breaker in front of every route. The first request that finds the database unreachable opens
 * it; while open, requests answer 503 {code, message} with Retry-After at once, before authentication
 * touches the database, instead of each waiting on a dead connection. A probe (`select 1` through the
 * same pool) closes it as soon as the database answers again, so the API recovers by itself.
 */
export default fp(
  async function databaseBreaker(app: FastifyInstance, options: { db: Database }) {
    let open = false;
    let timer: NodeJS.Timeout | undefined;
    let closed = false;

    const probe = async () => {
      timer = undefined;
      try {
        await options.db.raw('select 1');
        open = false;
        app.log.warn('database reachable again; circuit breaker closed');
      } catch {
        if (!closed) timer = setTimeout(() => void probe(), PROBE_INTERVAL_MS);
      }
    };
    const trip = () => {
      if (open) return;
      open = true;
      app.log.error('database unreachable; circuit breaker open (503 until it answers)');
      timer = setTimeout(() => void probe(), PROBE_INTERVAL_MS);
    };

    app.addHook('onRequest', async (request, reply) => {
      // The health check reports the outage itself, with each dependency's status.
      if (!open || request.url.startsWith('/v2/health_check')) return;
      reply.header('retry-after', String(RETRY_AFTER_SECONDS));
      throw new ServiceUnavailable(undefined, RETRY_AFTER_SECONDS);
    });
    // Runs before the error handler, which maps the same errors to 503 (describeError).
    app.addHook('onError', async (_request, reply, error) => {
      if (!isDatabaseUnavailable(error)) return;
      reply.header('retry-after', String(RETRY_AFTER_SECONDS));
      // A pool that is only busy (acquire timed out) sheds this request but is no outage.
      if (error.name !== 'KnexTimeoutError') trip();
    });
    app.addHook('onClose', async () => {
      closed = true;
      clearTimeout(timer);
    });
  },
  { name: 'database-breaker' },
);
