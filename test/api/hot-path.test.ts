import { consumeRateLimit } from '../../engine/rate-limit/rate-limiter';
import { useTestApp } from '../support/use-test-app';

/**
 * Item 5 of issue 13: an authenticated read costs two database round trips once its credentials are
 * cached: the rate-limit upsert, and the read with its audit record in the same statement. The record
 * is there when the reply is.
 */
describe('hot path: round trips of an authenticated read', () => {
  const h = useTestApp();

  async function statementsOf(run: () => Promise<void>): Promise<string[]> {
    const statements: string[] = [];
    const listener = (query: { sql: string }) => statements.push(query.sql);
    h.db.on('query', listener);
    try {
      await run();
    } finally {
      h.db.off('query', listener);
    }
    return statements;
  }

  test('GET by id: the rate-limit upsert, then the read that writes its VIEW record', async () => {
    const created = await h.call('POST', '/v2/portfolios', { name: 'Hot', securities: [] });
    expect(created.statusCode).toBe(200);
    const id = created.json().portfolio.id as string;
    // The first request resolves the credentials; later ones find them in the cache.
    expect((await h.call('GET', `/v2/portfolios/${id}`)).statusCode).toBe(200);

    const statements = await statementsOf(async () => {
      const res = await h.call('GET', `/v2/portfolios/${id}`);
      expect(res.statusCode).toBe(200);
    });
    expect(statements).toHaveLength(2);
    expect(statements[0]).toMatch(/^INSERT INTO rate_limit_windows/);
    expect(statements[1]).toMatch(/^WITH found AS .*INSERT INTO audit_logs/s);
    const views = await h.db('audit_logs').where({ entity_id: id, operation: 'VIEW' });
    expect(views).toHaveLength(2);
    expect(views[1]).toMatchObject({
      activity: 'Viewed portfolio Hot',
      entity_type: 'Portfolio',
      entity_name: 'Hot',
      workspace: 'main',
      credential_id: h.account.key.account_sid,
    });
  });

  test('a list: the same two statements; its record names the ids on the page, not the look-ahead row', async () => {
    for (const name of ['L1', 'L2', 'L3']) {
      expect((await h.call('POST', '/v2/portfolios', { name, securities: [] })).statusCode).toBe(200);
    }
    const statements = await statementsOf(async () => {
      const res = await h.call('GET', '/v2/portfolios?page_size=2');
      expect(res.statusCode).toBe(200);
      expect(res.json().portfolios).toHaveLength(2);
    });
    expect(statements).toHaveLength(2);
    const [record] = await h
      .db('audit_logs')
      .where({ operation: 'VIEW', entity_type: 'Portfolio' })
      .whereNull('entity_id')
      .orderBy('created_at', 'desc')
      .limit(1);
    const listed = (await h.call('GET', '/v2/portfolios?page_size=2')).json().portfolios as Array<{
      id: string;
    }>;
    expect(record).toMatchObject({ activity: 'Listed 2 portfolio records', workspace: 'main' });
    expect(record.viewed_ids).toEqual(listed.map((p) => p.id));
  });

  test('a GET of an id that is not there writes no successful VIEW record, only the failed one', async () => {
    const missing = 'port_0000000000000000000000000';
    const res = await h.call('GET', `/v2/portfolios/${missing}`);
    expect(res.statusCode).toBe(404);
    const records = await h.db('audit_logs').where({ entity_id: missing, operation: 'VIEW' });
    expect(records.map((r) => [r.status, r.activity])).toEqual([
      ['ERROR', `Failed GET /v2/portfolios/${missing} (404)`],
    ]);
  });

  test('concurrent rate-limit charges are one upsert, and each request still gets its own exact count', async () => {
    const now = Date.now();
    const states = await (async () => {
      let result: Awaited<ReturnType<typeof consumeRateLimit>>[] = [];
      const statements = await statementsOf(async () => {
        result = await Promise.all([
          ...Array.from({ length: 6 }, () => consumeRateLimit(h.db, 'cred:batch-a', 4, now)),
          ...Array.from({ length: 2 }, () => consumeRateLimit(h.db, 'cred:batch-b', 4, now)),
        ]);
      });
      expect(statements).toHaveLength(1);
      return result;
    })();
    expect(states.slice(0, 6).map((s) => [s.remaining, s.limited])).toEqual([
      [3, false],
      [2, false],
      [1, false],
      [0, false],
      [0, true],
      [0, true],
    ]);
    expect(states.slice(6).map((s) => s.remaining)).toEqual([3, 2]);
    // The next turn continues from the stored count.
    expect((await consumeRateLimit(h.db, 'cred:batch-b', 4, now)).remaining).toBe(1);
  });
});
