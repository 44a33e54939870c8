import { useTestApp } from '../support/use-test-app';

/**
 * Real clients (the PyPI `everysk` packages) send `Content-Type: application/json` on every request,
 * including a DELETE or GET with no body. An empty body is no body: bodiless routes work, routes that
 * need a body answer their own 400 naming what is missing, and nothing answers 5xx.
 */
describe('empty bodies with Content-Type: application/json', () => {
  const h = useTestApp();

  type Operation = { method: string; path: string; url: string };

  async function operations(): Promise<Operation[]> {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json() as {
      paths: Record<string, Record<string, unknown>>;
    };
    const result: Operation[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const method of Object.keys(methods)) {
        if (!['get', 'post', 'put', 'delete', 'patch'].includes(method)) continue;
        const url = '/v2' + path.replace(/\{[^}]+\}/g, 'port_emptybodyemptybodyempty1');
        result.push({ method: method.toUpperCase(), path, url });
      }
    }
    return result;
  }

  test('every operation answers without a 5xx and never refuses the empty body itself', async () => {
    const ops = await operations();
    expect(ops.length).toBeGreaterThan(50);
    const failures: string[] = [];
    for (const op of ops) {
      const res = await h.app.inject({
        method: op.method as 'GET',
        url: op.url,
        headers: { authorization: h.account.bearer, 'content-type': 'application/json' },
        payload: '',
      });
      const body = res.headers['content-type']?.toString().includes('json') ? res.json() : null;
      if (res.statusCode >= 500) failures.push(`${op.method} ${op.path}: ${res.statusCode}`);
      if (body && typeof body.message === 'string' && /body is empty/i.test(body.message))
        failures.push(`${op.method} ${op.path}: refused the empty body (${body.message})`);
      if (res.statusCode >= 400 && body && op.path === '/sdk_function') {
        // everysk-lib's SDK layer reads its own error shape (docs/clients.md).
        expect(body).toEqual({ error_message: expect.any(String), error_module: expect.any(String) });
      } else if (res.statusCode >= 400 && body) {
        expect(body).toEqual({ code: res.statusCode, message: expect.any(String) });
      }
    }
    expect(failures).toEqual([]);
  });

  test('a DELETE with Content-Type: application/json and no body deletes', async () => {
    const created = await h.call('POST', '/v2/workspaces', { name: 'emptybody' });
    expect(created.statusCode).toBe(200);
    const res = await h.app.inject({
      method: 'DELETE',
      url: '/v2/workspaces/emptybody',
      headers: { authorization: h.account.bearer, 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ workspace: { deleted: true, name: 'emptybody' } });

    const portfolio = await h.call('POST', '/v2/portfolios', {
      name: 'to delete',
      securities: [{ id: 'a', symbol: 'AAPL', quantity: 1 }],
    });
    expect(portfolio.statusCode).toBe(200);
    const id = portfolio.json().portfolio.id as string;
    const deleted = await h.app.inject({
      method: 'DELETE',
      url: `/v2/portfolios/${id}`,
      headers: {
        authorization: h.account.bearer,
        'content-type': 'application/json',
        'content-length': '0',
      },
    });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json().portfolio).toMatchObject({ deleted: true, id });
  });

  test('a GET with Content-Type: application/json and an empty body reads', async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/v2/workspaces',
      headers: { authorization: h.account.bearer, 'content-type': 'application/json' },
      payload: '',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().workspaces).toEqual(expect.any(Array));
  });

  test('a POST whose body is optional (report share) works with an empty body', async () => {
    const report = await h.call('POST', '/v2/reports', { name: 'r', data: [] });
    expect(report.statusCode).toBe(200);
    const id = report.json().report.id as string;
    const res = await h.app.inject({
      method: 'POST',
      url: `/v2/reports/${id}/share`,
      headers: { authorization: h.account.bearer, 'content-type': 'application/json' },
      payload: '',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().report.shared_url).toEqual(expect.any(String));
  });

  test('a POST that needs a body answers 400 naming the missing field', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v2/workspaces',
      headers: { authorization: h.account.bearer, 'content-type': 'application/json' },
      payload: '',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/name/);
  });

  test('malformed non-empty JSON is still a 400 {code, message}', async () => {
    const res = await h.app.inject({
      method: 'DELETE',
      url: '/v2/workspaces/whatever',
      headers: { authorization: h.account.bearer, 'content-type': 'application/json' },
      payload: '{"x":',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message: 'Request body is not valid JSON.' });
  });
});
