import fc from 'fast-check';
import { encodeKeysetToken } from '../../engine/store/page-token';
import { createTestAccount, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/**
 * The list query language through HTTP, on portfolios against a real PostgreSQL: every `query`
 * mode, the JSON filters/order/projection/distinct_on, paging, period filters and their 400s.
 */
describe('list queries (portfolios)', () => {
  const h = useTestApp();

  type Params = Record<string, string | number | object | undefined>;
  interface Portfolio {
    id: string;
    name: string;
    [field: string]: unknown;
  }

  /** GET /v2/portfolios; object values become JSON, everything is URL-encoded (`#`, `&`, spaces). */
  async function list(who: TestAccount, params: Params = {}) {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(params)) {
      if (value !== undefined)
        search.set(key, typeof value === 'object' ? JSON.stringify(value) : String(value));
    }
    return h.app.inject({
      method: 'GET',
      url: `/v2/portfolios?${search.toString()}`,
      headers: { authorization: who.bearer },
    });
  }

  async function ok(who: TestAccount, params: Params = {}) {
    const res = await list(who, params);
    const body = res.json() as { portfolios: Portfolio[]; next_page_token: string | null };
    expect(body).toEqual({ portfolios: expect.any(Array), next_page_token: body.next_page_token });
    expect(body.next_page_token === null || typeof body.next_page_token === 'string').toBe(true);
    expect(res.statusCode).toBe(200);
    return body;
  }

  async function names(who: TestAccount, params: Params = {}) {
    return (await ok(who, params)).portfolios.map((p) => p.name);
  }

  /** Follows next_page_token to the end; the tokens must come back null exactly at the end. */
  async function walk(who: TestAccount, params: Params) {
    const seen: Portfolio[] = [];
    let token = params.page_token as string | undefined;
    for (let pages = 0; pages < 100; pages++) {
      const body = await ok(who, { ...params, page_token: token });
      seen.push(...body.portfolios);
      if (body.next_page_token === null) return seen;
      expect(body.portfolios).toHaveLength(Number(params.page_size ?? 10));
      token = body.next_page_token;
    }
    throw new Error('paging did not end');
  }

  async function create(who: TestAccount, body: Record<string, unknown>): Promise<Portfolio> {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v2/portfolios',
      headers: { authorization: who.bearer },
      payload: { securities: [], ...body },
    });
    expect(res.statusCode).toBe(200);
    return res.json().portfolio;
  }

  /** Creates in order, so the last one is the most recent; distinct created_at values by construction. */
  async function seed(who: TestAccount, bodies: Array<Record<string, unknown>>): Promise<Portfolio[]> {
    const created: Portfolio[] = [];
    for (const [i, body] of bodies.entries()) {
      const portfolio = await create(who, body);
      // Whole seconds apart and in creation order, whatever the clock's resolution.
      await h
        .db('entities')
        .where({ id: portfolio.id })
        .update({ created_at: new Date(Date.UTC(2024, 0, 1, 0, 0, i, 123)) });
      created.push(portfolio);
    }
    return created;
  }

  async function expect400(who: TestAccount, params: Params, message: string | RegExp) {
    const res = await list(who, params);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      code: 400,
      message: typeof message === 'string' ? message : expect.stringMatching(message),
    });
  }

  describe('query modes', () => {
    test('an entity id → that one entity, in a list', async () => {
      const who = await createTestAccount(h.db);
      const [, second] = await seed(who, [{ name: 'one' }, { name: 'two' }, { name: 'three' }]);
      expect(await ok(who, { query: second!.id })).toEqual({
        portfolios: [expect.objectContaining({ id: second!.id, name: 'two' })],
        next_page_token: null,
      });
      // Scoped like every list: another workspace or another account does not find it.
      expect(await names(who, { query: second!.id, workspace: 'ops' })).toEqual([]);
      expect(await names(await createTestAccount(h.db), { query: second!.id })).toEqual([]);
    });

    test('#tags → entities carrying every tag, tags normalised as stored', async () => {
      const who = await createTestAccount(h.db);
      await seed(who, [
        { name: 'ab', tags: ['a', 'b'] },
        { name: 'a', tags: ['a'] },
        { name: 'bac', tags: ['b', 'a', 'c'] },
        { name: 'none' },
        { name: 'large', description: 'big caps #US-Large' },
      ]);
      expect(await names(who, { query: '#a b' })).toEqual(['bac', 'ab']);
      expect(await names(who, { query: '#a' })).toEqual(['bac', 'a', 'ab']);
      expect(await names(who, { query: '#A #B' })).toEqual(['bac', 'ab']);
      expect(await names(who, { query: '#c d' })).toEqual([]);
      // Stored as us_large; the query is normalised the same way.
      expect(await names(who, { query: '#US-Large' })).toEqual(['large']);
      expect(await names(who, { query: '#us_large' })).toEqual(['large']);
    });

    test('&link_uid → entities with that link UID', async () => {
      const who = await createTestAccount(h.db);
      const [x, y, z] = await seed(who, [{ name: 'x' }, { name: 'y' }, { name: 'z' }]);
      // Portfolios take no link_uid input: set it on the rows.
      await h.db('entities').whereIn('id', [x!.id, z!.id]).update({ link_uid: 'ext-1&2' });
      await h.db('entities').where({ id: y!.id }).update({ link_uid: 'ext-1' });
      expect(await names(who, { query: '&ext-1&2' })).toEqual(['z', 'x']);
      expect(await names(who, { query: '&ext-1' })).toEqual(['y']);
      expect(await names(who, { query: '&ext' })).toEqual([]);
    });

    test('any other text → name prefix, case-sensitive, % and _ literal', async () => {
      const who = await createTestAccount(h.db);
      await seed(who, [
        { name: 'Core' },
        { name: 'Core 2' },
        { name: 'core lower' },
        { name: 'Corex' },
        { name: '50% cash' },
        { name: '50x cash' },
        { name: 'a_b' },
        { name: 'axb' },
        { name: 'back\\slash' },
        { name: 'backxslash' },
      ]);
      expect(await names(who, { query: 'Core' })).toEqual(['Corex', 'Core 2', 'Core']);
      expect(await names(who, { query: 'Core ' })).toEqual(['Core 2']);
      expect(await names(who, { query: 'core' })).toEqual(['core lower']);
      expect(await names(who, { query: '50%' })).toEqual(['50% cash']);
      expect(await names(who, { query: 'a_' })).toEqual(['a_b']);
      expect(await names(who, { query: 'back\\' })).toEqual(['back\\slash']);
      expect(await names(who, { query: 'nothing' })).toEqual([]);
    });
  });

  describe('JSON filters', () => {
    let who: TestAccount;
    let rows: Portfolio[];
    beforeAll(async () => {
      who = await createTestAccount(h.db);
      rows = await seed(who, [
        { name: 'p0', base_currency: 'USD', nlv: 9, date: '20240110', tags: ['x'] },
        { name: 'p1', base_currency: 'EUR', nlv: 10, date: '20240115', tags: ['x', 'y'] },
        { name: 'p2', base_currency: 'USD', nlv: 100, tags: ['y'] },
        { name: 'p3', base_currency: 'JPY', date: '20240201' },
        { name: 'p4', base_currency: 'USD', nlv: -5.5, date: '20240131', workspace: 'ops' },
      ]);
    });
    const filter = (...filters: unknown[][]) => names(who, { query: { filters } });

    test('JSON mode scopes by its filters only: every workspace unless filtered', async () => {
      expect(await names(who, { query: {} })).toEqual(['p4', 'p3', 'p2', 'p1', 'p0']);
      expect(await filter(['workspace', '=', 'ops'])).toEqual(['p4']);
      expect(await filter(['workspace', '=', 'main'])).toEqual(['p3', 'p2', 'p1', 'p0']);
      // The workspace parameter does not scope a JSON query; its filter does.
      expect(
        await names(who, { query: { filters: [['workspace', '!=', 'ops']] }, workspace: 'ops' }),
      ).toEqual(['p3', 'p2', 'p1', 'p0']);
    });

    test('columns: name and date with every operator; a null date is not in any range', async () => {
      expect(await filter(['name', '=', 'p1'])).toEqual(['p1']);
      expect(await filter(['name', '!=', 'p1'])).toEqual(['p4', 'p3', 'p2', 'p0']);
      expect(await filter(['name', '<', 'p2'])).toEqual(['p1', 'p0']);
      expect(await filter(['name', '<=', 'p2'])).toEqual(['p2', 'p1', 'p0']);
      expect(await filter(['name', '>', 'p2'])).toEqual(['p4', 'p3']);
      expect(await filter(['name', '>=', 'p2'])).toEqual(['p4', 'p3', 'p2']);
      expect(await filter(['date', '<', '20240131'])).toEqual(['p1', 'p0']);
      expect(await filter(['date', '>=', '20240131'])).toEqual(['p4', 'p3']);
      expect(await filter(['date', '>', '20240110'], ['date', '<=', '20240131'])).toEqual(['p4', 'p1']);
      expect(await filter(['date', '=', null])).toEqual(['p2']);
      expect(await filter(['date', '!=', null])).toEqual(['p4', 'p3', 'p1', 'p0']);
      // A date written as a number means the same day.
      expect(await filter(['date', '=', 20240115])).toEqual(['p1']);
      expect(await filter(['date', 'IN', ['20240110', '20240201']])).toEqual(['p3', 'p0']);
      expect(await filter(['date', 'NOT_IN', ['20240110', '20240201']])).toEqual(['p4', 'p2', 'p1']);
    });

    test('created in epoch seconds, as the API shows it', async () => {
      // Seeded at 2024-01-01T00:00:0i.123Z: each row's `created` is a whole second.
      const s0 = Date.UTC(2024, 0, 1) / 1000;
      expect(rows.length).toBe(5);
      const shown = (await ok(who, { query: { filters: [['name', '=', 'p1']] } })).portfolios[0]!;
      expect(shown.created).toBe(s0 + 1);
      expect(await filter(['created', '=', s0 + 1])).toEqual(['p1']);
      expect(await filter(['created', '!=', s0 + 1])).toEqual(['p4', 'p3', 'p2', 'p0']);
      expect(await filter(['created', '<', s0 + 1])).toEqual(['p0']);
      expect(await filter(['created', '<=', s0 + 1])).toEqual(['p1', 'p0']);
      expect(await filter(['created', '>', s0 + 3])).toEqual(['p4']);
      expect(await filter(['created', '>=', s0 + 3])).toEqual(['p4', 'p3']);
      expect(await filter(['created', '=', s0 + 1.5])).toEqual([]);
      expect(await filter(['created', '<', s0 + 1.5])).toEqual(['p1', 'p0']);
      expect(await filter(['created_on', 'IN', [s0, s0 + 2]])).toEqual(['p2', 'p0']);
      expect(await filter(['created', 'NOT_IN', [s0, s0 + 2]])).toEqual(['p4', 'p3', 'p1']);
    });

    test('tags: =, !=, IN, NOT_IN (normalised values)', async () => {
      expect(await filter(['tags', '=', 'x'])).toEqual(['p1', 'p0']);
      expect(await filter(['tags', '=', 'X'])).toEqual(['p1', 'p0']);
      expect(await filter(['tags', '!=', 'x'])).toEqual(['p4', 'p3', 'p2']);
      expect(await filter(['tags', 'IN', ['x', 'y']])).toEqual(['p2', 'p1', 'p0']);
      expect(await filter(['tags', 'NOT_IN', ['x', 'y']])).toEqual(['p4', 'p3']);
      expect(await filter(['tags', '=', 'x'], ['tags', '=', 'y'])).toEqual(['p1']);
    });

    test('body properties: base_currency as text, nlv as a number (9 < 10 < 100), null out of ranges', async () => {
      expect(await filter(['base_currency', '=', 'USD'])).toEqual(['p4', 'p2', 'p0']);
      expect(await filter(['base_currency', '!=', 'USD'])).toEqual(['p3', 'p1']);
      expect(await filter(['base_currency', 'IN', ['EUR', 'JPY']])).toEqual(['p3', 'p1']);
      expect(await filter(['base_currency', 'not in', ['EUR', 'JPY']])).toEqual(['p4', 'p2', 'p0']);
      expect(await filter(['nlv', '>', 9])).toEqual(['p2', 'p1']);
      expect(await filter(['nlv', '>=', 9])).toEqual(['p2', 'p1', 'p0']);
      expect(await filter(['nlv', '<=', 10])).toEqual(['p4', 'p1', 'p0']);
      expect(await filter(['nlv', '<', 0])).toEqual(['p4']);
      expect(await filter(['nlv', '=', 10.0])).toEqual(['p1']);
      expect(await filter(['nlv', '=', null])).toEqual(['p3']);
      expect(await filter(['nlv', 'IN', [9, 100, null]])).toEqual(['p3', 'p2', 'p0']);
      // A string never equals a number.
      expect(await filter(['nlv', '=', '10'])).toEqual([]);
      expect(await filter(['nlv', '>', 'a'])).toEqual([]);
      // Every filter must hold.
      expect(await filter(['base_currency', '=', 'USD'], ['nlv', '>', 0])).toEqual(['p2', 'p0']);
      // Properties nobody has are null.
      expect(await filter(['no.such.property', '=', null])).toEqual(['p4', 'p3', 'p2', 'p1', 'p0']);
      expect(await filter(['no.such.property', '=', 1])).toEqual([]);
    });

    test('version compares as the number it is, whichever way it is written', async () => {
      expect(await filter(['version', '=', '1'], ['name', '=', 'p0'])).toEqual(['p0']);
      expect(await filter(['version', '=', 1], ['name', '=', 'p0'])).toEqual(['p0']);
      expect(await filter(['version', '>', 1])).toEqual([]);
    });
  });

  describe('order and paging', () => {
    test('order on name, ascending and descending, across pages', async () => {
      const who = await createTestAccount(h.db);
      const letters = ['delta', 'alpha', 'echo', 'charlie', 'bravo', 'golf', 'foxtrot'];
      await seed(
        who,
        letters.map((name) => ({ name })),
      );
      const sorted = [...letters].sort();
      const asc = await walk(who, { query: { order: ['name'] }, page_size: 2 });
      expect(asc.map((p) => p.name)).toEqual(sorted);
      const desc = await walk(who, { query: { order: ['-name'] }, page_size: 3 });
      expect(desc.map((p) => p.name)).toEqual([...sorted].reverse());
    });

    test('order on a body property with ties and nulls: total, stable across pages, no duplicate', async () => {
      const who = await createTestAccount(h.db);
      const nlvs = [5, null, 5, 1, 5, null, 1.5, 100, 5, 20];
      const created = await seed(
        who,
        nlvs.map((nlv, i) => ({ name: `n${i}`, nlv })),
      );
      const rank = (nlv: number | null) => (nlv === null ? -Infinity : nlv);
      const byId = (a: Portfolio, b: Portfolio) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
      // Ascending nlv, ties by id ascending (the implicit tiebreak follows the last key's direction).
      const expectedAsc = [...created].sort(
        (a, b) => rank(a.nlv as number | null) - rank(b.nlv as number | null) || byId(a, b),
      );
      for (const pageSize of [1, 2, 3, 4, 10]) {
        const seen = await walk(who, { query: { order: ['nlv'] }, page_size: pageSize });
        expect(seen.map((p) => p.id)).toEqual(expectedAsc.map((p) => p.id));
      }
      // Descending nlv, ties by name descending (an explicit second key).
      const expectedMixed = [...created].sort(
        (a, b) => rank(b.nlv as number | null) - rank(a.nlv as number | null) || (a.name < b.name ? 1 : -1),
      );
      const mixed = await walk(who, { query: { order: ['-nlv', '-name'] }, page_size: 3 });
      expect(mixed.map((p) => p.name)).toEqual(expectedMixed.map((p) => p.name));
      // Mixed directions: nlv descending, then name ascending.
      const expectedUp = [...created].sort(
        (a, b) => rank(b.nlv as number | null) - rank(a.nlv as number | null) || (a.name < b.name ? -1 : 1),
      );
      const up = await walk(who, { query: { order: ['-nlv', 'name'] }, page_size: 4 });
      expect(up.map((p) => p.name)).toEqual(expectedUp.map((p) => p.name));
    });

    test('default order: most recent first; ties on created_at broken by id, across pages', async () => {
      const who = await createTestAccount(h.db);
      const created = await seed(
        who,
        Array.from({ length: 9 }, (_, i) => ({ name: `t${i}` })),
      );
      // Three rows share each instant, with microseconds a JS Date cannot hold.
      for (const [i, p] of created.entries()) {
        await h.db.raw(`UPDATE entities SET created_at = ?::timestamptz WHERE id = ?`, [
          `2024-03-01T00:00:0${Math.floor(i / 3)}.123456Z`,
          p.id,
        ]);
      }
      const expected = [...created].sort((a, b) => {
        const ia = created.indexOf(a);
        const ib = created.indexOf(b);
        return Math.floor(ib / 3) - Math.floor(ia / 3) || (a.id < b.id ? 1 : -1);
      });
      for (const pageSize of [1, 2, 4]) {
        const seen = await walk(who, { page_size: pageSize });
        expect(seen.map((p) => p.id)).toEqual(expected.map((p) => p.id));
        // The same order through a JSON query, explicitly and on the fast path.
        const explicit = await walk(who, { query: { order: ['-created'] }, page_size: pageSize });
        expect(explicit.map((p) => p.id)).toEqual(expected.map((p) => p.id));
        // And through the jsonb path: created is a key, but not the only one before id.
        const generic = await walk(who, {
          query: { order: ['-created', '-id'], distinct_on: ['id'] },
          page_size: pageSize,
        });
        expect(generic.map((p) => p.id)).toEqual(expected.map((p) => p.id));
      }
      // One cursor format per order: a token of the fast path continues on the jsonb path.
      const first = await ok(who, { page_size: 4 });
      const rest = await walk(who, {
        query: { distinct_on: ['id'] },
        page_size: 5,
        page_token: first.next_page_token!,
      });
      expect([...first.portfolios, ...rest].map((p) => p.id)).toEqual(expected.map((p) => p.id));
      const oldestFirst = await walk(who, { query: { order: ['created'] }, page_size: 2 });
      expect(oldestFirst.map((p) => p.id)).toEqual([...expected].reverse().map((p) => p.id));
    });

    test('order on updated_on with microsecond timestamps', async () => {
      const who = await createTestAccount(h.db);
      const created = await seed(
        who,
        Array.from({ length: 5 }, (_, i) => ({ name: `u${i}` })),
      );
      const stamps = ['.000001', '.000002', '.000001', '.999999', '.5'];
      for (const [i, p] of created.entries()) {
        await h.db.raw(`UPDATE entities SET updated_at = ?::timestamptz WHERE id = ?`, [
          `2024-03-01T00:00:00${stamps[i]}Z`,
          p.id,
        ]);
      }
      const seen = await walk(who, { query: { order: ['-updated_on'] }, page_size: 1 });
      const tied = [created[0]!.id, created[2]!.id].sort().reverse();
      expect(seen.map((p) => p.id)).toEqual([created[3]!.id, created[4]!.id, created[1]!.id, ...tied]);
    });

    test('next_page_token is null on the last page, also when it is exactly full', async () => {
      const who = await createTestAccount(h.db);
      await seed(
        who,
        Array.from({ length: 4 }, (_, i) => ({ name: `e${i}` })),
      );
      const first = await ok(who, { page_size: 2 });
      expect(first.next_page_token).toEqual(expect.any(String));
      const second = await ok(who, { page_size: 2, page_token: first.next_page_token! });
      expect(second).toEqual({ portfolios: [expect.anything(), expect.anything()], next_page_token: null });
      expect(await ok(who, { page_size: 4 })).toMatchObject({ next_page_token: null });
      expect(await ok(await createTestAccount(h.db))).toEqual({ portfolios: [], next_page_token: null });
    });

    test('page_size: default 10, JSON value, the URL wins', async () => {
      const who = await createTestAccount(h.db);
      await seed(
        who,
        Array.from({ length: 12 }, (_, i) => ({ name: `s${i}` })),
      );
      expect((await ok(who)).portfolios).toHaveLength(10);
      expect((await ok(who, { query: { page_size: 3 } })).portfolios).toHaveLength(3);
      expect((await ok(who, { query: { page_size: 3 }, page_size: 5 })).portfolios).toHaveLength(5);
      expect((await ok(who, { page_size: 100 })).portfolios).toHaveLength(12);
      // A JSON page_size carries over: repeating the same query with the token pages on alike.
      const walked = await walk(who, { query: { page_size: 5 }, page_size: 5 });
      expect(walked).toHaveLength(12);
    });

    test('a token from one order used with another → 400; with the same order it is a position', async () => {
      const who = await createTestAccount(h.db);
      await seed(
        who,
        Array.from({ length: 6 }, (_, i) => ({ name: `k${i}`, nlv: i % 2 })),
      );
      const byName = await ok(who, { query: { order: ['name'] }, page_size: 2 });
      await expect400(
        who,
        { page_size: 2, page_token: byName.next_page_token! },
        'Invalid page_token: it belongs to a list in another order; repeat the same query with it.',
      );
      await expect400(
        who,
        { query: { order: ['-name'] }, page_token: byName.next_page_token! },
        'Invalid page_token: it belongs to a list in another order; repeat the same query with it.',
      );
      // The default order is "-created": a JSON query saying so continues the same walk.
      const recent = await ok(who, { page_size: 2 });
      const continued = await ok(who, {
        query: { order: ['-created'] },
        page_size: 2,
        page_token: recent.next_page_token!,
      });
      expect(continued.portfolios.map((p) => p.name)).toEqual(['k3', 'k2']);
      // Filters may change between pages: the token is a position in the order.
      const filtered = await ok(who, {
        query: { order: ['name'], filters: [['nlv', '=', 1]] },
        page_token: byName.next_page_token!,
      });
      expect(filtered.portfolios.map((p) => p.name)).toEqual(['k3', 'k5']);
    });

    test('garbage and forged tokens → 400, never a database error', async () => {
      const who = await createTestAccount(h.db);
      await seed(who, [{ name: 'g' }]);
      const invalid = 'Invalid page_token: pass the next_page_token of the previous response unchanged.';
      await expect400(who, { page_token: 'garbage' }, invalid);
      await expect400(who, { page_token: Buffer.from('[1,"x"]').toString('base64url') }, invalid);
      // The right shape, values PostgreSQL would refuse.
      const forged = (order: string, keys: string[]) => encodeKeysetToken({ order, keys });
      await expect400(who, { page_token: forged('-created,-id', ['"x"', '"y"']) }, invalid);
      await expect400(who, { page_token: forged('-created,-id', ['99999999999999999999', '"y"']) }, invalid);
      await expect400(who, { page_token: forged('-created,-id', ['1', '7']) }, invalid);
      await expect400(who, { page_token: forged('-created,-id', ['1', '"\\u0000"']) }, invalid);
      await expect400(
        who,
        { query: { order: ['name'] }, page_token: forged('name,id', ['1e-400000', '"x"']) },
        // PostgreSQL's numeric overflows (SQLSTATE 22003): a client's value, so a 400.
        'The query or page_token holds a value the database cannot compare.',
      );
      // A forged token with sane values is only a position.
      expect(
        await names(who, { query: { order: ['name'] }, page_token: forged('name,id', ['"a"', '"x"']) }),
      ).toEqual(['g']);
    });
  });

  describe('projection', () => {
    test('include: only those fields; exclude: all but those; unknown names add nothing', async () => {
      const who = await createTestAccount(h.db);
      const [p] = await seed(who, [{ name: 'proj', nlv: 3, tags: ['t'] }]);
      expect((await ok(who, { query: { projection: ['id', 'nlv'] } })).portfolios).toEqual([
        { id: p!.id, nlv: 3 },
      ]);
      const excluded = (await ok(who, { query: { projection: ['-description', '-tags', '-nlv'] } }))
        .portfolios;
      expect(excluded).toEqual([
        {
          id: p!.id,
          name: 'proj',
          date: null,
          base_currency: 'USD',
          workspace: 'main',
          created: expect.any(Number),
          updated: expect.any(Number),
          version: '1',
        },
      ]);
      // Lists leave securities out, projected or not; prototype names are not fields.
      expect(
        (await ok(who, { query: { projection: ['securities', 'constructor', 'toString', 'nope'] } }))
          .portfolios,
      ).toEqual([{}]);
      expect((await ok(who, { query: { projection: ['-constructor'] } })).portfolios[0]).toHaveProperty(
        'name',
        'proj',
      );
    });

    test('more than 15 or mixed → 400', async () => {
      const who = await createTestAccount(h.db);
      await expect400(
        who,
        { query: { projection: Array.from({ length: 16 }, (_, i) => `f${i}`) } },
        'query.projection has 16 elements; at most 15 are allowed.',
      );
      await expect400(
        who,
        { query: { projection: ['name', '-nlv'] } },
        'query.projection either lists properties to return or, with a "-" prefix, to leave out; not both.',
      );
    });
  });

  describe('distinct_on', () => {
    test('one entity per value, the first in the order, paged without repeats', async () => {
      const who = await createTestAccount(h.db);
      const currencies = ['USD', 'EUR', 'USD', 'JPY', 'EUR', 'USD', 'GBP', 'CHF', 'GBP'];
      await seed(
        who,
        currencies.map((base_currency, i) => ({ name: `d${i}`, base_currency, nlv: i })),
      );
      const query = { distinct_on: ['base_currency'] };
      // Most recent first: d8 (GBP), d7 (CHF), d5 (USD), d4 (EUR), d3 (JPY).
      for (const pageSize of [1, 2, 10]) {
        expect((await walk(who, { query, page_size: pageSize })).map((p) => p.name)).toEqual([
          'd8',
          'd7',
          'd5',
          'd4',
          'd3',
        ]);
      }
      // With an order, the representative is the first in that order.
      const byNlv = await walk(who, { query: { ...query, order: ['nlv'] }, page_size: 2 });
      expect(byNlv.map((p) => [p.name, p.base_currency])).toEqual([
        ['d0', 'USD'],
        ['d1', 'EUR'],
        ['d3', 'JPY'],
        ['d6', 'GBP'],
        ['d7', 'CHF'],
      ]);
      // Combined with filters, and on two properties (distinct pairs).
      expect(
        (await walk(who, { query: { ...query, filters: [['nlv', '<', 5]] }, page_size: 2 })).map(
          (p) => p.name,
        ),
      ).toEqual(['d4', 'd3', 'd2']);
      expect(
        await names(who, { query: { distinct_on: ['base_currency', 'workspace'], order: ['name'] } }),
      ).toEqual(['d0', 'd1', 'd3', 'd6', 'd7']);
    });
  });

  describe('periods', () => {
    test('on date (the default field): whole days, inclusive; no date is outside every period', async () => {
      const who = await createTestAccount(h.db);
      await seed(who, [
        { name: 'jan1', date: '20240101' },
        { name: 'jan15', date: '20240115' },
        { name: 'jan31', date: '20240131' },
        { name: 'feb1', date: '20240201' },
        { name: 'undated' },
      ]);
      expect(await names(who, { start: '20240101', end: '20240131' })).toEqual(['jan31', 'jan15', 'jan1']);
      expect(await names(who, { start: '20240115' })).toEqual(['feb1', 'jan31', 'jan15']);
      expect(await names(who, { end: '20240114', period_field: 'date' })).toEqual(['jan1']);
      expect(await names(who, { date_time: '20240131' })).toEqual(['jan31']);
      // A time of day counts only with updated_on.
      expect(await names(who, { date_time: '20240131 12:00:00' })).toEqual(['jan31']);
      // Combines with tags and JSON queries, not with a name search.
      expect(await names(who, { query: { filters: [['name', '!=', 'jan1']] }, end: '20240131' })).toEqual([
        'jan31',
        'jan15',
      ]);
      await expect400(
        who,
        { query: 'jan', start: '20240101' },
        'A period on date does not combine with a name search; use period_field=updated_on.',
      );
    });

    test('on updated_on: UTC, inclusive to the last microsecond of the second or day', async () => {
      const who = await createTestAccount(h.db);
      const created = await seed(who, [
        { name: 'before' },
        { name: 'first' },
        { name: 'last' },
        { name: 'after' },
      ]);
      const stamps = [
        '2024-01-31T09:59:59.999999Z',
        '2024-01-31T10:00:00Z',
        '2024-01-31T23:59:59.9995Z',
        '2024-02-01T00:00:00Z',
      ];
      for (const [i, p] of created.entries()) {
        await h.db.raw('UPDATE entities SET updated_at = ?::timestamptz WHERE id = ?', [stamps[i]!, p.id]);
      }
      const on = { period_field: 'updated_on' };
      expect(await names(who, { ...on, date_time: '20240131' })).toEqual(['last', 'first', 'before']);
      expect(await names(who, { ...on, start: '20240131 10:00:00', end: '20240131' })).toEqual([
        'last',
        'first',
      ]);
      expect(await names(who, { ...on, start: '20240131 09:59:59', end: '20240131 09:59:59' })).toEqual([
        'before',
      ]);
      expect(await names(who, { ...on, end: '20240131 23:59:59' })).toEqual(['last', 'first', 'before']);
      expect(await names(who, { ...on, start: '20240201' })).toEqual(['after']);
      // The space of a time arrives URL-encoded as "+" too.
      const res = await h.app.inject({
        method: 'GET',
        url: '/v2/portfolios?period_field=updated_on&start=20240131+10:00:00&end=20240131+10:00:00',
        headers: { authorization: who.bearer },
      });
      expect(res.json().portfolios.map((p: Portfolio) => p.name)).toEqual(['first']);
      // A name search combines with a period on updated_on.
      expect(await names(who, { ...on, query: 'l', date_time: '20240131' })).toEqual(['last']);
    });
  });

  describe('invalid input → 400 {code, message}', () => {
    let who: TestAccount;
    beforeAll(async () => {
      who = await createTestAccount(h.db);
    });

    test.each<[string, Params, string | RegExp]>([
      ['page_size 0', { page_size: 0 }, 'page_size must be an integer from 1 to 100.'],
      ['page_size 101', { page_size: 101 }, 'page_size must be an integer from 1 to 100.'],
      ['page_size abc', { page_size: 'abc' }, 'page_size must be an integer from 1 to 100.'],
      ['JSON page_size 0', { query: { page_size: 0 } }, 'page_size must be an integer from 1 to 100.'],
      ['bad JSON', { query: '{bad json' }, /^query looks like a JSON object but is not valid JSON/],
      ['unknown JSON key', { query: { sort: ['name'] } }, 'Unknown key in the JSON query: sort.'],
      [
        'unknown operator',
        { query: { filters: [['name', 'LIKE', 'a%']] } },
        'query.filters[0]: operator must be one of =, !=, <, <=, >, >=, IN, NOT_IN.',
      ],
      [
        'IN without a list',
        { query: { filters: [['name', 'IN', 'a']] } },
        'query.filters[0]: IN needs a list value.',
      ],
      [
        'a range on tags',
        { query: { filters: [['tags', '>', 'a']] } },
        'tags can only be filtered with =, !=, IN or NOT_IN.',
      ],
      [
        'created compared with text',
        { query: { filters: [['created', '>', '20240101']] } },
        'created is compared with epoch seconds (a number).',
      ],
      [
        'order by a field lists leave out',
        { query: { order: ['securities'] } },
        'query.order: lists cannot be ordered by securities.',
      ],
      [
        'a property that is no name',
        { query: { order: ['a b'] } },
        'query.order: "a b" is not a property name.',
      ],
      ['# alone', { query: '#' }, 'A tag query needs at least one tag after "#".'],
      ['& alone', { query: '&' }, 'A link query needs a link UID after "&".'],
      [
        'ISO date',
        { start: '2024-01-01' },
        'start must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), a real day and time.',
      ],
      [
        'no such day',
        { end: '20240230' },
        'end must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), a real day and time.',
      ],
      ['T separator', { date_time: '20240101T100000' }, /^date_time must be YYYYMMDD/],
      ['7 digits', { start: '2024010' }, /^start must be YYYYMMDD/],
      [
        'hour 24',
        { start: '20240101 24:00:00', period_field: 'updated_on' },
        'start must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), a real day and time.',
      ],
      ['start after end', { start: '20240102', end: '20240101' }, 'start must not be after end.'],
      [
        'period_field',
        { period_field: 'created', start: '20240101' },
        'period_field must be one of "date", "updated_on", "".',
      ],
      ['NUL in a name search', { query: 'a\u0000' }, 'query must be text (without NUL characters).'],
      [
        'NUL in a filter value',
        { query: { filters: [['name', '=', 'a\u0000']] } },
        'query.filters[0] holds a NUL character or an unpaired surrogate.',
      ],
      [
        'NUL in the workspace',
        { workspace: 'a\u0000' },
        'workspace must be a workspace name without spaces.',
      ],
    ])('%s', async (_, params, message) => {
      await expect400(who, params, message);
    });

    // (A URL cannot carry an unpaired surrogate: URL encoding turns it into U+FFFD.)
    test.each([['bell\u0007'], ['del\u007f']])('workspace %j → 400', async (workspace) => {
      await expect400(who, { workspace }, 'workspace must be a workspace name without spaces.');
    });
  });

  test('each listed page writes one VIEW record with the ids it returned', async () => {
    const who = await createTestAccount(h.db);
    const created = await seed(who, [{ name: 'v0' }, { name: 'v1' }, { name: 'v2' }]);
    await ok(who, { page_size: 2 });
    await ok(who, { query: 'nothing' });
    const views = await h.db('audit_logs').where({ account_id: who.accountId, operation: 'VIEW' });
    expect(views.map((v) => [v.entity_type, v.viewed_ids])).toEqual([
      ['Portfolio', [created[2]!.id, created[1]!.id]],
    ]);
  });

  test('property: any JSON query is answered 200 or 400 with {code, message}, never 5xx', async () => {
    const who = await createTestAccount(h.db);
    await seed(who, [
      { name: 'a', nlv: 1, tags: ['x'], date: '20240101' },
      { name: 'b', base_currency: 'EUR' },
      { name: 'c', nlv: 2.5, workspace: 'w' },
    ]);
    const property = fc.constantFrom(
      'id',
      'name',
      'description',
      'workspace',
      'link_uid',
      'date',
      'created',
      'updated_on',
      'version',
      'tags',
      'nlv',
      'base_currency',
      'securities',
      'securities.0.symbol',
      'a.b',
    );
    const value = fc.oneof(
      fc.string({ maxLength: 5 }),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.constantFrom('20240101', 'x', 'USD', 1e300, -1e300, 5e-324),
      // What PostgreSQL refuses in text or jsonb: NUL and unpaired surrogates.
      fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udfff', 'a', '"', '\\', "'"), maxLength: 4 }),
    );
    const operator = fc.constantFrom('=', '!=', '<', '<=', '>', '>=', 'IN', 'NOT_IN');
    const filter = fc.tuple(property, operator, fc.oneof(value, fc.array(value, { maxLength: 3 })));
    const sign = fc.constantFrom('', '-');
    const query = fc.record(
      {
        filters: fc.array(filter, { maxLength: 3 }),
        order: fc.array(
          fc.tuple(sign, property).map(([s, p]) => s + p),
          { maxLength: 3 },
        ),
        projection: fc.array(property, { maxLength: 3 }),
        distinct_on: fc.array(property, { maxLength: 2 }),
        page_size: fc.integer({ min: 1, max: 3 }),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        let token: string | undefined;
        // Follow a page or two: the cursor of every key type goes back into SQL.
        for (let page = 0; page < 3; page++) {
          const res = await list(who, { query: q, page_token: token });
          expect([200, 400]).toContain(res.statusCode);
          if (res.statusCode === 400) {
            expect(res.json()).toEqual({ code: 400, message: expect.any(String) });
            return;
          }
          token = res.json().next_page_token ?? undefined;
          if (!token) return;
        }
      }),
      { numRuns: 150 },
    );
  });
});
