import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

describe('rate limit per account SID', () => {
  const h = useTestApp({ rateLimitPerMinute: 5 });

  test('headers count down, then 429 with the headers still right', async () => {
    const account = await createTestAccount(h.db);
    const other = await createTestAccount(h.db);
    // Start well inside a one-minute window so the count cannot roll over mid-test.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_100 - intoMinute));
    const remaining: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await h.app.inject({
        method: 'GET',
        url: '/v2/workspaces',
        headers: { authorization: account.bearer },
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-service-rate-limit-allowed']).toBe('5');
      const reset = Number(res.headers['x-service-rate-limit-reset']);
      expect(reset).toBeGreaterThanOrEqual(1);
      expect(reset).toBeLessThanOrEqual(60);
      remaining.push(Number(res.headers['x-service-rate-limit-remaining']));
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);
    const limited = await h.app.inject({
      method: 'GET',
      url: '/v2/workspaces',
      headers: { authorization: account.bearer },
    });
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({
      code: 429,
      message: 'Too Many Requests: rate limit exceeded, retry with exponential backoff.',
    });
    expect(limited.headers['x-service-rate-limit-allowed']).toBe('5');
    expect(limited.headers['x-service-rate-limit-remaining']).toBe('0');
    expect(Number(limited.headers['x-service-rate-limit-reset'])).toBeGreaterThanOrEqual(1);
    expect(limited.headers['retry-after']).toBe(limited.headers['x-service-rate-limit-reset']);
    expect(limited.headers['x-service-request-id']).toBeDefined();

    // Another SID has its own budget.
    const res = await h.app.inject({
      method: 'GET',
      url: '/v2/workspaces',
      headers: { authorization: other.bearer },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-service-rate-limit-remaining']).toBe('4');

    // A refused request by an authenticated user is recorded as ERROR in the audit trail.
    const audit = await h.db('audit_logs').where({ credential_id: account.key.account_sid, status: 'ERROR' });
    expect(audit.length).toBeGreaterThanOrEqual(1);
  });
});
