import fc from 'fast-check';
import { authenticateApiKey } from '../../engine/identity/account-store';
import type { Actor } from '../../engine/platform/principal';
import type { Database } from '../../engine/platform/database';
import { createEntity, deleteEntity } from '../../engine/store/entity-store';
import { listEntities } from '../../engine/store/list-entities';
import { newId } from '../../engine/platform/ids';
import { PORTFOLIO } from '../../engine/kinds/portfolio';
import { createTestAccount } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

/**
 * The keyset promise, checked against a model: while a client pages through a list, rows are
 * inserted and deleted between page requests and at the same time as them. Every row that exists
 * for the whole walk appears exactly once, no row appears twice, rows come in the promised order.
 * Rows inserted or deleted during the walk may appear or not, but never twice.
 *
 * Ties are where keyset bugs hide, so the generated values collide on purpose: a handful of
 * created_at instants (with microseconds a JS Date cannot hold), nlv values with nulls, two names.
 * Comparisons of ids in the model rely on the test server's C collation (byte order), which
 * test/support sets up for every machine alike.
 */

const BASE_MICROS = 1_704_067_200_000_000n; // 2024-01-01T00:00:00Z
const OFFSETS = [0n, 1n, 500_000n, 1_000_000n, 1_000_001n, 2_000_000n];
const NLVS = [null, 0, 1, 2.5] as const;
const NAMES = ['a', 'b'] as const;

interface ModelRow {
  id: string;
  created: bigint;
  nlv: number | null;
  name: string;
}

interface Order {
  label: string;
  query: string | null;
  compare(a: ModelRow, b: ModelRow): number;
}

const cmp = <T>(a: T, b: T) => (a < b ? -1 : a > b ? 1 : 0);
/** jsonb order: null below every number. */
const cmpNlv = (a: number | null, b: number | null) =>
  a === b ? 0 : a === null ? -1 : b === null ? 1 : cmp(a, b);

const ORDERS: Order[] = [
  {
    label: 'default (created desc, id desc)',
    query: null,
    compare: (a, b) => cmp(b.created, a.created) || cmp(b.id, a.id),
  },
  {
    label: 'created asc, id asc',
    query: JSON.stringify({ order: ['created'] }),
    compare: (a, b) => cmp(a.created, b.created) || cmp(a.id, b.id),
  },
  {
    label: 'nlv asc, id asc',
    query: JSON.stringify({ order: ['nlv'] }),
    compare: (a, b) => cmpNlv(a.nlv, b.nlv) || cmp(a.id, b.id),
  },
  {
    label: 'nlv desc, name asc, id asc',
    query: JSON.stringify({ order: ['-nlv', 'name'] }),
    compare: (a, b) => cmpNlv(b.nlv, a.nlv) || cmp(a.name, b.name) || cmp(a.id, b.id),
  },
];

/** Exact timestamptz literal of whole microseconds. */
function timestamp(micros: bigint): string {
  const millis = micros / 1000n;
  const rest = micros % 1000n;
  return new Date(Number(millis)).toISOString().replace('Z', `${String(rest).padStart(3, '0')}Z`);
}

interface NewRow {
  nlv: number | null;
  name: string;
  /** A created_at among the existing ones (ties), or null for "now" through createEntity. */
  offset: bigint | null;
}

type Step =
  | { kind: 'page'; size: number }
  | { kind: 'insert'; row: NewRow }
  | { kind: 'delete'; pick: number }
  | { kind: 'together'; size: number; inserts: NewRow[]; deletes: number[] };

const newRow = (backdated: fc.Arbitrary<bigint | null>) =>
  fc.record({ nlv: fc.constantFrom(...NLVS), name: fc.constantFrom(...NAMES), offset: backdated });
const insertRow = newRow(fc.option(fc.constantFrom(...OFFSETS), { freq: 3 }));
const pageSize = fc.integer({ min: 1, max: 4 });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('page' as const), size: pageSize }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('insert' as const), row: insertRow }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('together' as const),
      size: pageSize,
      inserts: fc.array(insertRow, { maxLength: 3 }),
      deletes: fc.array(fc.nat(), { maxLength: 3 }),
    }),
  },
);
const initialRows = fc.array(newRow(fc.constantFrom(...OFFSETS)), { maxLength: 14 });

