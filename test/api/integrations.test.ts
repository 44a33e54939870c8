import { newId } from '../../engine/platform/ids';
import { INTEGRATION } from '../../engine/kinds/integration';
import { createTestAccount, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/** The integrations extension: create, list, retrieve, delete; FILE_RECEIVED trigger references. */
describe('integrations', () => {
  let other: TestAccount;

  const h = useTestApp({
    setUp: async ({ db }) => {
      other = await createTestAccount(db);
    },
  });
  const { call } = h;
  const create = async (body: object, who = h.account) => {
    const res = await call('POST', '/v2/integrations', body, who);
    expect(res.statusCode).toBe(200);
    return res.json().integration;
  };
  const payloadsOf = async (integrationId: string) =>
    Number(
      (await h.db('webhook_payloads').where({ integration_id: integrationId }).count({ n: '*' }).first())!.n,
    );
  const workers = () => {
    const [s, e] = [newId('worker'), newId('worker')];
    return [
      { id: s, name: 'Start', type: 'STARTER', next: [e] },
      { id: e, name: 'End', type: 'ENDER' },
    ];
  };

  test('create → 200 with id, type, webhook path (no key); tags normalised; unknown keys ignored', async () => {
    const res = await call('POST', '/v2/integrations', {
      name: 'Orders feed',
      description: 'From the OMS #Orders',
      tags: ['Inbound'],
      type: 'WEBHOOK',
      workspace: 'ignored',
      unknown_top_level: true,
    });
    expect(res.statusCode).toBe(200);
    const { integration } = res.json();
    expect(integration).toEqual({
      id: expect.stringMatching(/^intg_[A-Za-z0-9]{25}$/),
      name: 'Orders feed',
      description: 'From the OMS #Orders',
      tags: ['inbound', 'orders'],
      type: 'WEBHOOK',
      webhook_path: `/v2/integrations/${integration.id}/webhook`,
      secrets_used: [],
      // HTTP and SMTP integrations' settings, none of a webhook's.
      base_url: null,
      headers: null,
      timeout_ms: null,
      allowed_methods: null,
      allow_http: null,
      host: null,
      port: null,
      security: null,
      username: null,
      password_secret: null,
      from: null,
      created: expect.any(Number),
      updated: expect.any(Number),
      version: '1',
    });
    expect(res.body).not.toContain(h.account.key.auth_token);
    const audit = await h.db('audit_logs').where({ entity_id: integration.id, operation: 'CREATE' }).first();
    expect(audit).toMatchObject({ entity_type: 'Integration', source: 'API', entity_name: 'Orders feed' });
  });

  test.each([
    [{ name: 'No type' }, 'type is required.'],
    [{ name: 'Mail', type: 'EMAIL' }, 'type must be one of WEBHOOK, HTTP, SMTP.'],
    [{ name: 'Lower', type: 'webhook' }, 'type must be one of WEBHOOK, HTTP, SMTP.'],
    [{ name: 'List', type: ['WEBHOOK'] }, 'type must be one of WEBHOOK, HTTP, SMTP.'],
    [{ type: 'WEBHOOK' }, 'name is required.'],
    [{ name: 'x'.repeat(201), type: 'WEBHOOK' }, 'name must be at most 200 characters long.'],
    [{ name: 'Bad tags', type: 'WEBHOOK', tags: 7 }, 'tags must be an array, a string or null.'],
  ])('create %j → 400', async (body, message) => {
    const before = await h.db('entities').where({ kind: 'integration' }).count({ n: '*' });
    const res = await call('POST', '/v2/integrations', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await h.db('entities').where({ kind: 'integration' }).count({ n: '*' })).toEqual(before);
  });

  test('retrieve → 200; unknown or another account’s id → 404; a malformed id → 400', async () => {
    const created = await create({ name: 'Retrievable', type: 'WEBHOOK' });
    const res = await call('GET', `/v2/integrations/${created.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ integration: created });
    const unknown = newId(INTEGRATION.idPrefix!);
    const missing = await call('GET', `/v2/integrations/${unknown}`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ code: 404, message: `Integration ${unknown} not found.` });
    const malformed = await call('GET', '/v2/integrations/intg_nope');
    expect(malformed.json()).toEqual({
      code: 400,
      message: 'id must be an id: intg_ and 25 letters or digits.',
    });
    expect((await call('GET', `/v2/integrations/${created.id}`, undefined, other)).statusCode).toBe(404);
  });

  test('list: most recent first, paging, query by id, tag and name; another account sees none', async () => {
    const fresh = await createTestAccount(h.db);
    const names = ['Alpha feed', 'Beta feed', 'Gamma hook'];
    const made = [];
    for (const name of names) {
      made.push(await create({ name, type: 'WEBHOOK', tags: name.startsWith('G') ? 'special' : '' }, fresh));
    }
    const page1 = await call('GET', '/v2/integrations?page_size=2', undefined, fresh);
    expect(page1.statusCode).toBe(200);
    expect(page1.json().integrations.map((i: { name: string }) => i.name)).toEqual([
      'Gamma hook',
      'Beta feed',
    ]);
    expect(page1.json().integrations[0]).toEqual(made[2]);
    const token = page1.json().next_page_token;
    expect(typeof token).toBe('string');
    const page2 = await call(
      'GET',
      `/v2/integrations?page_size=2&page_token=${encodeURIComponent(token)}`,
      undefined,
      fresh,
    );
    expect(page2.json()).toEqual({ integrations: [made[0]], next_page_token: null });

    const byId = await call('GET', `/v2/integrations?query=${made[1].id}`, undefined, fresh);
    expect(byId.json().integrations.map((i: { id: string }) => i.id)).toEqual([made[1].id]);
    const byTag = await call(
      'GET',
      `/v2/integrations?query=${encodeURIComponent('#special')}`,
      undefined,
      fresh,
    );
    expect(byTag.json().integrations.map((i: { id: string }) => i.id)).toEqual([made[2].id]);
    const byName = await call('GET', '/v2/integrations?query=Beta', undefined, fresh);
    expect(byName.json().integrations.map((i: { id: string }) => i.id)).toEqual([made[1].id]);
    // Account-scoped: the same list from any workspace.
    const fromOps = await call('GET', '/v2/integrations?workspace=ops', undefined, fresh);
    expect(fromOps.json().integrations).toHaveLength(3);

    const stranger = await createTestAccount(h.db);
    const none = await call('GET', '/v2/integrations', undefined, stranger);
    expect(none.json()).toEqual({ integrations: [], next_page_token: null });
    expect((await call('GET', '/v2/integrations?page_size=0', undefined, fresh)).statusCode).toBe(400);
  });

  test('delete → 200; then 404; another account cannot delete; stored payloads go with it', async () => {
    const created = await create({ name: 'Short lived', type: 'WEBHOOK' });
    const denied = await call('DELETE', `/v2/integrations/${created.id}`, undefined, other);
    expect(denied.statusCode).toBe(404);
    expect((await call('GET', `/v2/integrations/${created.id}`)).statusCode).toBe(200);

    const posted = await h.app.inject({
      method: 'POST',
      url: `/v2/integrations/${created.id}/webhook?key=${h.account.key.auth_token}`,
      payload: { hello: 'world' },
    });
    expect(posted.statusCode).toBe(200);
    expect(await payloadsOf(created.id)).toBe(1);

    const res = await call('DELETE', `/v2/integrations/${created.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ integration: { deleted: true, id: created.id, name: 'Short lived' } });
    expect((await call('GET', `/v2/integrations/${created.id}`)).statusCode).toBe(404);
    expect((await call('DELETE', `/v2/integrations/${created.id}`)).statusCode).toBe(404);
    expect((await call('DELETE', '/v2/integrations/intg_bad')).statusCode).toBe(400);
    expect(await payloadsOf(created.id)).toBe(0);
    const audit = await h
      .db('audit_logs')
      .where({ entity_id: created.id, operation: 'DELETE', account_id: h.account.accountId })
      .orderBy('created_at')
      .select('entity_type', 'status', 'activity');
    expect(audit).toEqual([
      { entity_type: 'Integration', status: 'SUCCESS', activity: 'Deleted integration Short lived' },
      // The repeated delete (404).
      { entity_type: 'Integration', status: 'ERROR', activity: expect.stringMatching(/^Failed DELETE/) },
    ]);
  });

  describe('FILE_RECEIVED trigger_config', () => {
    test('needs integration_id naming an integration of the account', async () => {
      const mine = await create({ name: 'Mine', type: 'WEBHOOK' });
      const theirs = await create({ name: 'Theirs', type: 'WEBHOOK' }, other);
      const base = { name: 'Triggered', trigger_type: 'FILE_RECEIVED', workers: workers() };
      const required =
        'trigger_config.integration_id is required for FILE_RECEIVED: the id (intg_…) of an integration of the account.';
      for (const [trigger_config, message] of [
        [undefined, required],
        [{}, required],
        [{ integration_id: 'intg_short' }, required],
        [{ integration_id: 42 }, required],
        [
          { integration_id: theirs.id },
          `trigger_config.integration_id: integration ${theirs.id} not found in this account.`,
        ],
      ] as const) {
        const res = await call('POST', '/v2/workflows', { ...base, trigger_config });
        expect([trigger_config, res.statusCode, res.json()]).toEqual([
          trigger_config,
          400,
          { code: 400, message },
        ]);
      }
      const ok = await call('POST', '/v2/workflows', {
        ...base,
        trigger_config: { integration_id: mine.id },
      });
      expect(ok.statusCode).toBe(200);
      expect(ok.json().workflow).toMatchObject({
        trigger_type: 'FILE_RECEIVED',
        trigger_config: { integration_id: mine.id },
      });
    });

    test('a PUT switching to FILE_RECEIVED is checked against the stored config', async () => {
      const mine = await create({ name: 'For update', type: 'WEBHOOK' });
      const stored = await call('POST', '/v2/workflows', { name: 'Manual first', workers: workers() });
      const id = stored.json().workflow.id;
      const bad = await call('PUT', `/v2/workflows/${id}`, { trigger_type: 'FILE_RECEIVED' });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().message).toMatch(/^trigger_config\.integration_id is required/);
      const good = await call('PUT', `/v2/workflows/${id}`, {
        trigger_type: 'FILE_RECEIVED',
        trigger_config: { integration_id: mine.id },
        trigger_enabled: true,
      });
      expect(good.statusCode).toBe(200);
      expect(good.json().workflow).toMatchObject({
        trigger_type: 'FILE_RECEIVED',
        trigger_config: { integration_id: mine.id },
        trigger_enabled: true,
      });
    });

    test('deleting an integration a workflow (enabled or not) names → 409, until the trigger changes', async () => {
      const feed = await create({ name: 'Referenced', type: 'WEBHOOK' });
      const trigger = { trigger_type: 'FILE_RECEIVED', trigger_config: { integration_id: feed.id } };
      const enabled = (
        await call('POST', '/v2/workflows', {
          name: 'Enabled',
          ...trigger,
          trigger_enabled: true,
          workers: workers(),
        })
      ).json().workflow;
      const disabled = (
        await call('POST', '/v2/workflows', {
          name: 'Disabled',
          ...trigger,
          trigger_enabled: false,
          workspace: 'ops',
          workers: workers(),
        })
      ).json().workflow;

      const refused = await call('DELETE', `/v2/integrations/${feed.id}`);
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toEqual({
        code: 409,
        message: `Integration ${feed.id} triggers 2 workflow(s) (${enabled.id}, ${disabled.id}); change their trigger or delete them first.`,
      });
      expect((await call('GET', `/v2/integrations/${feed.id}`)).statusCode).toBe(200);

      await call('PUT', `/v2/workflows/${enabled.id}`, { trigger_type: 'MANUAL', trigger_config: {} });
      const stillOne = await call('DELETE', `/v2/integrations/${feed.id}`);
      expect(stillOne.statusCode).toBe(409);
      expect(stillOne.json().message).toContain(`triggers 1 workflow(s) (${disabled.id})`);

      expect((await call('DELETE', `/v2/workflows/${disabled.id}?workspace=ops`)).statusCode).toBe(200);
      expect((await call('DELETE', `/v2/integrations/${feed.id}`)).statusCode).toBe(200);
    });
  });

  test('the OpenAPI document describes every integrations route, marked as extensions', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/v2/openapi.json' });
    expect(res.statusCode).toBe(200);
    const { paths, components } = res.json();
    for (const [path, method] of [
      ['/integrations', 'post'],
      ['/integrations', 'get'],
      ['/integrations/{id}', 'get'],
      ['/integrations/{id}', 'delete'],
      ['/integrations/{id}/webhook', 'post'],
    ]) {
      const operation = paths[path!]?.[method!];
      expect([path, method, operation?.tags]).toEqual([path, method, ['Integrations']]);
      if (!path!.endsWith('/webhook')) expect(operation.summary).toMatch(/\(extension\)$/);
    }
    expect(paths['/integrations'].post.description).toMatch(/^Extension:/);
    const webhook = paths['/integrations/{id}/webhook'].post;
    expect(webhook.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'key', in: 'query', required: false })]),
    );
    expect(webhook.requestBody.required).toBe(true);
    expect(webhook.requestBody.content['application/json'].schema.description).toMatch(
      /^REQUIRED\. A JSON object with at least one key/,
    );
    expect(Object.keys(webhook.responses).sort()).toEqual(['200', '400', '401', '404', '413', '429']);
    const schemas = Object.values(components.schemas) as Array<{ title?: string; properties?: object }>;
    expect(schemas.find((schema) => schema.title === 'Integration')?.properties).toHaveProperty(
      'webhook_path',
    );
    expect(paths['/integrations/{id}'].delete.responses).toHaveProperty('409');
  });
});
