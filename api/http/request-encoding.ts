import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { checkContentEncoding, inflateGzip } from '../../engine/platform/body-encoding';

/**
 * Request bodies with `Content-Encoding: gzip` are inflated before parsing; any other encoding is
 * refused. The rule and the streaming inflation (held to the maximum payload size as it streams)
 * are engine/platform/body-encoding.ts, shared with a worker step's SDK channel.
 */
export default fp(
  async function requestEncoding(app: FastifyInstance, options: { maxPayloadBytes: number }) {
    app.addHook('onRequest', async (request) => {
      checkContentEncoding(request.headers['content-encoding']);
    });

    app.addHook('preParsing', async (request, _reply, payload) => {
      if (request.headers['content-encoding'] === undefined) return payload;
      const { stream, encodedBytes } = inflateGzip(payload, options.maxPayloadBytes);
      // Fastify compares Content-Length with the bytes received on the wire, not the inflated ones.
      Object.defineProperty(stream, 'receivedEncodedLength', { get: encodedBytes });
      return stream;
    });
  },
  { name: 'request-encoding' },
);
