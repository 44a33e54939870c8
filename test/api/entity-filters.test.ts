import { createTestAccount, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/**
 * POST /v2/portfolios/filter and /v2/datastores/filter: the list with its parameters in a JSON body,
 * as the PyPI clients' `filter()` sends them, on the list engine (workspace scoping, page tokens).
 */
describe('entity filters', () => {
  const h = useTestApp();
  const securities = [{ id: 'p1', symbol: 'AAPL', quantity: 1 }];
  let other: TestAccount;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    other = await createTestAccount(h.db);
    const make = async (name: string, extra: object, who?: TestAccount) => {
      const res = await h.call('POST', '/v2/portfolios', { name, securities, ...extra }, who);
      expect(res.statusCode).toBe(200);
      return res.json().portfolio.id as string;
    };
    ids.a = await make('A', { tags: ['alpha', 'core'] });
    // Portfolios take no link_uid through the API (files do); the list engine filters any kind by it.
    await h.db('entities').where({ id: ids.a }).update({ link_uid: 'L1' });
    ids.b = await make('B', { tags: ['alpha'], date: '20221228' });
    ids.c = await make('C', { tags: ['alpha', 'core'], workspace: 'ws2' });
    ids.d = await make('D', { tags: ['alpha', 'core'] }, other);
    const ds = await h.call('POST', '/v2/datastores', { name: 'T', tags: ['rows'], data: [['a'], [1]] });
    ids.ds = ds.json().datastore.id;
  });

  const filter = (path: string, body: object | undefined, who?: TestAccount) =>
    h.call('POST', `/v2/${path}/filter`, body, who);

  test('tags: every tag, in the workspace only, never another account’s; without securities', async () => {
    const res = await filter('portfolios', { tags: ['alpha', 'core'] });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.portfolios.map((p: { id: string }) => p.id)).toEqual([ids.a]);
    expect(body.portfolios[0].securities).toBeUndefined();
    expect(body.next_page_token).toBeNull();
    const ws2 = await filter('portfolios', { tags: 'alpha core', workspace: 'ws2' });
    expect(ws2.json().portfolios.map((p: { id: string }) => p.id)).toEqual([ids.c]);
    const theirs = await filter('portfolios', { tags: ['alpha'] }, other);
    expect(theirs.json().portfolios.map((p: { id: string }) => p.id)).toEqual([ids.d]);
  });

  test('link_uid, alone and with tags; a query text; the date period', async () => {
    const link = await filter('portfolios', { link_uid: 'L1' });
    expect(link.json().portfolios.map((p: { id: string }) => p.id)).toEqual([ids.a]);
    const both = await filter('portfolios', { link_uid: 'L1', tags: ['core'] });
    expect(both.json().portfolios.map((p: { id: string }) => p.id)).toEqual([ids.a]);
    const none = await filter('portfolios', { link_uid: 'L1', tags: ['missing'] });
    expect(none.json().portfolios).toEqual([]);
    const byId = await filter('portfolios', { query: ids.b });
    expect(byId.json().portfolios.map((p: { id: string }) => p.id)).toEqual([ids.b]);
    const dated = await filter('portfolios', { start: '20221201', end: '20221231' });
    expect(dated.json().portfolios.map((p: { id: string }) => p.id)).toEqual([ids.b]);
  });

  test('limit pages with next_page_token; the pages together are the whole list once', async () => {
    const first = await filter('portfolios', { tags: ['alpha'], limit: 1 });
    expect(first.statusCode).toBe(200);
    expect(first.json().portfolios).toHaveLength(1);
    const token = first.json().next_page_token as string;
    expect(typeof token).toBe('string');
    const second = await filter('portfolios', { tags: ['alpha'], limit: 1, page_token: token });
    const seen = [...first.json().portfolios, ...second.json().portfolios].map((p: { id: string }) => p.id);
    expect(seen.sort()).toEqual([ids.a, ids.b].sort());
    expect(second.json().next_page_token).toBeNull();
  });

  test('an empty object is the whole list of the workspace; datastores too', async () => {
    const all = await filter('portfolios', {});
    expect(all.json().portfolios).toHaveLength(2);
    const ds = await filter('datastores', { tags: ['rows'] });
    expect(ds.statusCode).toBe(200);
    expect(ds.json().datastores.map((d: { id: string }) => d.id)).toEqual([ids.ds]);
    expect(ds.json().datastores[0].data).toBeUndefined();
    // The clients send `{}` for a filter without arguments; no body at all is a 400, as the document says.
    const noBody = await filter('datastores', undefined);
    expect(noBody.statusCode).toBe(400);
  });

  test.each([
    [{ limit: 0 }, 'limit'],
    [{ limit: 101 }, 'limit'],
    [{ tags: ['a'], query: 'x' }, 'query does not combine'],
    [{ start: '2022-01-01' }, 'start'],
    [{ page_token: 'garbage' }, 'page_token'],
    [{ tags: 5 }, 'tags'],
    [{ limit: 2, page_size: 3 }, 'limit and page_size'],
  ])('bad input %j → 400 naming %s, and lists nothing', async (body, word) => {
    const views = () =>
      h.db('audit_logs').where({ operation: 'VIEW', status: 'SUCCESS' }).count({ n: '*' }).first();
    const before = await views();
    const res = await filter('portfolios', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message: expect.stringContaining(word) });
    expect(await views()).toEqual(before);
  });

  test('a filter writes one VIEW audit record naming what it listed', async () => {
    await filter('portfolios', { tags: ['alpha', 'core'] });
    const record = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, operation: 'VIEW', entity_type: 'Portfolio' })
      .orderBy('created_at', 'desc')
      .first();
    expect(record).toMatchObject({ activity: 'Listed 1 portfolio records', viewed_ids: [ids.a] });
  });
});
