import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/platform/database';
import { fileBody, fileBytes, viewFileByUid } from '../../engine/files/file-store';
import { errorResponses } from '../schemas/common';
import { acceptsGzip } from '../console/assets';

/**
 * Content types worth compressing: text, JSON and XML, which shrink several times over. The rest
 * (images, archives, office documents, octet-stream) is mostly compressed already.
 */
const TEXTUAL =
  /^text\/|[/+](?:json|xml)(?:;|$)|^application\/(?:javascript|ecmascript|x-ndjson|csv|sql|yaml|x-yaml|toml)(?:;|$)/i;

/** `filename*` of RFC 6266 / 5987: any name, safely, in a header. */
function contentDisposition(name: string): string {
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `inline; filename*=UTF-8''${encoded}`;
}

/**
 * `GET /file/<uid>`, the `url` of a file (outside `/v2`, as the interface gives it): the raw bytes
 * with the file's content type, streamed from the database, to a caller of the file's account.
 */
const fileContentRoutes: FastifyPluginAsyncTypebox<{
  db: Database;
  maxPayloadBytes: number;
  publicUrl: string;
  /** zlib level of a compressed download (RESPONSE_GZIP_LEVEL). */
  gzipLevel: number;
}> = async (app, { db, gzipLevel }) => {
  app.get(
    '/file/:uid',
    {
      // Never the response compressor: it takes content whose first bytes look like gzip or zlib
      // (a .gz file; text that starts "X<tab>") for an encoded body and labels it so, and the
      // client then decodes what it should have kept. Text is compressed below, every byte of it.
      compress: false,
      config: { auditEntity: 'File' },
      schema: {
        tags: ['Files'],
        summary: 'The raw content of a file (its url); credentials of the file’s account',
        params: Type.Object({ uid: Type.String() }),
        response: {
          // Streamed, never serialised: the schema documents the body.
          200: Type.Unsafe<Readable>({
            type: 'string',
            format: 'binary',
            description: 'The bytes, with the file’s content type.',
          }),
          ...errorResponses(404),
        },
      },
    },
    async (request, reply) => {
      const record = await viewFileByUid(db, request.actor, request.params.uid);
      const body = fileBody(record);
      reply
        .type(body.content_type)
        .header('content-disposition', contentDisposition(record.name))
        // User content on the API's origin: never sniffed into HTML, never run as a page (an SVG
        // can carry script).
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox");
      const bytes = Readable.from(fileBytes(db, record), { objectMode: false });
      if (!TEXTUAL.test(body.content_type)) return reply.header('content-length', body.size).send(bytes);
      reply.header('vary', 'Accept-Encoding');
      if (!acceptsGzip(request.headers['accept-encoding'])) {
        return reply.header('content-length', body.size).send(bytes);
      }
      const gzip = createGzip({ level: gzipLevel, chunkSize: 64 * 1024 });
      // A failure of either side destroys the other; Fastify answers the error or ends the response.
      pipeline(bytes, gzip).catch(() => undefined);
      return reply.header('content-encoding', 'gzip').send(gzip);
    },
  );
};

export default fileContentRoutes;
