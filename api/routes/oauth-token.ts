import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { signIn, signOut } from '../../engine/identity/oauth-sessions';
import type { Database } from '../../engine/platform/database';
import { InvalidInput } from '../../engine/platform/errors';
import { errorResponses } from '../schemas/common';

const TokenRequest = Type.Object({
  grant_type: Type.String({
    enum: ['client_credentials'],
    'x-message': 'unsupported_grant_type: only client_credentials is supported.',
    description: 'Must be `client_credentials`.',
  }),
  client_id: Type.Optional(Type.String()),
  client_secret: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String({ description: 'Ignored: a token carries its client user permissions.' })),
});

/** Client credentials may also come as HTTP Basic `client_id:client_secret` (RFC 6749 §2.3.1). */
function basicCredentials(header: string | undefined): { id: string; secret: string } | null {
  if (!header?.toLowerCase().startsWith('basic ')) return null;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return null;
  return {
    id: decodeURIComponent(decoded.slice(0, colon)),
    secret: decodeURIComponent(decoded.slice(colon + 1)),
  };
}

function clientCredentials(
  header: string | undefined,
  body: { client_id?: string; client_secret?: string },
): { id: string; secret: string } {
  const basic = basicCredentials(header);
  const id = basic?.id ?? body.client_id;
  const secret = basic?.secret ?? body.client_secret;
  if (!id || !secret) throw new InvalidInput('invalid_request: client_id and client_secret are required.');
  return { id, secret };
}

function context(request: FastifyRequest) {
  const userAgent = request.headers['user-agent'] ?? null;
  return { source: 'API' as const, ip: request.ip, userAgent };
}

/** Extension: OAuth 2.0 client-credentials token endpoint issuing bearer access tokens (1 hour). */
const oauthTokenRoutes: FastifyPluginAsyncTypebox<{ db: Database }> = async (app, { db }) => {
  // RFC 6749 token requests are form-encoded; JSON is accepted too.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    },
  );

  app.post(
    '/oauth/token',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['Authentication (extension)'],
        summary: 'Issue an OAuth 2.0 access token (client credentials grant)',
        description:
          'Extension. Send `grant_type=client_credentials` with `client_id` and `client_secret` in the form body ' +
          'or as HTTP Basic credentials. Use the token as `Authorization: Bearer <access_token>` for one hour. ' +
          'Clients are created with `pas oauth-clients create`.',
        security: [],
        body: TokenRequest,
        response: {
          200: Type.Object({
            access_token: Type.String(),
            token_type: Type.Literal('Bearer'),
            expires_in: Type.Integer(),
          }),
          ...errorResponses(400),
        },
      },
    },
    async (request) => {
      const { id, secret } = clientCredentials(request.headers.authorization, request.body);
      return signIn(db, id, secret, context(request));
    },
  );

  app.post(
    '/oauth/revoke',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['Authentication (extension)'],
        summary: 'Revoke an OAuth 2.0 access token (sign out)',
        description:
          'Extension (RFC 7009). Send `token` with the client credentials as for the token endpoint. ' +
          'Answers 200 whether or not the token existed.',
        security: [],
        body: Type.Object({
          token: Type.String(),
          token_type_hint: Type.Optional(Type.String()),
          client_id: Type.Optional(Type.String()),
          client_secret: Type.Optional(Type.String()),
        }),
        response: { 200: Type.Object({ revoked: Type.Boolean() }), ...errorResponses(400) },
      },
    },
    async (request) => {
      const { id, secret } = clientCredentials(request.headers.authorization, request.body);
      await signOut(db, id, secret, request.body.token, context(request));
      return { revoked: true };
    },
  );
};

export default oauthTokenRoutes;
