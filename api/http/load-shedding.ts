import { httpLoadShed } from '../../engine/platform/metrics';
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Database } from '../../engine/platform/database';
import { ServiceUnavailable } from '../../engine/platform/errors';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes file uploads: it draws on the bounded upload budget (`maxConcurrentUploads`). */
    upload?: boolean;
  }
}

export interface LoadSheddingOptions {
  db: Database;
  /** Mean event-loop delay (ms, sampled) above which requests are shed; 0: never. */
  maxEventLoopDelayMs: number;
  /** Requests already waiting for a database connection above which new ones are shed; 0: never. */
  maxPoolQueue: number;
  /** Uploads in progress at once; the next one is shed until one ends. */
  maxConcurrentUploads: number;
  /** How often the event-loop delay is sampled (ms); tests shorten it. */
  sampleIntervalMs?: number;
}

const RETRY_AFTER_SECONDS = 2;

export const OVERLOADED_MESSAGE = 'Service Unavailable: the server is overloaded; retry shortly.';
export const UPLOADS_BUSY_MESSAGE = 'Service Unavailable: too many uploads are in progress; retry shortly.';

/**
 * Sheds load before it queues without bound: past the thresholds a request answers 503 {code, message}
 * with Retry-After at once, before authentication spends a database round trip on it. Uploads have a
 * budget of their own, so slow uploaders hold at most `maxConcurrentUploads` requests and every other
 * route keeps answering. The health check is never shed: it is how an operator sees the overload.
 */
export default fp(
  async function loadShedding(app: FastifyInstance, options: LoadSheddingOptions) {
    const shed = (request: FastifyRequest, message: string, reason: string): never => {
      request.log.warn({ url: request.url }, message);
      httpLoadShed.inc({ reason });
      throw new ServiceUnavailable(message, RETRY_AFTER_SECONDS);
    };
    // The health check, and the API's own description (no database, served from memory), are never
    // shed: an operator and a client generator must see them most of all while the service is loaded.
    const isHealthCheck = (request: FastifyRequest) =>
      request.url.startsWith('/v2/health_check') ||
      request.url.startsWith('/v2/openapi.json') ||
      request.url.startsWith('/v2/docs');

    if (options.maxEventLoopDelayMs > 0) {
      const sampleIntervalMs = options.sampleIntervalMs ?? 1_000;
      // The samples taken while the app compiles its routes measure start-up, not load.
      let measuringFrom = Infinity;
      app.addHook('onReady', async () => {
        measuringFrom = Date.now() + 2 * sampleIntervalMs;
      });
      await app.register(underPressure, {
        maxEventLoopDelay: options.maxEventLoopDelayMs,
        sampleInterval: sampleIntervalMs,
        // Our own error (through the one error handler), rather than the plugin's body.
        pressureHandler: async (request, reply) => {
          if (isHealthCheck(request) || Date.now() < measuringFrom) return;
          reply.header('retry-after', String(RETRY_AFTER_SECONDS));
          shed(request, OVERLOADED_MESSAGE, 'event_loop');
        },
      });
    }

    // knex's pool (tarn) counts the requests waiting for a connection; past the bound, a new one
    // would only wait for the acquire timeout and answer 503 five seconds later.
    const pool = (options.db.client as { pool?: { numPendingAcquires(): number } }).pool;
    let uploads = 0;
    const holdingUpload = new WeakSet<FastifyRequest>();
    const releaseUpload = async (request: FastifyRequest) => {
      if (holdingUpload.delete(request)) uploads -= 1;
    };

    app.addHook('onRequest', async (request, reply) => {
      if (isHealthCheck(request)) return;
      if (options.maxPoolQueue > 0 && pool && pool.numPendingAcquires() >= options.maxPoolQueue) {
        reply.header('retry-after', String(RETRY_AFTER_SECONDS));
        shed(request, OVERLOADED_MESSAGE, 'pool_queue');
      }
      if (request.routeOptions.config.upload) {
        if (uploads >= options.maxConcurrentUploads) {
          reply.header('retry-after', String(RETRY_AFTER_SECONDS));
          shed(request, UPLOADS_BUSY_MESSAGE, 'uploads');
        }
        uploads += 1;
        holdingUpload.add(request);
      }
    });
    // Whichever way the upload ends: answered (errors included) or the client went away.
    app.addHook('onResponse', releaseUpload);
    app.addHook('onRequestAbort', releaseUpload);
  },
  { name: 'load-shedding' },
);
