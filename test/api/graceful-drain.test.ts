import { DRAINING_MESSAGE } from '../../api/http/graceful-drain';
import { useTestApp } from '../support/use-test-app';

/**
 * A stopping API leaves the load balancer before it stops listening (api/http/graceful-drain.ts):
 * requests a proxy may resend answer 503 unprocessed, writes are still served, every answer closes
 * its connection, and the drain ends once requests stop arriving. Through nginx in
 * test/deploy/topology.test.ts (a rolling restart under load fails no request).
 */
describe('graceful drain', () => {
  const c = useTestApp();

  test('before draining: answers as usual and keeps the connection', async () => {
    const res = await c.call('GET', '/v2/workspaces');
    expect(res.statusCode).toBe(200);
    expect(res.headers.connection).not.toBe('close');
  });

  test('while draining: GET, PUT and DELETE answer 503 unprocessed, POST is served; every answer closes', async () => {
    const created = await c.call('POST', '/v2/workspaces', { name: 'before-drain' });
    expect(created.statusCode).toBe(200);
    const started = Date.now();
    const drained = c.app.drain({ quietMs: 300, maxMs: 5_000 });

    for (const [method, url, payload] of [
      ['GET', '/v2/workspaces', undefined],
      ['GET', '/v2/health_check', undefined],
      ['PUT', '/v2/workspaces/before-drain', { description: 'changed' }],
      ['DELETE', '/v2/workspaces/before-drain', undefined],
    ] as const) {
      const res = await c.call(method, url, payload);
      expect({ method, url, status: res.statusCode, body: res.json() }).toEqual({
        method,
        url,
        status: 503,
        body: { code: 503, message: DRAINING_MESSAGE },
      });
      expect(res.headers['retry-after']).toBe('1');
      expect(res.headers.connection).toBe('close');
    }
    const lastSent = Date.now();
    const posted = await c.call('POST', '/v2/workspaces', { name: 'during-drain' });
    expect(posted.statusCode).toBe(200);
    expect(posted.headers.connection).toBe('close');

    await drained;
    // Quiet for 300 ms after the last request, not before.
    expect(Date.now() - lastSent).toBeGreaterThanOrEqual(300);
    expect(Date.now() - started).toBeLessThan(5_000);
    // Nothing the 503s refused happened: the workspace is there, unchanged.
    const row = await c
      .db('workspaces')
      .where({ account_id: c.account.accountId, name: 'before-drain' })
      .first();
    expect(row).toBeDefined();
    expect(row.description ?? null).toBe(created.json().workspace.description ?? null);
  });
});

describe('graceful drain with requests arriving all the time', () => {
  const c = useTestApp();

  test('ends after maxMs, and a second call answers the same drain', async () => {
    let stop = false;
    const traffic = (async () => {
      for (let n = 0; !stop; n++) {
        const res = await c.call('POST', '/v2/workspaces', { name: `busy-${n}` });
        expect(res.statusCode).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    const drained = c.app.drain({ quietMs: 300, maxMs: 1_000 });
    expect(c.app.drain()).toBe(drained);
    await drained;
    stop = true;
    await traffic;
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
