import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const globalParameters = {
  advanced_settings: {
    confidence: { variant: 'select', select: { value: '95%', label: '95%' } },
    correlation_half_life: { variant: 'select', select: { value: 6, label: '6 months' } },
  },
  theme: 'default',
};
const layout = [
  { row: 1, widgets: ['exposure', 'var'] },
  { row: 2, widgets: ['stress'] },
];

describe('report templates', () => {
  const h = useTestApp();
  const { call } = h;
  const create = async (body: object) => {
    const res = await call('POST', '/v2/report_templates', body);
    expect(res.statusCode).toBe(200);
    return res.json().report_template;
  };
  const entityCount = async () => Number((await h.db('entities').count({ n: '*' }).first())!.n);

  test('create → 200 with defaults', async () => {
    const res = await call('POST', '/v2/report_templates', { name: 'Blank', status: 'BROKEN', other: 1 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      report_template: {
        id: expect.stringMatching(/^rtpl_[A-Za-z0-9]{25}$/),
        name: 'Blank',
        description: null,
        tags: [],
        status: 'OK',
        authorization: 'PRIVATE',
        categories: [],
        workspace: 'main',
        layout: [],
        global_parameters: {},
        created: expect.any(Number),
        updated: expect.any(Number),
        version: '1',
      },
    });
  });

  test('retrieve with layout and global_parameters; list without them', async () => {
    const created = await create({
      name: 'Risk pack',
      description: 'Standard #risk pack',
      authorization: 'PUBLIC',
      categories: ['Risk', 'Equity'],
      layout,
      global_parameters: globalParameters,
    });
    expect(created).toMatchObject({
      tags: ['risk'],
      authorization: 'PUBLIC',
      categories: ['Risk', 'Equity'],
      layout,
      global_parameters: globalParameters,
    });
    const got = await call('GET', `/v2/report_templates/${created.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.json()).toEqual({ report_template: created });

    const list = await call('GET', '/v2/report_templates?query=Risk');
    expect(list.statusCode).toBe(200);
    const { layout: _layout, global_parameters: _parameters, ...listed } = created;
    expect(list.json()).toEqual({ report_templates: [listed], next_page_token: null });
  });

  test.each([
    [{}, 'name is required.'],
    [{ name: 'x', authorization: 'OPEN' }, 'authorization must be PRIVATE or PUBLIC.'],
    [{ name: 'x', categories: 'Risk' }, 'categories must be an array.'],
    [{ name: 'x', categories: ['Risk', ''] }, 'categories[1] must not be empty.'],
    [{ name: 'x', categories: [3] }, 'categories[0] must be a string.'],
    [{ name: 'x', layout: { row: 1 } }, 'layout must be an array.'],
    [{ name: 'x', global_parameters: [] }, 'global_parameters must be an object.'],
    [{ name: 'x', global_parameters: 'p' }, 'global_parameters must be an object.'],
    [
      { name: 'x', global_parameters: { advanced_settings: ['confidence'] } },
      'global_parameters.advanced_settings must be an object of setting objects.',
    ],
    [
      { name: 'x', global_parameters: { advanced_settings: { confidence: '95%' } } },
      'global_parameters.advanced_settings.confidence must be an object (with variant and select).',
    ],
    [{ name: 'x', description: 5 }, 'description must be a string or null.'],
    [
      {
        name: 'x',
        global_parameters: { advanced_settings: { confidence: { select: { label: '\u0000' } } } },
      },
      'global_parameters.advanced_settings.confidence.select.label holds a NUL character or an unpaired surrogate.',
    ],
    [
      { name: 'x', layout: [[[{ a: 'ok' }]], 'fine', '\ud800'] },
      'layout[2] holds a NUL character or an unpaired surrogate.',
    ],
  ])('invalid %j → 400 with its message, nothing stored', async (body, message) => {
    const before = await entityCount();
    const res = await call('POST', '/v2/report_templates', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await entityCount()).toBe(before);
  });

  test('update (every field optional, version bumps), invalid update changes nothing, delete', async () => {
    const created = await create({
      name: 'Editable',
      categories: ['A'],
      layout,
      global_parameters: globalParameters,
    });
    const res = await call('PUT', `/v2/report_templates/${created.id}`, {
      name: 'Edited',
      categories: ['B'],
      global_parameters: { advanced_settings: {} },
    });
    expect(res.statusCode).toBe(200);
    const updated = res.json().report_template;
    expect(updated).toEqual({
      ...created,
      name: 'Edited',
      categories: ['B'],
      global_parameters: { advanced_settings: {} },
      updated: expect.any(Number),
      version: '2',
    });

    const bad = await call('PUT', `/v2/report_templates/${created.id}`, { name: 'No', layout: 'x' });
    expect(bad.json()).toEqual({ code: 400, message: 'layout must be an array.' });
    expect((await call('GET', `/v2/report_templates/${created.id}`)).json().report_template).toEqual(updated);

    const deleted = await call('DELETE', `/v2/report_templates/${created.id}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ report_template: { deleted: true, id: created.id, name: 'Edited' } });
    expect((await call('GET', `/v2/report_templates/${created.id}`)).json()).toEqual({
      code: 404,
      message: `Report template ${created.id} not found.`,
    });
  });

  test('workspaces separate templates; another account sees 404', async () => {
    const inOps = await create({ name: 'Ops template', workspace: 'ops' });
    expect(inOps.workspace).toBe('ops');
    expect((await call('GET', `/v2/report_templates/${inOps.id}`)).statusCode).toBe(404);
    expect((await call('GET', `/v2/report_templates/${inOps.id}?workspace=ops`)).statusCode).toBe(200);
    expect(
      (await call('GET', '/v2/report_templates?workspace=ops'))
        .json()
        .report_templates.map((r: { id: string }) => r.id),
    ).toEqual([inOps.id]);

    const other = await createTestAccount(h.db);
    const notFound = { code: 404, message: `Report template ${inOps.id} not found.` };
    expect(
      (await call('GET', `/v2/report_templates/${inOps.id}?workspace=ops`, undefined, other)).json(),
    ).toEqual(notFound);
    expect(
      (await call('PUT', `/v2/report_templates/${inOps.id}?workspace=ops`, { name: 'hijack' }, other)).json(),
    ).toEqual(notFound);
    expect(
      (await call('DELETE', `/v2/report_templates/${inOps.id}?workspace=ops`, undefined, other)).json(),
    ).toEqual(notFound);
    expect((await call('GET', '/v2/report_templates?workspace=ops', undefined, other)).json()).toEqual({
      report_templates: [],
      next_page_token: null,
    });
  });

  test('every action is in the audit trail as ReportTemplate', async () => {
    const created = await create({ name: 'Audited', layout });
    await call('GET', `/v2/report_templates/${created.id}`);
    await call('PUT', `/v2/report_templates/${created.id}`, { name: 'Audited 2' });
    await call('DELETE', `/v2/report_templates/${created.id}`);
    const records = await h.db('audit_logs').where({ entity_id: created.id }).orderBy('created_at');
    expect(records.map((r) => [r.operation, r.entity_type, r.entity_name])).toEqual([
      ['CREATE', 'ReportTemplate', 'Audited'],
      ['VIEW', 'ReportTemplate', 'Audited'],
      ['UPDATE', 'ReportTemplate', 'Audited 2'],
      ['DELETE', 'ReportTemplate', 'Audited 2'],
    ]);
    expect(records[0].after).toMatchObject({ name: 'Audited', layout, status: 'OK' });
    expect(records[2].before.name).toBe('Audited');
  });

  test('the OpenAPI document lists the template routes, the extensions marked', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    expect(Object.keys(doc.paths['/report_templates']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/report_templates/{id}']).sort()).toEqual(['delete', 'get', 'put']);
    expect(doc.paths['/report_templates'].post.summary).toContain('Extension');
    expect(doc.paths['/report_templates/{id}'].put.summary).toContain('Extension');
  });
});
