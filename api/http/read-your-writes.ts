import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { ReadReplica } from '../../engine/platform/read-replica';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A POST that changes nothing but the audit trail (a list with its parameters in a body). */
    readsOnly?: boolean;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * With a read replica: a write request marks its credential before the reply leaves, so that
 * caller's next lists read on the primary until the replica has replayed the write
 * (engine/platform/read-replica.ts). Audit records alone (every request writes one) do not mark:
 * GET, HEAD and OPTIONS never do, nor a refused request (4xx) or a route that only reads.
 */
export default fp(
  async function readYourWrites(app: FastifyInstance, options: { replica: ReadReplica }) {
    app.addHook('onSend', async (request, reply, payload) => {
      const principal = request.principal;
      if (principal === null || SAFE_METHODS.has(request.method)) return payload;
      if (request.routeOptions.config.readsOnly === true) return payload;
      if (reply.statusCode >= 400 && reply.statusCode < 500) return payload;
      try {
        await options.replica.noteWrite(principal);
      } catch (error) {
        // The write itself is done; only this caller's next list may miss it for as long as the replica lags.
        request.log.warn({ err: error }, 'read-your-writes mark not stored');
      }
      return payload;
    });
  },
  { name: 'read-your-writes', dependencies: ['authentication'] },
);
