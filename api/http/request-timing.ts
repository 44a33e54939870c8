import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { httpRequestDuration, statusClass } from '../../engine/platform/metrics';

/**
 * Every response names its request and how long it took, errors and 404s included; the duration
 * goes to pas_http_request_duration_seconds under the route's template (`/v2/portfolios/:id`, never
 * the raw URL, so ids do not multiply the series; a request no route matched is `unmatched`).
 */
export default fp(
  async function requestTiming(app: FastifyInstance) {
    app.addHook('onSend', async (request, reply, payload) => {
      reply.header('X-Service-Request-Id', request.id);
      const elapsedMs = reply.elapsedTime;
      reply.header('X-Service-Request-Duration', elapsedMs.toFixed(1));
      return payload;
    });
    app.addHook('onResponse', async (request, reply) => {
      httpRequestDuration.observe(
        {
          method: request.method,
          route: request.routeOptions.url ?? 'unmatched',
          status_class: statusClass(reply.statusCode),
        },
        reply.elapsedTime / 1000,
      );
    });
  },
  { name: 'request-timing' },
);
