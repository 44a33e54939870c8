import { connectDatabase } from '../../engine/platform/database';
import { consumeRateLimit } from '../../engine/platform/rate-limiter';
import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/**
 * Item 5 of issue 13, and issue 33: an authenticated read costs one database round trip once its
 * credentials are cached and its rate-limit window holds a lease: the read with its audit record in
 * the same statement. The record is there when the reply is. Reads by id of one event-loop turn
 * share that statement (one commit for all), each matched to its own key.
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

  /**
   * Three reads of `url` in one event-loop turn, the middle one with a user agent whose VIEW record a
   * constraint refuses: they go to the database as one batch statement, which fails, and are then
   * read again one by one. Answers the three responses.
   */
  async function batchWithOneRefused(url: string) {
    const read = (userAgent: string) =>
      h.app.inject({
        method: 'GET',
        url,
        headers: { authorization: h.account.bearer, 'user-agent': userAgent },
      });
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
    return responses;
  }

  test('GET by id: one statement, the read that writes its VIEW record (the rate limit draws on its lease)', async () => {
    const created = await h.call('POST', '/v2/portfolios', { name: 'Hot', securities: [] });
    expect(created.statusCode).toBe(200);
    const id = created.json().portfolio.id as string;
    // The first request resolves the credentials; later ones find them in the cache.
    expect((await h.call('GET', `/v2/portfolios/${id}`)).statusCode).toBe(200);

    const statements = await statementsOf(async () => {
      const res = await h.call('GET', `/v2/portfolios/${id}`);
      expect(res.statusCode).toBe(200);
    });
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/^WITH req AS .*INSERT INTO audit_logs/s);
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

  test('a list: the same one statement; its record names the ids on the page, not the look-ahead row', async () => {
    for (const name of ['L1', 'L2', 'L3']) {
      expect((await h.call('POST', '/v2/portfolios', { name, securities: [] })).statusCode).toBe(200);
    }
    const statements = await statementsOf(async () => {
      const res = await h.call('GET', '/v2/portfolios?page_size=2');
      expect(res.statusCode).toBe(200);
      expect(res.json().portfolios).toHaveLength(2);
    });
    expect(statements).toHaveLength(1);
    // The first page in the default order goes through the batch of list-batch.ts.
    expect(statements[0]).toMatch(/^WITH req AS .*INSERT INTO audit_logs/s);
    // PostgreSQL leaves out what a list does not show (the securities): they are not even read.
    expect(statements[0]).toMatch(/body - \$\d+::text\[\] AS body/);
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
    // A later page, or another order, is one statement of its own, just as lean.
    const next = await statementsOf(async () => {
      const res = await h.call(
        'GET',
        '/v2/portfolios?page_size=2&query=' + encodeURIComponent('{"order": ["name"]}'),
      );
      expect(res.statusCode).toBe(200);
    });
    expect(next).toHaveLength(1);
    expect(next[0]).toMatch(/^WITH found AS .*INSERT INTO audit_logs/s);
    expect(next[0]).toMatch(/body - \$\d+::text\[\] as body/);
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
    const responses = await batchWithOneRefused(`/v2/portfolios/${id}`);
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

  test('a rate-limit lease: one upsert counts the request and reserves the next ones, which need no statement', async () => {
    const now = Date.now();
    const stored = async () =>
      Number(
        (
          await h
            .db('rate_limit_windows')
            .where({ bucket: 'cred:lease', window_start: Math.floor(now / 60_000) * 60_000 })
            .first()
        )?.count ?? 0,
      );
    const first = await statementsOf(async () => {
      expect((await consumeRateLimit(h.db, 'cred:lease', 100, now)).remaining).toBe(99);
    });
    expect(first).toHaveLength(1);
    // A quarter of what was left (99) is reserved: 24 positions, stored as used.
    expect(await stored()).toBe(25);
    const remaining: number[] = [];
    const next = await statementsOf(async () => {
      for (let i = 0; i < 24; i++)
        remaining.push((await consumeRateLimit(h.db, 'cred:lease', 100, now)).remaining);
    });
    expect(next).toHaveLength(0);
    expect(remaining).toEqual(Array.from({ length: 24 }, (_, i) => 98 - i));
    // The lease spent, the next request waits for the next upsert (and its count is still exact).
    const after = await statementsOf(async () => {
      expect((await consumeRateLimit(h.db, 'cred:lease', 100, now)).remaining).toBe(74);
    });
    expect(after).toHaveLength(1);
  });

  test('near the limit leases shrink to nothing: every request waits for its count from PostgreSQL', async () => {
    const now = Date.now();
    const counted: Array<[number, boolean, number]> = [];
    for (let i = 0; i < 8; i++) {
      const statements = await statementsOf(async () => {
        const state = await consumeRateLimit(h.db, 'cred:near', 6, now);
        counted.push([state.remaining, state.limited, 0]);
      });
      counted[i]![2] = statements.length;
    }
    // 6 allowed: the first upsert reserves one more (a quarter of the 5 left), then none.
    expect(counted).toEqual([
      [5, false, 1],
      [4, false, 0],
      [3, false, 1],
      [2, false, 1],
      [1, false, 1],
      [0, false, 1],
      [0, true, 1],
      [0, true, 1],
    ]);
  });

  test('two api processes charging one credential share its budget and never let it be passed', async () => {
    // A second connection pool is a second process to the limiter: its own leases, the same table.
    const other = connectDatabase(h.databaseUrl, 2);
    try {
      const now = Date.now();
      const states = [];
      for (let i = 0; i < 30; i++) {
        states.push(await consumeRateLimit(i % 2 === 0 ? h.db : other, 'cred:shared', 20, now));
      }
      const allowed = states.filter((s) => !s.limited).length;
      // Never past the limit; what the other process reserved and did not use yet may be refused early.
      expect(allowed).toBeLessThanOrEqual(20);
      expect(allowed).toBeGreaterThanOrEqual(16);
      // Each allowed request had a position of its own within the limit.
      const positions = states.filter((s) => !s.limited).map((s) => 20 - s.remaining);
      expect(new Set(positions).size).toBe(allowed);
    } finally {
      await other.destroy();
    }
  });

  test('concurrent first pages of lists are one statement; each gets its own account and workspace, and its own record', async () => {
    const other = await createTestAccount(h.db);
    const mine = [];
    for (const name of ['B1', 'B2', 'B3']) {
      mine.push(
        (await h.call('POST', '/v2/portfolios', { name, securities: [] })).json().portfolio.id as string,
      );
    }
    const elsewhere = (
      await h.call('POST', '/v2/portfolios', { name: 'Elsewhere', securities: [], workspace: 'elsewhere' })
    ).json().portfolio.id as string;
    const theirs = (await h.call('POST', '/v2/portfolios', { name: 'Theirs', securities: [] }, other)).json()
      .portfolio.id as string;
    // Warm both credential caches (and rate-limit leases), then list concurrently.
    await h.call('GET', '/v2/workspaces');
    await h.call('GET', '/v2/workspaces', undefined, other);
    const before = new Date(Date.now() - 1);
    let responses: Awaited<ReturnType<typeof h.call>>[] = [];
    const statements = await statementsOf(async () => {
      responses = await Promise.all([
        h.call('GET', '/v2/portfolios?page_size=2'),
        h.call('GET', '/v2/portfolios', undefined, other),
        h.call('GET', '/v2/portfolios?workspace=elsewhere'),
        h.call('GET', '/v2/portfolios?workspace=nowhere'),
      ]);
    });
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    expect(statements.filter((sql) => /^WITH req AS/.test(sql))).toHaveLength(1);
    const [page, theirPage, elsewherePage, empty] = responses.map((r) => r.json());
    expect(page.portfolios.map((p: { id: string }) => p.id)).toEqual([mine[2], mine[1]]);
    expect(page.next_page_token).toEqual(expect.any(String));
    expect(page.portfolios[0]).not.toHaveProperty('securities');
    expect(theirPage.portfolios.map((p: { id: string }) => p.id)).toEqual([theirs]);
    expect(theirPage.next_page_token).toBeNull();
    expect(elsewherePage.portfolios.map((p: { id: string }) => p.id)).toEqual([elsewhere]);
    expect(empty).toEqual({ portfolios: [], next_page_token: null });
    // The next page continues where the batched one stopped.
    const second = await h.call('GET', `/v2/portfolios?page_size=2&page_token=${page.next_page_token}`);
    expect(second.json().portfolios.map((p: { id: string }) => p.id)).toContain(mine[0]);
    // One record per non-empty page, in the reader's account, naming the ids it showed.
    const records = await h
      .db('audit_logs')
      .where({ operation: 'VIEW', entity_type: 'Portfolio' })
      .whereNull('entity_id')
      .where('created_at', '>', before)
      .orderBy('created_at');
    const listed = records
      .filter((r) => /^Listed /.test(r.activity))
      .map((r) => [r.account_id, r.workspace, r.activity, r.viewed_ids, r.credential_id]);
    expect(listed).toEqual(
      expect.arrayContaining([
        [
          h.account.accountId,
          'main',
          'Listed 2 portfolio records',
          [mine[2], mine[1]],
          h.account.key.account_sid,
        ],
        [other.accountId, 'main', 'Listed 1 portfolio records', [theirs], other.key.account_sid],
        [
          h.account.accountId,
          'elsewhere',
          'Listed 1 portfolio records',
          [elsewhere],
          h.account.key.account_sid,
        ],
      ]),
    );
    expect(listed.filter((r) => r[1] === 'nowhere')).toEqual([]);
  });

  test('a batch of lists the database refuses is read again list by list: only the bad one fails', async () => {
    await h.call('POST', '/v2/portfolios', { name: 'Refused', securities: [] });
    await h.call('GET', '/v2/portfolios');
    const responses = await batchWithOneRefused('/v2/portfolios');
    expect(responses.map((r) => r.statusCode)).toEqual([200, 500, 200]);
  });
});
