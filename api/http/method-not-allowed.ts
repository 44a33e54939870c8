import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

interface KnownPath {
  readonly pattern: RegExp;
  readonly methods: Set<string>;
}

/** `/v2/portfolios/:id` → a RegExp matching one concrete path of that route. */
function routePattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}/?$`);
}

/**
 * HTTP semantics for a known path asked with a method it does not have: 405 with `Allow` naming the
 * methods it has, instead of the 404 of an unknown path. Routes are collected as they are declared,
 * so the answer never drifts from the routes themselves.
 */
export default fp(
  async function methodNotAllowed(app: FastifyInstance) {
    const known = new Map<string, KnownPath>();
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      let entry = known.get(route.url);
      if (!entry) {
        entry = { pattern: routePattern(route.url), methods: new Set() };
        known.set(route.url, entry);
      }
      for (const method of methods) entry.methods.add(method.toUpperCase());
    });

    const allowedMethods = (path: string): string[] => {
      const allowed = new Set<string>();
      for (const entry of known.values()) {
        if (entry.pattern.test(path)) for (const method of entry.methods) allowed.add(method);
      }
      return [...allowed].sort();
    };

    // Answered before the body is read: a method Fastify expects a body for (QUERY) would otherwise
    // be refused for its missing Content-Type before the path is known to lack it.
    /** A path spelled out by a route of its own (no parameter) is that route's, whatever a pattern matches. */
    const staticMethods = (path: string): string[] | null => {
      const entry = known.get(path) ?? known.get(path.replace(/\/$/, ''));
      return entry ? [...entry.methods].sort() : null;
    };

    app.addHook('onRequest', async (request, reply) => {
      const path = request.url.split('?')[0] ?? '';
      let allowed: string[];
      if (request.is404) {
        allowed = staticMethods(path) ?? allowedMethods(path);
      } else {
        // PUT /workflows/worker_executions reaches PUT /workflows/:id; the static path has no PUT.
        const own = request.routeOptions.url?.includes(':') ? staticMethods(path) : null;
        if (!own || own.includes(request.method)) return;
        allowed = own;
      }
      if (allowed.length === 0) return;
      return reply
        .code(405)
        .header('allow', allowed.join(', '))
        .send({
          code: 405,
          message: `Method ${request.method} is not allowed on ${path}: use ${allowed.join(', ')}.`,
        });
    });
  },
  { name: 'method-not-allowed' },
);
