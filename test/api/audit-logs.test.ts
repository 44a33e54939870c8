import fc from 'fast-check';
import type { Principal } from '../../engine/platform/principal';
import { diffSnapshots, type Snapshot } from '../../engine/store/audit-log-queries';
import { recordAudit } from '../../engine/store/audit-trail';
import { newId } from '../../engine/platform/ids';
import { createTestAccount, createTestSubUser, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

type Caller = { bearer: string };
type Entry = Record<string, unknown> & { id: string; operation: string; entity_id: string | null };

const CHROME_ON_WINDOWS =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const NOT_FOUND = { code: 404, message: 'Audit log not found.' };
const FORBIDDEN_LIST = {
  code: 403,
  message: 'Forbidden: reading the audit log needs the permission VIEW USER or VIEW ALL USERS.',
};
const FORBIDDEN_ALL = {
  code: 403,
  message: "Forbidden: reading every user's audit log needs the permission VIEW ALL USERS.",
};

describe('audit logs', () => {
  // This suite's main account has a known owner email, so it is created in setUp rather than being
  // the fixture's own account (h.account, unused here).
  let account: TestAccount;
  const ownerEmail = `owner-${Math.random().toString(36).slice(2)}@example.com`;
  let viewer: Awaited<ReturnType<typeof createTestSubUser>>;
  let auditor: Awaited<ReturnType<typeof createTestSubUser>>;
  let nobody: Awaited<ReturnType<typeof createTestSubUser>>;
  let other: TestAccount;

  const h = useTestApp({
    setUp: async ({ db }) => {
      account = await createTestAccount(db, ownerEmail);
      viewer = await createTestSubUser(db, account.accountId, ['VIEW USER']);
      auditor = await createTestSubUser(db, account.accountId, ['VIEW ALL USERS']);
      nobody = await createTestSubUser(db, account.accountId, []);
      other = await createTestAccount(db);
    },
  });

  const call = (
    method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH',
    url: string,
    who: Caller = account,
    payload?: object,
  ) =>
    h.app.inject({
      method,
      url,
      payload,
      headers: { authorization: who.bearer, 'user-agent': CHROME_ON_WINDOWS },
    });

  const listAll = async (url: string, who: Caller = account): Promise<Entry[]> => {
    const res = await call('GET', url, who);
    expect(res.statusCode).toBe(200);
    return res.json().audit_logs;
  };

  const countRecords = async (accountId: string) =>
    Number((await h.db('audit_logs').where({ account_id: accountId }).count({ n: '*' }).first())!.n);

  /** Rows written directly, at a chosen instant (the table refuses only UPDATE, DELETE and TRUNCATE). */
  const insertRecord = async (
    owner: { accountId: string; userId: string },
    createdAt: string,
    extra: Record<string, unknown> = {},
  ): Promise<string> => {
    const id = (extra.id as string | undefined) ?? newId('auditLog');
    await h.db('audit_logs').insert({
      id,
      account_id: owner.accountId,
      user_id: owner.userId,
      created_at: createdAt,
      activity: 'Inserted by the test',
      operation: 'VIEW',
      source: 'API',
      status: 'SUCCESS',
      ...extra,
    });
    return id;
  };

  describe('entry shape and scope', () => {
    let ownerCreate: Entry;
    let viewerCreate: Entry;

    test('list → {audit_logs, next_page_token}; each entry has exactly the fields of the spec', async () => {
      expect((await call('POST', '/v2/workspaces', account, { name: 'audited-desk' })).statusCode).toBe(200);
      const res = await call('GET', '/v2/audit_logs?page_size=1');
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(['audit_logs', 'next_page_token']);
      // Creating the account wrote nothing: this create is the account's only record.
      expect(body.next_page_token).toBeNull();
      [ownerCreate] = body.audit_logs;
      expect(ownerCreate).toEqual({
        id: expect.stringMatching(/^audl_[A-Za-z0-9]{25}$/),
        created: expect.any(Number),
        updated: ownerCreate.created,
        activity: 'Created workspace audited-desk',
        operation: 'CREATE',
        source: 'API',
        status: 'SUCCESS',
        entity_id: 'audited-desk',
        entity_type: 'Workspace',
        entity_name: 'audited-desk',
        workspace: 'audited-desk',
        workflow_id: null,
        workflow_name: null,
        workflow_execution_id: null,
        user_email: ownerEmail,
        proxy_admin_email: null,
        credential_id: account.key.account_sid,
        credential_type: 'API_KEY',
        ip: '127.0.0.1',
        user_agent: CHROME_ON_WINDOWS,
        user_agent_pretty: 'Windows - Chrome',
        location: { country: '', region: '', city: '', cityLatLong: '' },
        viewed_ids: null,
      });
      expect(Number.isInteger(ownerCreate.created)).toBe(true);
      expect(Math.abs((ownerCreate.created as number) - Date.now() / 1000)).toBeLessThan(5);
    });

    test('a batch VIEW shows its viewed_ids', async () => {
      expect((await call('GET', '/v2/workspaces?query=audited')).statusCode).toBe(200);
      const [latest] = await listAll('/v2/audit_logs?page_size=1');
      expect(latest).toMatchObject({
        operation: 'VIEW',
        entity_type: 'Workspace',
        viewed_ids: ['audited-desk'],
      });
    });

    test('reading the trail writes no record (list, all, retrieve)', async () => {
      const before = await countRecords(account.accountId);
      expect((await call('GET', '/v2/audit_logs')).statusCode).toBe(200);
      expect((await call('GET', '/v2/audit_logs/all')).statusCode).toBe(200);
      expect((await call('GET', `/v2/audit_logs/${ownerCreate.id}`)).statusCode).toBe(200);
      expect(await countRecords(account.accountId)).toBe(before);
    });

    test("the owner's list holds every user's records; a sub-user's only their own", async () => {
      expect((await call('POST', '/v2/workspaces', viewer, { name: 'viewer-desk' })).statusCode).toBe(200);
      const ownerSees = await listAll('/v2/audit_logs?page_size=100');
      viewerCreate = ownerSees.find((e) => e.entity_id === 'viewer-desk' && e.operation === 'CREATE')!;
      expect(viewerCreate).toMatchObject({
        user_email: viewer.user.email,
        credential_id: viewer.key.account_sid,
      });
      expect(ownerSees.map((e) => e.id)).toContain(ownerCreate.id);

      const viewerSees = await listAll('/v2/audit_logs?page_size=100', viewer);
      expect(viewerSees.map((e) => e.id)).toEqual([viewerCreate.id]);
    });

    test('retrieve follows the same scope: another user’s record is 404 for a sub-user', async () => {
      const own = await call('GET', `/v2/audit_logs/${viewerCreate.id}`, viewer);
      expect(own.statusCode).toBe(200);
      expect(own.json().entity).toEqual(viewerCreate);
      const owners = await call('GET', `/v2/audit_logs/${ownerCreate.id}`, viewer);
      expect(owners.statusCode).toBe(404);
      expect(owners.json()).toEqual(NOT_FOUND);
      const byOwner = await call('GET', `/v2/audit_logs/${viewerCreate.id}`);
      expect(byOwner.statusCode).toBe(200);
      expect(byOwner.json().entity).toEqual(viewerCreate);
    });

    test("another account's records are never visible, even to its owner", async () => {
      const res = await call('GET', `/v2/audit_logs/${ownerCreate.id}`, other);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual(NOT_FOUND);
      const ids = [
        ...(await listAll('/v2/audit_logs?page_size=100', other)),
        ...(await listAll('/v2/audit_logs/all?page_size=100', other)),
      ].map((e) => e.id);
      expect(ids).not.toContain(ownerCreate.id);
      expect(ids).not.toContain(viewerCreate.id);
    });

    test('/audit_logs/all: every record of the account for VIEW ALL USERS; the route wins over /:id', async () => {
      const everything = await listAll('/v2/audit_logs/all?page_size=100', auditor);
      expect(everything.map((e) => e.id)).toEqual(expect.arrayContaining([ownerCreate.id, viewerCreate.id]));
      const rows = await h
        .db('audit_logs')
        .where({ account_id: account.accountId })
        .count({ n: '*' })
        .first();
      expect(everything).toHaveLength(Number(rows!.n));
      expect(await listAll('/v2/audit_logs/all?page_size=100')).toEqual(everything);
      // The auditor holds VIEW ALL USERS only: /audit_logs still lists only the auditor's own records.
      expect(await listAll('/v2/audit_logs', auditor)).toEqual([]);
    });

    test('a record listed by /all opens by id for VIEW ALL USERS', async () => {
      const res = await call('GET', `/v2/audit_logs/${viewerCreate.id}`, auditor);
      expect(res.statusCode).toBe(200);
      expect(res.json().entity.id).toBe(viewerCreate.id);
    });

    test('/audit_logs/all without VIEW ALL USERS → 403 naming it, and a DENIED record', async () => {
      const res = await call('GET', '/v2/audit_logs/all', viewer);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual(FORBIDDEN_ALL);
      // The viewer may read the DENIED record in their own trail.
      const [latest] = await listAll('/v2/audit_logs?page_size=1', viewer);
      expect(latest).toMatchObject({
        operation: 'VIEW',
        status: 'DENIED',
        source: 'API',
        entity_type: 'AuditLog',
        entity_id: null,
        activity: 'Denied GET /v2/audit_logs/all (403)',
        user_email: viewer.user.email,
      });
    });

    test('no audit permission → 403 on list, all and retrieve, each recorded DENIED', async () => {
      const before = await countRecords(account.accountId);
      const list = await call('GET', '/v2/audit_logs', nobody);
      expect(list.statusCode).toBe(403);
      expect(list.json()).toEqual(FORBIDDEN_LIST);
      const all = await call('GET', '/v2/audit_logs/all', nobody);
      expect(all.statusCode).toBe(403);
      expect(all.json()).toEqual(FORBIDDEN_ALL);
      const one = await call('GET', `/v2/audit_logs/${ownerCreate.id}`, nobody);
      expect(one.statusCode).toBe(403);
      expect(one.json()).toEqual(FORBIDDEN_LIST);
      const denied = await h
        .db('audit_logs')
        .where({ user_id: nobody.user.id })
        .select('status', 'operation', 'entity_id', 'activity');
      expect(denied).toHaveLength(3);
      expect(denied).toEqual(
        expect.arrayContaining([
          {
            status: 'DENIED',
            operation: 'VIEW',
            entity_id: null,
            activity: 'Denied GET /v2/audit_logs (403)',
          },
          {
            status: 'DENIED',
            operation: 'VIEW',
            entity_id: null,
            activity: 'Denied GET /v2/audit_logs/all (403)',
          },
          {
            status: 'DENIED',
            operation: 'VIEW',
            entity_id: ownerCreate.id,
            activity: `Denied GET /v2/audit_logs/${ownerCreate.id} (403)`,
          },
        ]),
      );
      expect(await countRecords(account.accountId)).toBe(before + 3);
    });

    test('unknown id → 404 "Audit log not found." and an ERROR record', async () => {
      const missing = 'audl_0000000000000000000000000';
      const res = await call('GET', `/v2/audit_logs/${missing}`);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual(NOT_FOUND);
      const [latest] = await listAll('/v2/audit_logs?page_size=1');
      expect(latest).toMatchObject({
        operation: 'VIEW',
        status: 'ERROR',
        entity_type: 'AuditLog',
        entity_id: missing,
        activity: `Failed GET /v2/audit_logs/${missing} (404)`,
        user_email: ownerEmail,
      });
    });
  });

  describe('period filters', () => {
    let periodAccount: TestAccount;
    const ids: Record<string, string> = {};
    // Labelled instants around 2024-01-01 (UTC); microseconds test the inclusive end of a second.
    const instants: Record<string, string> = {
      G: '2023-12-31T23:59:59.999999Z',
      A: '2024-01-01T00:00:00.000000Z',
      B: '2024-01-01T10:00:00.000000Z',
      C: '2024-01-01T10:00:00.999500Z',
      D: '2024-01-01T10:00:01.000000Z',
      E: '2024-01-01T23:59:59.999999Z',
      F: '2024-01-02T00:00:00.000000Z',
    };
    const labels = (entries: Entry[]) =>
      entries.map((e) => Object.keys(ids).find((label) => ids[label] === e.id) ?? e.id).join('');

    beforeAll(async () => {
      periodAccount = await createTestAccount(h.db);
      for (const [label, instant] of Object.entries(instants)) {
        ids[label] = await insertRecord(
          { accountId: periodAccount.accountId, userId: periodAccount.ownerId },
          instant,
        );
      }
    });

    const at = (value: string) => encodeURIComponent(value);

    test.each([
      ['no period: every record, most recent first', '', 'FEDCBAG'],
      ['date_time=YYYYMMDD: the whole day', 'date_time=20240101', 'EDCBA'],
      ['start only (day): from its first instant on', 'start=20240101', 'FEDCBA'],
      ['end only (day): up to its last instant', 'end=20240101', 'EDCBAG'],
      ['start and end (days)', 'start=20231231&end=20240101', 'EDCBAG'],
      ['date_time with a time: that whole second', `date_time=${at('20240101 10:00:00')}`, 'CB'],
      ['start and end with times', `start=${at('20240101 10:00:00')}&end=${at('20240101 10:00:00')}`, 'CB'],
      ['start only (time)', `start=${at('20240101 10:00:01')}`, 'FED'],
      ['end only (time)', `end=${at('20240101 09:59:59')}`, 'AG'],
      ['a space sent as + decodes too', 'date_time=20240101+10:00:01', 'D'],
      ['a day with nothing in it', 'date_time=20240105', ''],
    ])('%s', async (_name, query, expected) => {
      for (const path of ['/v2/audit_logs', '/v2/audit_logs/all']) {
        const entries = await listAll(`${path}?page_size=100&${query}`, periodAccount);
        expect(labels(entries)).toBe(expected);
      }
    });

    test.each([
      ['start=2024-01-01', 'start must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), got "2024-01-01".'],
      [
        `start=${encodeURIComponent('2024-01-01T10:00:00Z')}`,
        'start must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), got "2024-01-01T10:00:00Z".',
      ],
      ['end=20240230', 'end must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), got "20240230".'],
      [
        'date_time=20240101T10:00:00',
        'date_time must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), got "20240101T10:00:00".',
      ],
      [
        `date_time=${encodeURIComponent('20240101 10:00')}`,
        'date_time must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), got "20240101 10:00".',
      ],
      [
        `start=${encodeURIComponent('20240101 24:00:00')}`,
        'start has an invalid time of day: "20240101 24:00:00".',
      ],
      ['end=1704067200', 'end must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), got "1704067200".'],
      ['start=20240102&end=20240101', 'start must not be after end.'],
      ['date_time=20240101&start=20240101', 'date_time sets start and end: do not combine it with them.'],
    ])('%s → 400', async (query, message) => {
      // The main account: its ERROR records must not land in the period account's trail.
      for (const path of ['/v2/audit_logs', '/v2/audit_logs/all']) {
        const res = await call('GET', `${path}?${query}`);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({ code: 400, message });
      }
    });

    test.each(['page_size=0', 'page_size=101', 'page_size=abc', 'page_token=garbage'])(
      '%s → 400',
      async (query) => {
        const res = await call('GET', `/v2/audit_logs?${query}`);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({ code: 400, message: expect.any(String) });
      },
    );

    test('a page_token with an impossible position → 400, not 500', async () => {
      const token = Buffer.from(JSON.stringify([1e300, 'audl_x'])).toString('base64url');
      const res = await call('GET', `/v2/audit_logs?page_token=${token}`);
      expect(res.statusCode).toBe(400);
    });
  });

  describe('paging', () => {
    let pagingAccount: TestAccount;
    let expected: string[];

    beforeAll(async () => {
      pagingAccount = await createTestAccount(h.db);
      const owner = { accountId: pagingAccount.accountId, userId: pagingAccount.ownerId };
      const rows: Array<[string, string]> = [];
      for (let i = 0; i < 18; i += 1) {
        rows.push([newId('auditLog'), new Date(Date.UTC(2024, 2, 1, 0, 0, i)).toISOString()]);
      }
      // Ties on created_at are ordered by id; digit-only suffixes sort alike under every collation.
      for (const n of [1, 2, 3])
        rows.push([`audl_${String(n).padStart(25, '0')}`, '2024-03-01T00:00:05.500Z']);
      // Rows a millisecond cursor could not tell apart: only microseconds separate them.
      for (const us of ['000100', '000200', '000300', '000400']) {
        rows.push([newId('auditLog'), `2024-03-01T00:00:30.${us}Z`]);
      }
      for (const [id, createdAt] of rows) await insertRecord(owner, createdAt, { id });
      const micros = (iso: string) => {
        const fraction = (/\.(\d+)Z$/.exec(iso)?.[1] ?? '').padEnd(6, '0');
        return Date.parse(iso.replace(/\.\d+Z$/, 'Z')) * 1000 + Number(fraction);
      };
      expected = [...rows]
        .sort(([idA, atA], [idB, atB]) => micros(atB) - micros(atA) || (idA < idB ? 1 : idA > idB ? -1 : 0))
        .map(([id]) => id);
      expect(expected).toHaveLength(25);
    });

    const pageThrough = async (path: string, pageSize: number | null) => {
      const seen: string[] = [];
      const sizes: number[] = [];
      let token: string | null = null;
      do {
        const params = new URLSearchParams();
        if (pageSize !== null) params.set('page_size', String(pageSize));
        if (token) params.set('page_token', token);
        const res = await call('GET', `${path}?${params.toString()}`, pagingAccount);
        expect(res.statusCode).toBe(200);
        const body: { audit_logs: Entry[]; next_page_token: string | null } = res.json();
        seen.push(...body.audit_logs.map((e) => e.id));
        sizes.push(body.audit_logs.length);
        token = body.next_page_token;
      } while (token !== null && sizes.length < 100);
      return { seen, sizes };
    };

    test('default page size is 10: pages of 10, 10, 5, most recent first, then a null token', async () => {
      const { seen, sizes } = await pageThrough('/v2/audit_logs', null);
      expect(sizes).toEqual([10, 10, 5]);
      expect(seen).toEqual(expected);
    });

    test('one record per page crosses every tie and microsecond without duplicates or gaps', async () => {
      for (const path of ['/v2/audit_logs', '/v2/audit_logs/all']) {
        const { seen, sizes } = await pageThrough(path, 1);
        expect(new Set(seen).size).toBe(seen.length);
        expect(seen).toEqual(expected);
        expect(sizes).toEqual(Array(25).fill(1));
      }
    });

    test('records written while a client pages neither repeat nor shift the pages', async () => {
      const first = await call('GET', '/v2/audit_logs?page_size=7', pagingAccount);
      const body = first.json();
      await insertRecord(
        { accountId: pagingAccount.accountId, userId: pagingAccount.ownerId },
        new Date().toISOString(),
      );
      const rest = await call(
        'GET',
        `/v2/audit_logs?page_size=100&page_token=${encodeURIComponent(body.next_page_token)}`,
        pagingAccount,
      );
      const ids = [...body.audit_logs, ...rest.json().audit_logs].map((e: Entry) => e.id);
      expect(ids).toEqual(expected);
      expect(rest.json().next_page_token).toBeNull();
    });
  });

  describe('retrieve: snapshots and diff', () => {
    const recordOf = async (entityId: string, operation: string) =>
      (await listAll('/v2/audit_logs?page_size=100')).find(
        (e) => e.entity_id === entityId && e.operation === operation,
      )!;

    test('a real PUT /v2/workspaces/:id: modified fields with before/after; name and created unchanged', async () => {
      await call('POST', '/v2/workspaces', account, { name: 'diff-desk', description: 'Before text' });
      const put = await call('PUT', '/v2/workspaces/diff-desk', account, {
        name: 'diff-desk',
        description: 'After text',
      });
      expect(put.statusCode).toBe(200);
      const update = await recordOf('diff-desk', 'UPDATE');
      const res = await call('GET', `/v2/audit_logs/${update.id}`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(['after', 'before', 'diff_formatted', 'entity']);
      expect(body.entity).toEqual(update);
      expect(body.before).toEqual({
        name: 'diff-desk',
        description: 'Before text',
        created: expect.any(Number),
        updated: expect.any(Number),
        version: '1',
      });
      expect(body.after).toEqual({ ...put.json().workspace });
      expect(body.diff_formatted.added).toEqual({});
      expect(body.diff_formatted.removed).toEqual({});
      const { modified } = body.diff_formatted;
      expect(modified.description).toEqual({ before: 'Before text', after: 'After text' });
      expect(modified.version).toEqual({ before: '1', after: '2' });
      // `updated` is in seconds: it appears only when the second changed between create and update.
      const expectedKeys =
        body.before.updated === body.after.updated
          ? ['description', 'version']
          : ['description', 'updated', 'version'];
      expect(Object.keys(modified).sort()).toEqual(expectedKeys);
    });

    test('CREATE: before is {} and every field is added; DELETE: after is {} and every field removed', async () => {
      expect((await call('DELETE', '/v2/workspaces/diff-desk')).statusCode).toBe(200);
      const history = (await listAll('/v2/audit_logs?page_size=100')).filter(
        (e) => e.entity_id === 'diff-desk' && e.status === 'SUCCESS',
      );
      expect(history.map((e) => e.operation)).toEqual(['DELETE', 'UPDATE', 'CREATE']);

      const created = (await call('GET', `/v2/audit_logs/${history[2]!.id}`)).json();
      expect(created.before).toEqual({});
      expect(created.after).toMatchObject({ name: 'diff-desk', description: 'Before text', version: '1' });
      expect(created.diff_formatted).toEqual({ added: created.after, removed: {}, modified: {} });

      const deleted = (await call('GET', `/v2/audit_logs/${history[0]!.id}`)).json();
      expect(deleted.after).toEqual({});
      expect(deleted.before).toMatchObject({ name: 'diff-desk', description: 'After text', version: '2' });
      expect(deleted.diff_formatted).toEqual({ added: {}, removed: deleted.before, modified: {} });
    });

    test('a record without snapshots (VIEW) answers {} for both and an empty diff', async () => {
      const view = (await listAll('/v2/audit_logs?page_size=100')).find((e) => e.viewed_ids !== null)!;
      const body = (await call('GET', `/v2/audit_logs/${view.id}`)).json();
      expect(body).toEqual({
        entity: view,
        diff_formatted: { added: {}, removed: {}, modified: {} },
        before: {},
        after: {},
      });
    });

    test('nested values: a changed array or object is reported whole, key order alone is no change', async () => {
      const id = await insertRecord(
        { accountId: account.accountId, userId: account.ownerId },
        '2024-06-01T00:00:00Z',
        {
          operation: 'UPDATE',
          before: JSON.stringify({
            name: 'p',
            securities: [{ id: '1', symbol: 'AAPL', quantity: 1 }],
            meta: { a: 1, b: { c: [1, 2] } },
            gone: null,
          }),
          after: JSON.stringify({
            name: 'p',
            securities: [{ id: '1', symbol: 'AAPL', quantity: 2 }],
            meta: { b: { c: [1, 2] }, a: 1 },
            fresh: 0,
          }),
        },
      );
      const body = (await call('GET', `/v2/audit_logs/${id}`)).json();
      expect(body.diff_formatted).toEqual({
        added: { fresh: 0 },
        removed: { gone: null },
        modified: {
          securities: {
            before: [{ id: '1', symbol: 'AAPL', quantity: 1 }],
            after: [{ id: '1', symbol: 'AAPL', quantity: 2 }],
          },
        },
      });
    });

    test('tokens, secrets and env_vars never appear, even in a row that kept them', async () => {
      const id = await insertRecord(
        { accountId: account.accountId, userId: account.ownerId },
        '2024-06-02T00:00:00Z',
        {
          operation: 'UPDATE',
          entity_type: 'UserApp',
          before: JSON.stringify({
            name: 'app',
            auth_token: 'SECRET-1',
            env_vars: { DB_URL: 'SECRET-2' },
            config: { client_secret: 'SECRET-3', region: 'eu' },
          }),
          after: JSON.stringify({
            name: 'app',
            config: { region: 'us', api_key: 'SECRET-4', nested: [{ password: 'SECRET-5', keep: true }] },
            Authorization: 'Bearer SECRET-6',
          }),
        },
      );
      const res = await call('GET', `/v2/audit_logs/${id}`);
      expect(res.statusCode).toBe(200);
      expect(res.body).not.toMatch(/SECRET|auth_token|env_vars|client_secret|api_key|password|Authorization/);
      const body = res.json();
      expect(body.before).toEqual({ name: 'app', config: { region: 'eu' } });
      expect(body.after).toEqual({ name: 'app', config: { region: 'us', nested: [{ keep: true }] } });
      expect(body.diff_formatted).toEqual({
        added: {},
        removed: {},
        modified: { config: { before: { region: 'eu' }, after: { region: 'us', nested: [{ keep: true }] } } },
      });
    });

    test('snapshots written by recordAudit keep no secret either', async () => {
      const principal: Principal = {
        accountId: account.accountId,
        userId: account.ownerId,
        userEmail: ownerEmail,
        isOwner: true,
        permissions: ['VIEW USER', 'VIEW ALL USERS'],
        credentialId: account.key.account_sid,
        credentialType: 'API_KEY',
      };
      const id = await recordAudit(
        h.db,
        { principal, source: 'API', ip: null, userAgent: null },
        {
          operation: 'CREATE',
          activity: 'Created user app',
          entityId: 'uapp_0000000000000000000000001',
          entityType: 'UserApp',
          after: { name: 'x', env_vars: { KEY: 'SECRET-7' }, webhook_token: 'SECRET-8' },
        },
      );
      const res = await call('GET', `/v2/audit_logs/${id}`);
      expect(res.body).not.toMatch(/SECRET/);
      expect(res.json().after).toEqual({ name: 'x' });
      expect(res.json().entity.user_agent_pretty).toBe('Unknown OS - Unknown Browser');
    });
  });

  describe('diffSnapshots', () => {
    const json = fc.jsonValue();
    const snapshot = fc.dictionary(fc.string({ maxLength: 6 }), json, {
      maxKeys: 8,
    }) as fc.Arbitrary<Snapshot>;

    test('applying the diff to before gives after', () => {
      fc.assert(
        fc.property(snapshot, snapshot, (before, after) => {
          const { added, removed, modified } = diffSnapshots(before, after);
          for (const [field, change] of Object.entries(modified))
            expect(change.before).toEqual(before[field]);
          // fromEntries, not assignment: generated keys include "__proto__".
          const rebuilt = Object.fromEntries([
            ...Object.entries(before)
              .filter(([field]) => !Object.hasOwn(removed, field))
              .map(([field, value]) => [
                field,
                Object.hasOwn(modified, field) ? modified[field]!.after : value,
              ]),
            ...Object.entries(added),
          ]);
          expect(rebuilt).toEqual(after);
        }),
      );
    });

    test('a snapshot compared with itself, keys reordered at any depth, has an empty diff', () => {
      const reorder = (value: unknown): unknown => {
        if (Array.isArray(value)) return value.map(reorder);
        if (value && typeof value === 'object') {
          return Object.fromEntries(
            Object.entries(value)
              .reverse()
              .map(([k, v]) => [k, reorder(v)]),
          );
        }
        return value;
      };
      fc.assert(
        fc.property(snapshot, (value) => {
          expect(diffSnapshots(value, reorder(value) as Snapshot)).toEqual({
            added: {},
            removed: {},
            modified: {},
          });
        }),
      );
    });

    test('null counts as present; a value turning null is modified, not removed', () => {
      expect(diffSnapshots({ a: null, b: 1 }, { a: 0, b: null })).toEqual({
        added: {},
        removed: {},
        modified: { a: { before: null, after: 0 }, b: { before: 1, after: null } },
      });
      expect(diffSnapshots({ list: [1, 2] }, { list: [2, 1] }).modified).toEqual({
        list: { before: [1, 2], after: [2, 1] },
      });
    });

    test('regression: a field named __proto__ (valid JSON) is diffed as a field, not a prototype', () => {
      const diff = diffSnapshots({}, JSON.parse('{"__proto__": {"polluted": true}}') as Snapshot);
      expect(Object.keys(diff.added)).toEqual(['__proto__']);
      expect(JSON.stringify(diff.added)).toBe('{"__proto__":{"polluted":true}}');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  });

  describe('immutability', () => {
    let record: Entry;

    beforeAll(async () => {
      record = (await listAll('/v2/audit_logs?page_size=1'))[0]!;
    });

    test.each(['POST', 'PUT', 'DELETE', 'PATCH'] as const)(
      '%s on the audit routes → 405 JSON, Allow: GET, HEAD',
      async (method) => {
        for (const path of ['/v2/audit_logs', '/v2/audit_logs/all', `/v2/audit_logs/${record.id}`]) {
          const res = await call(method, path, account, method === 'DELETE' ? undefined : { activity: 'x' });
          expect(res.statusCode).toBe(405);
          expect(res.headers.allow).toBe('GET, HEAD');
          expect(res.headers['content-type']).toMatch(/^application\/json/);
          expect(res.json()).toEqual({
            code: 405,
            message: `Method ${method} is not allowed on ${path}: use GET, HEAD.`,
          });
        }
        const after = await call('GET', `/v2/audit_logs/${record.id}`);
        expect(after.json().entity).toEqual(record);
      },
    );

    test('the database refuses UPDATE, DELETE and TRUNCATE', async () => {
      const before = await countRecords(account.accountId);
      await expect(
        h.db('audit_logs').where({ id: record.id }).update({ activity: 'tampered' }),
      ).rejects.toThrow(/audit log records are immutable/);
      await expect(h.db('audit_logs').where({ id: record.id }).delete()).rejects.toThrow(
        /audit log records are immutable/,
      );
      await expect(h.db.raw('TRUNCATE audit_logs')).rejects.toThrow(/audit log records are immutable/);
      expect(await countRecords(account.accountId)).toBe(before);
      expect((await h.db('audit_logs').where({ id: record.id }).first()).activity).toBe(record.activity);
    });

    test('the OpenAPI document lists the three routes, GET only, with the entry schema', async () => {
      const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
      for (const path of ['/audit_logs', '/audit_logs/all', '/audit_logs/{id}']) {
        expect(Object.keys(doc.paths[path])).toEqual(['get']);
        expect(doc.paths[path].get.responses['200']).toBeDefined();
        expect(doc.paths[path].get.responses['403']).toBeDefined();
      }
      expect(doc.paths['/audit_logs/{id}'].get.responses['404']).toBeDefined();
      const resolve = (ref: string) => doc.components.schemas[ref.replace('#/components/schemas/', '')];
      const list = doc.paths['/audit_logs'].get.responses['200'].content['application/json'].schema;
      const entry = resolve(list.properties.audit_logs.items.$ref);
      expect(entry.title).toBe('AuditLog');
      expect(Object.keys(entry.properties).sort()).toEqual(
        [
          'id',
          'created',
          'updated',
          'activity',
          'operation',
          'source',
          'status',
          'entity_id',
          'entity_type',
          'entity_name',
          'workspace',
          'workflow_id',
          'workflow_name',
          'workflow_execution_id',
          'user_email',
          'proxy_admin_email',
          'credential_id',
          'credential_type',
          'ip',
          'user_agent',
          'user_agent_pretty',
          'location',
          'viewed_ids',
        ].sort(),
      );
      const detail = resolve(
        doc.paths['/audit_logs/{id}'].get.responses['200'].content['application/json'].schema.$ref,
      );
      expect(Object.keys(detail.properties).sort()).toEqual(['after', 'before', 'diff_formatted', 'entity']);
      expect(doc.paths['/audit_logs'].get.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
        'date_time',
        'end',
        'page_size',
        'page_token',
        'start',
      ]);
    });
  });
});
