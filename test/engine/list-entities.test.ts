import { authenticateApiKey } from '../../engine/identity/account-store';
import type { Actor } from '../../engine/platform/principal';
import type { Database } from '../../engine/platform/database';
import {
  commonView,
  createEntity,
  type EntityKind,
  type EntityRecord,
} from '../../engine/store/entity-store';
import { listEntities } from '../../engine/store/list-entities';
import { InvalidInput } from '../../engine/platform/errors';
import { PORTFOLIO } from '../../engine/kinds/portfolio';
import { createTestAccount } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

/**
 * listEntities called directly: what HTTP cannot show (the response serialiser drops undeclared
 * fields) and kinds other than portfolios (symbol-keyed, account-scoped, without a date).
 */
describe('listEntities', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
  });
  afterAll(async () => {
    await database.drop();
  });

  async function freshActor(): Promise<Actor> {
    const account = await createTestAccount(db);
    const principal = await authenticateApiKey(db, account.key.account_sid, account.key.auth_token);
    return { principal: principal!, source: 'API', ip: null, userAgent: null };
  }

  test('projection returns own fields only, never prototype members', async () => {
    const actor = await freshActor();
    await createEntity(db, actor, PORTFOLIO, { name: 'p', body: { base_currency: 'USD', securities: [] } });
    const { items } = await listEntities(db, actor, PORTFOLIO, {
      query: JSON.stringify({ projection: ['name', 'constructor', 'toString', '__proto__', 'securities'] }),
    });
    expect(items).toEqual([{ name: 'p' }]);
    expect(Object.keys(items[0]!)).toEqual(['name']);
  });

  /** A kind like private securities: the symbol is the id, scoped to the account, no date. */
  const SYMBOL_KIND: EntityKind = {
    kind: 'test_symbol',
    entityType: 'CustomSecurity',
    noun: 'test symbol',
    scope: 'account',
    idPrefix: null,
    symbolPattern: /^TEST:[A-Z0-9_]+$/,
    idField: 'symbol',
    hasDate: false,
    listOmit: ['data'],
    view: (record: EntityRecord) => {
      const { id, ...rest } = commonView(record);
      return { symbol: id, ...rest, data: record.body.data ?? [] };
    },
  };

  test('symbol-keyed kinds: the symbol query, symbol filters and order, updated_on periods', async () => {
    const actor = await freshActor();
    for (const symbol of ['TEST:B', 'TEST:A', 'TEST:C']) {
      await createEntity(db, actor, SYMBOL_KIND, { id: symbol, name: `n ${symbol}`, body: { data: [1, 2] } });
    }
    const list = async (request: Parameters<typeof listEntities>[3]) =>
      (await listEntities(db, actor, SYMBOL_KIND, request)).items.map((item) => item.symbol);
    expect(await list({ query: 'TEST:A' })).toEqual(['TEST:A']);
    expect(
      await list({ query: JSON.stringify({ filters: [['symbol', 'IN', ['TEST:A', 'TEST:C']]] }) }),
    ).toEqual(['TEST:C', 'TEST:A']);
    expect(await list({ query: JSON.stringify({ order: ['symbol'] }) })).toEqual([
      'TEST:A',
      'TEST:B',
      'TEST:C',
    ]);
    // Account-scoped kinds ignore the workspace parameter.
    expect(await list({ workspace: 'elsewhere' })).toEqual(['TEST:C', 'TEST:A', 'TEST:B']);
    // Date-less: a period means updated_on, with or without a name search.
    const today = new Date().toISOString().slice(0, 10).replace(/-/g, '');
    expect(await list({ query: 'n TEST:B', date_time: today })).toEqual(['TEST:B']);
    expect(await list({ end: '20200101' })).toEqual([]);
    await expect(list({ start: today, period_field: 'date' })).rejects.toThrow(
      new InvalidInput('These entities have no date: use period_field=updated_on.'),
    );
    // Lists leave data out, so it cannot order them either.
    expect((await listEntities(db, actor, SYMBOL_KIND, { query: 'TEST:A' })).items[0]).not.toHaveProperty(
      'data',
    );
    await expect(list({ query: JSON.stringify({ order: ['data'] }) })).rejects.toThrow(
      new InvalidInput('query.order: lists cannot be ordered by data.'),
    );
  });
});
