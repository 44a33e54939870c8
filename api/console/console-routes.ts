/**
 * The web console at /console: one page (its script and style built from api/console/ui), and its
 * session. The page talks to the same /v2 API as every client, authenticated by the session's
 * cookie instead of an Authorization header (api/http/authentication.ts), with the session's CSRF
 * token on every change.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  CONSOLE_ABSOLUTE_SECONDS,
  type ConsoleSession,
  closeConsoleSession,
  openConsoleSession,
} from '../../engine/identity/console-sessions';
import type { Database } from '../../engine/platform/database';
import { InvalidInput, NotFound } from '../../engine/platform/errors';
import { CONSOLE_COOKIE, cookieValue } from '../http/authentication';
import { RunChangeFeed } from '../../engine/workflows/run-changes';
import { acceptsGzip, consoleBundle } from './assets';

/** A live view's stream sends a comment this often, so idle proxies keep it open. */
const HEARTBEAT_MS = 15_000;

/**
 * Only the console's own script runs (no inline script, no eval); style sheets come from this
 * origin only (the code editor's through constructed style sheets). Style attributes are allowed,
 * because the code editor positions its lines, gutters and cursor with them; they cannot run code.
 * It talks only to this origin and cannot be framed. Everything a script of a workflow produced is
 * put on the page as text, so an escaping mistake could not run anyway.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; " +
  "img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; " +
  "frame-ancestors 'none'";

const SignIn = Type.Object(
  {
    sid: Type.Optional(Type.String({ maxLength: 200 })),
    token: Type.Optional(Type.String({ maxLength: 500 })),
    client_id: Type.Optional(Type.String({ maxLength: 200 })),
    client_secret: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);

function context(request: FastifyRequest) {
  return { ip: request.ip, userAgent: request.headers['user-agent'] ?? null };
}

function sessionView(session: ConsoleSession, temporalUiUrl: string | null) {
  const { principal } = session;
  return {
    user: {
      id: principal.userId,
      email: principal.userEmail,
      account_id: principal.accountId,
      is_owner: principal.isOwner,
      credential: principal.credentialId,
    },
    csrf_token: session.csrfToken,
    expires_at: session.expiresAt.toISOString(),
    idle_expires_at: session.idleExpiresAt.toISOString(),
    temporal_ui_url: temporalUiUrl,
  };
}

function cookie(request: FastifyRequest, value: string, maxAge: number): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${CONSOLE_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure}`;
}

function page(reply: FastifyReply): FastifyReply {
  return reply
    .header('Content-Security-Policy', CONSOLE_CSP)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'same-origin')
    .header('X-Frame-Options', 'DENY');
}

const consoleRoutes: FastifyPluginAsyncTypebox<{ db: Database; temporalUiUrl: string | null }> = async (
  app,
  { db, temporalUiUrl },
) => {
  const sendPage = async (_request: FastifyRequest, reply: FastifyReply) => {
    const { html } = await consoleBundle();
    return page(reply).type('text/html; charset=utf-8').header('Cache-Control', 'no-store').send(html);
  };
  // The page is public (it holds nothing); what it shows comes from the API behind the session.
  app.get('/console', { config: { auth: 'optional' } }, sendPage);
  app.get('/console/', { config: { auth: 'optional' } }, sendPage);

  app.get(
    '/console/assets/:name',
    {
      config: { auth: 'none' },
      // Encoded here, from the bundle's own gzip (the response compressor reads `*, gzip;q=0` as gzip).
      compress: false,
      schema: { params: Type.Object({ name: Type.String({ maxLength: 100 }) }) },
    },
    async (request, reply) => {
      const asset = (await consoleBundle()).assets.get(request.params.name);
      if (!asset) throw new NotFound('No such console asset.');
      page(reply)
        .type(asset.type)
        .header('Cache-Control', 'public, max-age=31536000, immutable')
        .header('Vary', 'Accept-Encoding');
      // Gzipped once, when the bundle was built.
      if (acceptsGzip(request.headers['accept-encoding'])) {
        return reply.header('Content-Encoding', 'gzip').send(asset.gzipped);
      }
      return reply.send(asset.body);
    },
  );

  app.post(
    '/console/session',
    { config: { auth: 'none' }, schema: { body: SignIn } },
    async (request, reply) => {
      const { sid, token, client_id: clientId, client_secret: clientSecret } = request.body;
      const byKey = sid !== undefined || token !== undefined;
      const byClient = clientId !== undefined || clientSecret !== undefined;
      if (byKey === byClient) {
        throw new InvalidInput('Sign in with sid and token (an API key), or client_id and client_secret.');
      }
      if (byKey && (!sid || !token)) throw new InvalidInput('Both sid and token are required.');
      if (byClient && (!clientId || !clientSecret)) {
        throw new InvalidInput('Both client_id and client_secret are required.');
      }
      const opened = await openConsoleSession(
        db,
        byKey ? { sid: sid!, token: token! } : { client_id: clientId!, client_secret: clientSecret! },
        context(request),
      );
      return reply
        .header('Set-Cookie', cookie(request, opened.token, CONSOLE_ABSOLUTE_SECONDS))
        .header('Cache-Control', 'no-store')
        .send({ signed_in: true, ...sessionView(opened.session, temporalUiUrl) });
    },
  );

  // Whether this browser is signed in: 200 either way (the page asks on every load, and a 401
  // would be a console error in every visitor's browser).
  app.get('/console/session', { config: { auth: 'optional' } }, async (request, reply) => {
    const session = request.consoleSession;
    reply.header('Cache-Control', 'no-store');
    return session ? { signed_in: true, ...sessionView(session, temporalUiUrl) } : { signed_in: false };
  });

  // Live views: server-sent events, one-way from server to browser, which EventSource reconnects
  // on its own and which carry the session cookie (same origin). Each event says which run changed
  // (or "resync"); the page reads it again through the API.
  const feed = new RunChangeFeed(db, (message, error) => app.log.warn({ err: error }, message));
  const streams = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of [...streams]) end();
    await feed.close();
  });
  app.get('/console/events', { config: { auth: 'credentials' } }, async (request, reply) => {
    if (!request.consoleSession) throw new InvalidInput('Live updates are for a console session.');
    const accountId = request.principal!.accountId;
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
      'X-Content-Type-Options': 'nosniff',
    });
    raw.write('retry: 3000\n\n');
    const unsubscribe = feed.subscribe(accountId, (change) => {
      raw.write(
        change.kind === 'run'
          ? `event: run\ndata: ${JSON.stringify({ id: change.executionId })}\n\n`
          : 'event: resync\ndata: {}\n\n',
      );
    });
    const heartbeat = setInterval(() => raw.write(': alive\n\n'), HEARTBEAT_MS);
    const end = () => {
      clearInterval(heartbeat);
      unsubscribe();
      streams.delete(end);
      if (!raw.writableEnded) raw.end();
    };
    streams.add(end);
    request.raw.on('close', end);
  });

  app.delete('/console/session', { config: { auth: 'credentials' } }, async (request, reply) => {
    const session = request.consoleSession;
    const token = cookieValue(request.headers.cookie, CONSOLE_COOKIE);
    if (!session || token === undefined) {
      throw new InvalidInput('Sign-out ends a console session: this request has none.');
    }
    await closeConsoleSession(db, token, session, context(request));
    return reply.header('Set-Cookie', cookie(request, '', 0)).send({ signed_out: true });
  });
};

export default consoleRoutes;
