import { consumeRateLimit } from '../../engine/platform/rate-limiter';
import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/**
 * Item 5 of issue 13: an authenticated read costs two database round trips once its credentials are
 * cached: the rate-limit upsert, and the read with its audit record in the same statement. The record
 * is there when the reply is. Reads by id of one event-loop turn share that statement (one commit
 * for all), each matched to its own key.
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
    expect(statements[1]).toMatch(/^WITH req AS .*INSERT INTO audit_logs/s);
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

  test('concurrent GETs by id of two accounts are one statement, and each gets only its own row and record', async () => {
    const other = await createTestAccount(h.db);
    const mine = (await h.call('POST', '/v2/portfolios', { name: 'Mine', securities: [] })).json().portfolio
      .id;
    const theirs = (await h.call('POST', '/v2/portfolios', { name: 'Theirs', securities: [] }, other)).json()
      .portfolio.id;
    // Warm both credential caches, then read concurrently: mine, theirs, mine as them, missing.
    await h.call('GET', `/v2/portfolios/${mine}`);
    await h.call('GET', `/v2/portfolios/${theirs}`, undefined, other);
    const missing = 'port_0000000000000000000000001';
    let responses: Awaited<ReturnType<typeof h.call>>[] = [];
    const statements = await statementsOf(async () => {
      responses = await Promise.all([
        h.call('GET', `/v2/portfolios/${mine}`),
        h.call('GET', `/v2/portfolios/${theirs}`, undefined, other),
        h.call('GET', `/v2/portfolios/${mine}`, undefined, other),
        h.call('GET', `/v2/portfolios/${theirs}`),
        h.call('GET', `/v2/portfolios/${missing}`),
        h.call('GET', `/v2/portfolios/${mine}?workspace=elsewhere`),
      ]);
    });
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 404, 404, 404, 404]);
    expect(responses[0]!.json().portfolio).toMatchObject({ id: mine, name: 'Mine' });
    expect(responses[1]!.json().portfolio).toMatchObject({ id: theirs, name: 'Theirs' });
    expect(statements.filter((sql) => /^WITH req AS/.test(sql))).toHaveLength(1);
    // One successful VIEW each for the two reads that found their row, in the reader's account.
    const views = await h
      .db('audit_logs')
      .whereIn('entity_id', [mine, theirs])
      .where({ operation: 'VIEW', status: 'SUCCESS' })
      .whereLike('activity', 'Viewed %');
    expect(views.map((v) => [v.account_id, v.entity_id, v.activity, v.credential_id]).sort()).toEqual(
      [
        [h.account.accountId, mine, 'Viewed portfolio Mine', h.account.key.account_sid],
        [h.account.accountId, mine, 'Viewed portfolio Mine', h.account.key.account_sid],
        [other.accountId, theirs, 'Viewed portfolio Theirs', other.key.account_sid],
        [other.accountId, theirs, 'Viewed portfolio Theirs', other.key.account_sid],
      ].sort(),
    );
  });

  test('a read whose record the database refuses fails alone: the others of its batch answer', async () => {
    const id = (await h.call('POST', '/v2/portfolios', { name: 'Batch', securities: [] })).json().portfolio
      .id;
    await h.call('GET', `/v2/portfolios/${id}`);
    const read = (userAgent: string) =>
      h.app.inject({
        method: 'GET',
        url: `/v2/portfolios/${id}`,
        headers: { authorization: h.account.bearer, 'user-agent': userAgent },
      });
    // A constraint that refuses one read's record fails the batch statement; the batch is then
    // retried read by read, so only that read fails.
    await h.db.raw(
      `ALTER TABLE audit_logs ADD CONSTRAINT refuse_one CHECK (user_agent IS DISTINCT FROM 'refuse-me')`,
    );
    let responses: Awaited<ReturnType<typeof read>>[] = [];
    try {
      const statements = await statementsOf(async () => {
        responses = await Promise.all([read('fine/1'), read('refuse-me'), read('fine/2')]);
      });
      expect(statements.filter((sql) => /^WITH req AS/.test(sql))).toHaveLength(1);
      expect(statements.filter((sql) => /^WITH found AS/.test(sql))).toHaveLength(3);
    } finally {
      await h.db.raw('ALTER TABLE audit_logs DROP CONSTRAINT refuse_one');
    }
    expect(responses.map((r) => r.statusCode)).toEqual([200, 500, 200]);
    const agents = (
      await h.db('audit_logs').where({ entity_id: id, operation: 'VIEW', status: 'SUCCESS' })
    ).map((r) => r.user_agent);
    expect(agents).toEqual(expect.arrayContaining(['fine/1', 'fine/2']));
    expect(agents).not.toContain('refuse-me');
  });

  test('a NUL in the user agent (which PostgreSQL text cannot hold) is dropped from the record, not a 500', async () => {
    const id = (await h.call('POST', '/v2/portfolios', { name: 'Nul', securities: [] })).json().portfolio.id;
    const res = await h.app.inject({
      method: 'GET',
      url: `/v2/portfolios/${id}`,
      headers: { authorization: h.account.bearer, 'user-agent': 'bad\u0000agent' },
    });
    expect(res.statusCode).toBe(200);
    const [record] = await h.db('audit_logs').where({ entity_id: id, operation: 'VIEW', status: 'SUCCESS' });
    expect(record.user_agent).toBe('badagent');
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
