import { Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

class RequestBodyError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Counts bytes on their way to the gunzip stream, so Fastify can check Content-Length against them. */
class ByteCounter extends Transform {
  bytes = 0;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    done(null, chunk);
  }
}

/**
 * Request bodies with `Content-Encoding: gzip` are inflated before parsing; any other encoding is
 * refused. The inflated size is held to the maximum payload size as it streams (a zip-bomb guard:
 * a few kilobytes of gzip can inflate to gigabytes), never after buffering it.
 */
export default fp(
  async function requestEncoding(app: FastifyInstance, options: { maxPayloadBytes: number }) {
    app.addHook('onRequest', async (request) => {
      const encoding = request.headers['content-encoding'];
      if (encoding !== undefined && encoding.trim().toLowerCase() !== 'gzip') {
        throw new RequestBodyError(400, 'UNSUPPORTED_CONTENT_ENCODING', 'unsupported Content-Encoding');
      }
    });

    app.addHook('preParsing', async (request, _reply, payload) => {
      if (request.headers['content-encoding'] === undefined) return payload;
      const counter = new ByteCounter();
      const gunzip = createGunzip();
      let inflated = 0;
      const limited = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          inflated += chunk.length;
          if (inflated > options.maxPayloadBytes) {
            done(
              new RequestBodyError(
                413,
                'PAYLOAD_TOO_LARGE',
                `Request body exceeds the maximum payload size of ${options.maxPayloadBytes} bytes once inflated.`,
              ),
            );
            return;
          }
          done(null, chunk);
        },
      });
      const fail = (error: Error) => {
        const wrapped =
          error instanceof RequestBodyError
            ? error
            : new RequestBodyError(400, 'MALFORMED_COMPRESSED_BODY', 'malformed compressed request body');
        limited.destroy(wrapped);
      };
      payload.on('error', fail);
      gunzip.on('error', fail);
      payload.pipe(counter).pipe(gunzip).pipe(limited);
      // Fastify compares Content-Length with the bytes received on the wire, not the inflated ones.
      Object.defineProperty(limited, 'receivedEncodedLength', { get: () => counter.bytes });
      return limited;
    });
  },
  { name: 'request-encoding' },
);
