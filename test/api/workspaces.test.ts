import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

describe('workspaces', () => {
  const h = useTestApp();

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, who = h.account) =>
    h.app.inject({
      method,
      url,
      payload,
      headers: { authorization: who.bearer, 'user-agent': 'curl/8.5.0' },
    });

  const auditOf = (entityId: string) =>
    h.db('audit_logs').where({ account_id: h.account.accountId, entity_id: entityId }).orderBy('created_at');

  test('create → 200 with the workspace, and a CREATE audit record', async () => {
    const res = await call('POST', '/v2/workspaces', {
      name: 'research',
      description: 'Quant research',
      ignored_key: 1,
    });
    expect(res.statusCode).toBe(200);
    const { workspace } = res.json();
    expect(workspace).toEqual({
      name: 'research',
      description: 'Quant research',
      created: expect.any(Number),
      updated: expect.any(Number),
      version: '1',
    });
    expect(Math.abs(workspace.created - Date.now() / 1000)).toBeLessThan(5);
    const [record] = await auditOf('research');
    expect(record).toMatchObject({
      operation: 'CREATE',
      source: 'API',
      status: 'SUCCESS',
      entity_type: 'Workspace',
      entity_name: 'research',
      workspace: 'research',
      credential_id: h.account.key.account_sid,
      credential_type: 'API_KEY',
      user_agent: 'curl/8.5.0',
      user_agent_pretty: 'Unknown OS - curl',
      location: { country: '', region: '', city: '', cityLatLong: '' },
    });
    expect(record.id).toMatch(/^audl_[A-Za-z0-9]{25}$/);
    expect(record.after).toMatchObject({ name: 'research', description: 'Quant research' });
  });

  test('description defaults to null; duplicate name → 409 and nothing changes', async () => {
    const res = await call('POST', '/v2/workspaces', { name: 'ops' });
    expect(res.json().workspace.description).toBeNull();
    const again = await call('POST', '/v2/workspaces', { name: 'ops', description: 'other' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ code: 409, message: 'Workspace ops already exists.' });
    expect((await call('GET', '/v2/workspaces/ops')).json().workspace.description).toBeNull();
  });

  test.each([
    [{ name: 'has space' }, 'name must be a workspace name without spaces.'],
    [{ name: '' }, 'name must be a workspace name without spaces.'],
    [{ name: 'x'.repeat(201) }, 'name must be a workspace name without spaces.'],
  ])('invalid create %j → 400', async (body, message) => {
    const before = await h.db('workspaces').count({ n: '*' }).first();
    const res = await call('POST', '/v2/workspaces', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await h.db('workspaces').count({ n: '*' }).first()).toEqual(before);
  });

  test('retrieve writes a VIEW record; unknown → 404', async () => {
    const res = await call('GET', '/v2/workspaces/research');
    expect(res.statusCode).toBe(200);
    expect(res.json().workspace.name).toBe('research');
    const records = await auditOf('research');
    expect(records.map((r) => r.operation)).toEqual(['CREATE', 'VIEW']);
    const missing = await call('GET', '/v2/workspaces/nope');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ code: 404, message: 'Workspace nope not found.' });
    const [failure] = await h.db('audit_logs').where({ entity_id: 'nope' });
    expect(failure).toMatchObject({ status: 'ERROR', operation: 'VIEW', entity_type: 'Workspace' });
  });

  test('update changes the description and version; the name cannot change', async () => {
    const res = await call('PUT', '/v2/workspaces/research', {
      name: 'research',
      description: 'Renamed desk',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().workspace).toMatchObject({
      name: 'research',
      description: 'Renamed desk',
      version: '2',
    });
    const rename = await call('PUT', '/v2/workspaces/research', { name: 'other', description: 'x' });
    expect(rename.statusCode).toBe(400);
    expect(rename.json()).toEqual({ code: 400, message: 'Workspace name cannot be changed.' });
    const missingName = await call('PUT', '/v2/workspaces/research', { description: 'x' });
    expect(missingName.statusCode).toBe(400);
    expect((await call('GET', '/v2/workspaces/research')).json().workspace.description).toBe('Renamed desk');
    const update = (await auditOf('research')).find((r) => r.operation === 'UPDATE');
    expect(update.before).toMatchObject({ description: 'Quant research', version: '1' });
    expect(update.after).toMatchObject({ description: 'Renamed desk', version: '2' });
  });

  test('list: query filters by name prefix, paging by cursor, most recent first', async () => {
    for (const name of ['desk-a', 'desk-b', 'desk-c', 'desk-d', 'desk-e']) {
      await call('POST', '/v2/workspaces', { name });
    }
    const first = await call('GET', '/v2/workspaces?query=desk-&page_size=2');
    expect(first.statusCode).toBe(200);
    expect(first.json().workspaces.map((w: { name: string }) => w.name)).toEqual(['desk-e', 'desk-d']);
    const token = first.json().next_page_token;
    expect(typeof token).toBe('string');
    const second = await call(
      'GET',
      `/v2/workspaces?query=desk-&page_size=2&page_token=${encodeURIComponent(token)}`,
    );
    expect(second.json().workspaces.map((w: { name: string }) => w.name)).toEqual(['desk-c', 'desk-b']);
    const third = await call(
      'GET',
      `/v2/workspaces?query=desk-&page_size=2&page_token=${encodeURIComponent(second.json().next_page_token)}`,
    );
    expect(third.json()).toEqual({
      workspaces: [expect.objectContaining({ name: 'desk-a' })],
      next_page_token: null,
    });
    const view = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, operation: 'VIEW' })
      .whereNotNull('viewed_ids')
      .orderBy('created_at', 'desc')
      .first();
    expect(view.viewed_ids).toEqual(['desk-a']);
  });

  test.each(['page_size=0', 'page_size=101', 'page_size=abc', 'page_token=garbage'])(
    'list with %s → 400',
    async (q) => {
      const res = await call('GET', `/v2/workspaces?${q}`);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe(400);
    },
  );

  test('delete keeps the objects and writes a DELETE record; main cannot be deleted', async () => {
    const kept = (
      await call('POST', '/v2/portfolios', { name: 'kept', securities: [], workspace: 'ops' })
    ).json().portfolio;
    const res = await call('DELETE', '/v2/workspaces/ops');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ workspace: { deleted: true, name: 'ops' } });
    expect((await call('GET', '/v2/workspaces/ops')).statusCode).toBe(404);
    const stillThere = await call('GET', `/v2/portfolios/${kept.id}?workspace=ops`);
    expect(stillThere.json().portfolio).toMatchObject({ id: kept.id, workspace: 'ops' });
    expect((await auditOf('ops')).map((r) => r.operation)).toContain('DELETE');
    const main = await call('DELETE', '/v2/workspaces/main');
    expect(main.statusCode).toBe(400);
    expect((await call('DELETE', '/v2/workspaces/ops')).statusCode).toBe(404);
  });

  test("another account's workspace is 404, never visible", async () => {
    const other = await createTestAccount(h.db);
    const res = await call('GET', '/v2/workspaces/research', undefined, other);
    expect(res.statusCode).toBe(404);
    const list = await call('GET', '/v2/workspaces', undefined, other);
    expect(list.json().workspaces.map((w: { name: string }) => w.name)).toEqual(['main']);
    expect(
      (await call('PUT', '/v2/workspaces/research', { name: 'research', description: 'hijack' }, other))
        .statusCode,
    ).toBe(404);
    expect((await call('DELETE', '/v2/workspaces/research', undefined, other)).statusCode).toBe(404);
  });

  test('audit records are immutable, even to SQL', async () => {
    const [record] = await auditOf('research');
    await expect(
      h.db('audit_logs').where({ id: record.id }).update({ activity: 'tampered' }),
    ).rejects.toThrow(/immutable/);
    await expect(h.db('audit_logs').where({ id: record.id }).delete()).rejects.toThrow(/immutable/);
  });
});
