import { draining as drainingGauge, httpLoadShed } from '../../engine/platform/metrics';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ServiceUnavailable } from '../../engine/platform/errors';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Starts draining (before `close()`): resolves once no request has arrived for `quietMs`, or after
     * `maxMs`. Safe to call twice.
     */
    drain(options?: { quietMs?: number; maxMs?: number }): Promise<void>;
  }
}

/** Methods a proxy may send again elsewhere (nginx retries all but POST, PATCH and LOCK). */
const RETRIABLE = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);
const RETRY_AFTER_SECONDS = 1;
export const DRAINING_MESSAGE = 'Service Unavailable: this server is shutting down; retry the request.';
export const DRAIN_DEFAULTS = { quietMs: 500, maxMs: 5_000 };

/**
 * A replica that stops must leave the load balancer without failing a request. Closing the listener
 * at once would not do: nginx keeps idle connections to it and connects anew until it learns the
 * replica is gone, and a POST that reaches a closing socket fails (nginx never sends a POST again once
 * it may have reached a replica: it could have written). So, while draining:
 * - every answer carries `Connection: close`, so nginx keeps no connection to this replica;
 * - a request nginx may retry (GET, PUT, DELETE, …) answers 503 with Retry-After, unprocessed: nginx
 *   (`proxy_next_upstream … http_503`, docker-compose.yml) passes it to another replica and takes this
 *   one out of rotation (fail_timeout);
 * - a POST or PATCH is served as usual: answering it 503 would fail it.
 * Once no request has arrived for `quietMs` the balancer has let go, and `close()` may stop listening.
 * A direct client (no balancer) sees the 503s with Retry-After, as after `close()`.
 */
export default fp(
  async function gracefulDrain(app: FastifyInstance) {
    let draining: Promise<void> | null = null;
    let lastArrival = 0;

    app.addHook('onRequest', async (request, reply) => {
      if (draining === null) return;
      lastArrival = Date.now();
      reply.header('connection', 'close');
      if (RETRIABLE.has(request.method)) {
        reply.header('retry-after', String(RETRY_AFTER_SECONDS));
        httpLoadShed.inc({ reason: 'draining' });
        throw new ServiceUnavailable(DRAINING_MESSAGE, RETRY_AFTER_SECONDS);
      }
    });

    app.decorate('drain', (options: { quietMs?: number; maxMs?: number } = {}) => {
      const { quietMs, maxMs } = { ...DRAIN_DEFAULTS, ...options };
      drainingGauge.set(1);
      draining ??= (async () => {
        const started = Date.now();
        lastArrival = started;
        while (Date.now() - lastArrival < quietMs && Date.now() - started < maxMs) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      return draining;
    });
  },
  { name: 'graceful-drain' },
);