describe('keyset paging (property)', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
  });
  afterAll(async () => {
    await database.drop();
  });

  /** A fresh account per run: an actor as the HTTP layer builds it (api/http/authentication.ts). */
  async function freshActor(): Promise<Actor> {
    const account = await createTestAccount(db);
    const principal = await authenticateApiKey(db, account.key.account_sid, account.key.auth_token);
    return { principal: principal!, source: 'API', ip: null, userAgent: null };
  }

  async function insert(actor: Actor, row: NewRow): Promise<ModelRow> {
    const body = { base_currency: 'USD', nlv: row.nlv, securities: [] };
    if (row.offset === null) {
      const record = await createEntity(db, actor, PORTFOLIO, { name: row.name, body });
      return {
        id: record.id,
        created: BigInt(record.createdAt.getTime()) * 1000n,
        nlv: row.nlv,
        name: row.name,
      };
    }
    const id = newId(PORTFOLIO.idPrefix!);
    const created = BASE_MICROS + row.offset;
    await db('entities').insert({
      account_id: actor.principal.accountId,
      kind: PORTFOLIO.kind,
      id,
      workspace: 'main',
      name: row.name,
      body: JSON.stringify(body),
      created_at: db.raw('?::timestamptz', [timestamp(created)]),
      updated_at: db.raw('?::timestamptz', [timestamp(created)]),
    });
    return { id, created, nlv: row.nlv, name: row.name };
  }

  async function walk(order: Order, initial: NewRow[], steps: Step[]) {
    const actor = await freshActor();
    const rows = new Map<string, ModelRow>();
    const live = new Set<string>();
    for (const row of initial) {
      const inserted = await insert(actor, row);
      rows.set(inserted.id, inserted);
      live.add(inserted.id);
    }
    let presentAtStart: Set<string> | null = null;
    const deletedDuringWalk = new Set<string>();
    const deletedBeforeWalk = new Set<string>();
    const seen: string[] = [];
    let token: string | null = null;
    let done = false;

    const fetchPage = async (size: number) => {
      presentAtStart ??= new Set(live);
      const page = await listEntities(db, actor, PORTFOLIO, {
        query: order.query,
        page_size: size,
        page_token: token,
      });
      seen.push(...page.items.map((item) => item.id as string));
      token = page.next_page_token;
      done = token === null;
    };
    const add = async (row: NewRow) => {
      const inserted = await insert(actor, row);
      rows.set(inserted.id, inserted);
      live.add(inserted.id);
    };
    /** Picks a live row now (synchronously), so concurrent deletes never pick the same one. */
    const remove = (pick: number) => {
      const ids = [...live].sort();
      if (ids.length === 0) return Promise.resolve();
      const id = ids[pick % ids.length]!;
      live.delete(id);
      (presentAtStart ? deletedDuringWalk : deletedBeforeWalk).add(id);
      return deleteEntity(db, actor, PORTFOLIO, id, 'main');
    };

    for (const s of steps) {
      if (done) break;
      if (s.kind === 'page') await fetchPage(s.size);
      else if (s.kind === 'insert') await add(s.row);
      else if (s.kind === 'delete') await remove(s.pick);
      else {
        // Writes racing the page request itself: each may commit before or after its snapshot.
        presentAtStart ??= new Set(live);
        await Promise.all([fetchPage(s.size), ...s.inserts.map(add), ...s.deletes.map(remove)]);
      }
    }
    for (let pages = 0; !done; pages++) {
      if (pages > 200) throw new Error('the walk does not end');
      await fetchPage(3);
    }
    return { rows, seen, presentAtStart: presentAtStart!, deletedDuringWalk, deletedBeforeWalk };
  }

  test.each(ORDERS)('pages in order $label: all stable rows once, none twice', async (order) => {
    await fc.assert(
      fc.asyncProperty(initialRows, fc.array(step, { maxLength: 14 }), async (initial, steps) => {
        const { rows, seen, presentAtStart, deletedDuringWalk, deletedBeforeWalk } = await walk(
          order,
          initial,
          steps,
        );
        // No row twice.
        expect(new Set(seen).size).toBe(seen.length);
        // Only rows of this account, never one deleted before the walk began.
        for (const id of seen) {
          expect(rows.has(id)).toBe(true);
          expect(deletedBeforeWalk.has(id)).toBe(false);
        }
        // Every row there for the whole walk, exactly once.
        const stable = [...presentAtStart].filter((id) => !deletedDuringWalk.has(id));
        const seenSet = new Set(seen);
        expect(stable.filter((id) => !seenSet.has(id))).toEqual([]);
        // In the promised order, strictly (the order is total: it ends in id).
        for (let i = 1; i < seen.length; i++) {
          const before = rows.get(seen[i - 1]!)!;
          const after = rows.get(seen[i]!)!;
          if (order.compare(before, after) >= 0) {
            throw new Error(
              `out of order at ${i}: ${JSON.stringify([before, after], (_, v) => (typeof v === 'bigint' ? String(v) : v))}`,
            );
          }
        }
      }),
      { numRuns: 50 },
    );
  });

  test('distinct_on pages through each distinct value exactly once, its first row in the order', async () => {
    await fc.assert(
      fc.asyncProperty(
        initialRows,
        fc.constantFrom(...ORDERS),
        fc.constantFrom(['nlv'], ['name'], ['nlv', 'name']),
        pageSize,
        async (initial, order, distinctOn, size) => {
          const actor = await freshActor();
          const rows: ModelRow[] = [];
          for (const row of initial) rows.push(await insert(actor, row));
          const query = JSON.stringify({ ...JSON.parse(order.query ?? '{}'), distinct_on: distinctOn });
          const seen: string[] = [];
          let token: string | null = null;
          do {
            const page = await listEntities(db, actor, PORTFOLIO, {
              query,
              page_size: size,
              page_token: token,
            });
            seen.push(...page.items.map((item) => item.id as string));
            token = page.next_page_token;
          } while (token !== null);
          const value = (row: ModelRow) => JSON.stringify(distinctOn.map((p) => row[p as 'nlv' | 'name']));
          const sorted = [...rows].sort(order.compare);
          const expected = sorted.filter((row, i) => sorted.findIndex((r) => value(r) === value(row)) === i);
          expect(seen).toEqual(expected.map((row) => row.id));
        },
      ),
      { numRuns: 40 },
    );
  });
});
