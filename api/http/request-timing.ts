import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** Every response names its request and how long it took, errors and 404s included. */
export default fp(
  async function requestTiming(app: FastifyInstance) {
    app.addHook('onSend', async (request, reply, payload) => {
      reply.header('X-Service-Request-Id', request.id);
      const elapsedMs = reply.elapsedTime;
      reply.header('X-Service-Request-Duration', elapsedMs.toFixed(1));
      return payload;
    });
  },
  { name: 'request-timing' },
);
