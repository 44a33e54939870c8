import { useTestApp } from '../support/use-test-app';

describe('errors and response headers', () => {
  const h = useTestApp({
    extraRoutes: (app) => {
      app.get('/v2/test-failure', async () => {
        throw new Error('relation "secret_table" does not exist at /srv/app/engine/store.ts:42');
      });
    },
  });

  test('unknown route → 404 JSON with every service header', async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/v2/no_such_resource',
      headers: { authorization: h.account.bearer },
    });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ code: 404, message: 'Not Found: GET /v2/no_such_resource' });
    for (const header of [
      'x-service-request-id',
      'x-service-request-duration',
      'x-service-rate-limit-allowed',
      'x-service-rate-limit-remaining',
      'x-service-rate-limit-reset',
    ]) {
      expect(res.headers[header]).toBeDefined();
    }
  });

  test('unknown route without credentials is still a 404', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/nowhere' });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe(404);
  });

  test('request ids are unique and durations are numbers', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const res = await h.app.inject({ method: 'GET', url: '/v2/health_check' });
      ids.add(String(res.headers['x-service-request-id']));
      expect(Number(res.headers['x-service-request-duration'])).toBeGreaterThanOrEqual(0);
    }
    expect(ids.size).toBe(20);
    for (const id of ids) expect(id).toMatch(/^req_[A-Za-z0-9]{25}$/);
  });

  test('a 5xx leaks no internals', async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/v2/test-failure',
      headers: { authorization: h.account.bearer },
    });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ code: 500, message: 'Internal Server Error' });
    expect(res.body).not.toMatch(/secret_table|\/srv|store\.ts/);
    expect(res.headers['x-service-request-id']).toBeDefined();
  });

  test('invalid JSON → 400 JSON error', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v2/workspaces',
      headers: { authorization: h.account.bearer, 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message: expect.any(String) });
  });

  test('validation failure → 400 naming the field', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v2/workspaces',
      headers: { authorization: h.account.bearer },
      payload: { description: 'no name' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      code: 400,
      message: 'name is required.',
    });
  });

  test('the OpenAPI document is served and lists the routes', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/v2/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/health_check',
        '/workspaces',
        '/workspaces/{id}',
        '/oauth/token',
        '/workflows/{id}/run',
        '/workflows/worker_executions',
      ]),
    );
    expect(doc.paths['/workspaces'].post.responses['200']).toBeDefined();
    expect(doc.components.securitySchemes.oauth2.flows.clientCredentials.tokenUrl).toBe('/v2/oauth/token');
    const page = await h.app.inject({ method: 'GET', url: '/v2/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
  });
});

describe('methods a known path does not have', () => {
  const h = useTestApp();

  test.each([
    ['TRACE', '/v2/portfolios', 'GET, HEAD, POST'],
    ['PATCH', '/v2/portfolios/port_aaaaaaaaaaaaaaaaaaaaaaaaa', 'DELETE, GET, HEAD, PUT'],
    ['DELETE', '/v2/health_check', 'GET, HEAD'],
    ['GET', '/v2/calculations/stress_test', 'POST'],
    ['QUERY', '/v2/portfolios/port_aaaaaaaaaaaaaaaaaaaaaaaaa', 'DELETE, GET, HEAD, PUT'],
  ])('%s %s → 405 with Allow: %s', async (method, url, allow) => {
    const res = await h.app.inject({
      method: method as 'GET',
      url,
      headers: { authorization: h.account.bearer },
    });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe(allow);
    expect(res.json()).toEqual({ code: 405, message: expect.stringContaining(allow) });
  });

  test('an unknown path stays a 404', async () => {
    const res = await h.app.inject({ method: 'TRACE', url: '/v2/nothing_here' });
    expect(res.statusCode).toBe(404);
  });
});

describe('a static path shadowed by a parameter route', () => {
  const h = useTestApp();

  test('PUT /v2/workflows/worker_executions → 405 (the static path has only GET), not the :id route', async () => {
    const res = await h.app.inject({
      method: 'PUT',
      url: '/v2/workflows/worker_executions',
      headers: { authorization: h.account.bearer, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });
});

describe('methods on the pages outside /v2', () => {
  const h = useTestApp();

  test('QUERY /file/:uid without a Content-Type → 405 with Allow', async () => {
    const res = await h.app.inject({ method: 'QUERY' as 'GET', url: '/file/abc' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });

  test('OPTIONS /v2/workflows/worker_executions → Allow names the static path’s methods', async () => {
    const res = await h.app.inject({ method: 'OPTIONS', url: '/v2/workflows/worker_executions' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });
});
