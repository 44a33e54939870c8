import { Readable, Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';

/**
 * Request bodies' Content-Encoding, one rule for every door that takes them: the HTTP API
 * (api/http/request-encoding.ts) and a worker step's SDK channel. `gzip` is inflated, with the
 * inflated size held to a limit as it streams (a zip-bomb guard: a few kilobytes of gzip can
 * inflate to gigabytes), never after buffering it; any other encoding is refused.
 */

export class RequestBodyError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Refuses a Content-Encoding other than gzip (none at all is fine). */
export function checkContentEncoding(encoding: string | undefined): void {
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'gzip') {
    throw new RequestBodyError(400, 'UNSUPPORTED_CONTENT_ENCODING', 'unsupported Content-Encoding');
  }
}

/** Counts bytes on their way to the gunzip stream (the bytes received on the wire). */
class ByteCounter extends Transform {
  bytes = 0;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    done(null, chunk);
  }
}

/**
 * The inflated stream of a gzip body, failing with a RequestBodyError (413 past `maxBytes`
 * inflated, 400 when it is not gzip); `encodedBytes` counts what came in.
 */
export function inflateGzip(
  payload: NodeJS.ReadableStream,
  maxBytes: number,
): { stream: Readable; encodedBytes: () => number } {
  const counter = new ByteCounter();
  const gunzip = createGunzip();
  let inflated = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      inflated += chunk.length;
      if (inflated > maxBytes) {
        done(
          new RequestBodyError(
            413,
            'PAYLOAD_TOO_LARGE',
            `Request body exceeds the maximum payload size of ${maxBytes} bytes once inflated.`,
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
  return { stream: limited, encodedBytes: () => counter.bytes };
}

/** A whole body as it was sent (with its Content-Encoding), decoded: the same rule, buffered. */
export async function decodeBody(
  raw: Buffer,
  encoding: string | undefined,
  maxBytes: number,
): Promise<Buffer> {
  checkContentEncoding(encoding);
  if (encoding === undefined) {
    if (raw.length > maxBytes) {
      throw new RequestBodyError(
        413,
        'PAYLOAD_TOO_LARGE',
        `Request body exceeds the maximum payload size of ${maxBytes} bytes.`,
      );
    }
    return raw;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of inflateGzip(Readable.from([raw]), maxBytes).stream) {
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
