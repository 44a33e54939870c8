import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/platform/database';
import { fileBody, fileBytes, viewFileByUid } from '../../engine/files/file-store';
import { errorResponses } from '../schemas/common';

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
}> = async (app, { db }) => {
  app.get(
    '/file/:uid',
    {
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
      return (
        reply
          .type(body.content_type)
          .header('content-length', body.size)
          .header('content-disposition', contentDisposition(record.name))
          // User content on the API's origin: never sniffed into HTML, never run as a page (an SVG
          // can carry script).
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', "default-src 'none'; sandbox")
          .send(Readable.from(fileBytes(db, record), { objectMode: false }))
      );
    },
  );
};

export default fileContentRoutes;
