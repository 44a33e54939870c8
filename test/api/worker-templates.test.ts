import { createHash } from 'node:crypto';
import type { Database } from '../../engine/db/database';
import { NotFound } from '../../engine/errors';
import { loadWorkerTemplate } from '../../engine/worker-templates/worker-template-store';
import { createTestAccount, createTestApp, type TestAccount, type TestApp } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

const SCRIPT = 'function main(args) {\n  return { echoed: args.script_inputs };\n}\n';

/** The form of the hosted product's sample worker: nested settings must come back unchanged. */
const SAMPLE_FORM_INPUTS = [
  {
    id: 'hello_world_input',
    name: 'Hello World',
    type: 'assembler',
    mandatory: true,
    fields: [
      {
        id: 'phrase',
        name: 'Phrase',
        variants: { metaString: { type: 'metaString', maxLength: 250, filterType: ['number', 'string'] } },
      },
    ],
  },
  { name: 'threshold', type: 'number', default: 0.5 },
];

describe('worker templates', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let t: TestApp;
  let account: TestAccount;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    t = await createTestApp(db);
    account = await createTestAccount(db);
  });
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, who = account) =>
    t.app.inject({ method, url, payload, headers: { authorization: who.bearer } });
  const publish = async (extra: object = {}, who = account) => {
    const res = await call(
      'POST',
      '/v2/worker_templates',
      { name: 'Template', script: SCRIPT, ...extra },
      who,
    );
    expect(res.statusCode).toBe(200);
    return res.json().worker_template;
  };
  const count = async () =>
    Number((await db('entities').where({ kind: 'worker_template' }).count({ n: '*' }))[0]!.n);

  test('publish → 200 with the defaults', async () => {
    const res = await call('POST', '/v2/worker_templates', { name: 'Echo', script: SCRIPT });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      worker_template: {
        id: expect.stringMatching(/^wtpl_[A-Za-z0-9]{25}$/),
        name: 'Echo',
        description: null,
        tags: [],
        category: null,
        visible: true,
        type: 'BASIC',
        script_runtime: 'javascript',
        script_entry_point: 'main',
        run_locally: true,
        container_status: 'SUCCESS',
        form_inputs: [],
        script: SCRIPT,
        created: expect.any(Number),
        updated: expect.any(Number),
        version: '1',
      },
    });
  });

  test('publish as the hosted product tool does: its extra keys ignored, script_source accepted', async () => {
    const res = await call('POST', '/v2/worker_templates', {
      id: '',
      name: 'Hello World',
      description: 'Says hello #sample',
      category: 'Sample',
      run_locally: false,
      visible: false,
      version: 'v1',
      icon: 'data',
      type: 'FORKER',
      script_runtime: 'typescript',
      script_entry_point: 'run',
      tags: ['Greeting'],
      sort_index: 1,
      ports: [{ value: 'in', label: 'IN', type: 'input' }],
      form_inputs: SAMPLE_FORM_INPUTS,
      form_outputs: [],
      container_status: 'ERROR',
      script_source: 'export function run(args: { n: number }) { return { n: args.n }; }',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().worker_template).toEqual({
      id: expect.stringMatching(/^wtpl_[A-Za-z0-9]{25}$/),
      name: 'Hello World',
      description: 'Says hello #sample',
      tags: ['greeting', 'sample'],
      category: 'Sample',
      visible: false,
      type: 'FORKER',
      script_runtime: 'typescript',
      script_entry_point: 'run',
      run_locally: true,
      container_status: 'SUCCESS',
      form_inputs: SAMPLE_FORM_INPUTS,
      script: 'export function run(args: { n: number }) { return { n: args.n }; }',
      created: expect.any(Number),
      updated: expect.any(Number),
      version: '1',
    });
    const both = await publish({ script: 'function main() {}', script_source: 'ignored' });
    expect(both.script).toBe('function main() {}');
  });

  test.each(['STARTER', 'BASIC', 'ENDER', 'FORKER', 'BARRIER', 'CONDITIONAL'])(
    'type %s is accepted',
    async (type) => {
      expect((await publish({ type })).type).toBe(type);
    },
  );

  const scriptMessage = 'script is required: the source text of the worker, a non-empty string.';
  const valid = { name: 'Bad', script: SCRIPT };
  test.each([
    [{ script: SCRIPT }, 'name is required: a string of 1 to 200 characters.'],
    [{ name: 'No script' }, scriptMessage],
    [{ ...valid, script: '  \n ' }, scriptMessage],
    [{ ...valid, script: 42 }, scriptMessage],
    [{ ...valid, script: null, script_source: null }, scriptMessage],
    [
      { ...valid, script_runtime: 'python3.11' },
      'script_runtime "python3.11" is not supported: scripts run in a JavaScript sandbox, use javascript or typescript.',
    ],
    [
      { ...valid, script_runtime: 'JavaScript' },
      'script_runtime "JavaScript" is not supported: scripts run in a JavaScript sandbox, use javascript or typescript.',
    ],
    [{ ...valid, script_runtime: 3 }, 'script_runtime must be javascript or typescript.'],
    [
      { ...valid, type: 'WORKER' },
      'type must be one of STARTER, BASIC, ENDER, FORKER, BARRIER, CONDITIONAL.',
    ],
    [{ ...valid, type: 'basic' }, 'type must be one of STARTER, BASIC, ENDER, FORKER, BARRIER, CONDITIONAL.'],
    [{ ...valid, visible: 'yes' }, 'visible must be a boolean.'],
    [{ ...valid, category: 5 }, 'category must be a string of at most 200 characters.'],
    [{ ...valid, category: 'c'.repeat(201) }, 'category must be a string of at most 200 characters.'],
    [
      { ...valid, script_entry_point: 'main()' },
      'script_entry_point must be a function name (letters, digits, _ or $).',
    ],
    [
      { ...valid, script_entry_point: '' },
      'script_entry_point must be a function name (letters, digits, _ or $).',
    ],
    [{ ...valid, form_inputs: {} }, 'form_inputs must be an array of objects.'],
    [{ ...valid, form_inputs: [1] }, 'form_inputs[0] must be an object.'],
    [{ ...valid, form_inputs: [[]] }, 'form_inputs[0] must be an object.'],
    [
      { ...valid, form_inputs: [{ type: 'string' }] },
      'form_inputs[0] needs an id or a name (a non-empty string).',
    ],
    [
      { ...valid, form_inputs: [{ id: '', name: 3, type: 'x' }] },
      'form_inputs[0] needs an id or a name (a non-empty string).',
    ],
    [{ ...valid, form_inputs: [{ id: 'a' }] }, 'form_inputs[0].type is required (a non-empty string).'],
    [
      {
        ...valid,
        form_inputs: [
          { id: 'a', type: 'x' },
          { name: 'a', type: 'y' },
        ],
      },
      'form_inputs[1]: the key "a" is used by another input.',
    ],
    [
      { ...valid, form_inputs: Array.from({ length: 101 }, (_, i) => ({ id: `i${i}`, type: 'string' })) },
      'form_inputs holds at most 100 inputs, got 101.',
    ],
    [{ ...valid, description: 'd'.repeat(501) }, 'description must be at most 500 characters.'],
  ])('invalid publish %j → 400 with its message, nothing stored', async (body, message) => {
    const before = await count();
    const res = await call('POST', '/v2/worker_templates', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await count()).toBe(before);
  });

  test('a script may take up to 1 MiB of UTF-8, counted in bytes', async () => {
    const big = await createTestApp(db, { maxPayloadBytes: 4 * 1024 * 1024 });
    try {
      const post = (script: string) =>
        big.app.inject({
          method: 'POST',
          url: '/v2/worker_templates',
          headers: { authorization: account.bearer },
          payload: { name: 'Big', script },
        });
      const limit = 1024 * 1024;
      const exact = '//' + 'x'.repeat(limit - 2);
      expect((await post(exact)).statusCode).toBe(200);
      const message = { code: 400, message: 'script must be at most 1048576 bytes.' };
      expect((await post(exact + 'x')).json()).toEqual(message);
      // Half as many characters as bytes: the limit is on bytes, not characters.
      expect((await post('//' + 'é'.repeat(limit / 2))).json()).toEqual(message);
    } finally {
      await big.close();
    }
  });

  test('publishing never runs the script on the host', async () => {
    const script = 'globalThis.__publishedScriptRan = true;\nprocess.exit(3);\nfunction main() {}\n';
    const created = await publish({ script });
    expect((globalThis as Record<string, unknown>).__publishedScriptRan).toBeUndefined();
    expect((await call('GET', `/v2/worker_templates/${created.id}`)).json().worker_template.script).toBe(
      script,
    );
  });

  test('retrieve returns form_inputs and script, alike from every workspace; unknown → 404', async () => {
    const created = await publish({ name: 'Readable', form_inputs: SAMPLE_FORM_INPUTS });
    for (const query of ['', '?workspace=main', '?workspace=research']) {
      const res = await call('GET', `/v2/worker_templates/${created.id}${query}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ worker_template: created });
    }
    expect(created.form_inputs).toEqual(SAMPLE_FORM_INPUTS);
    const missing = 'wtpl_' + 'A'.repeat(25);
    expect((await call('GET', `/v2/worker_templates/${missing}`)).json()).toEqual({
      code: 404,
      message: `Worker template ${missing} not found.`,
    });
  });

  test('republish: every field optional, version increases, left-out fields kept', async () => {
    const created = await publish({
      name: 'V1',
      category: 'Risk',
      form_inputs: [{ id: 'a', type: 'string' }],
    });
    const url = `/v2/worker_templates/${created.id}`;

    const same = await call('PUT', url, {});
    expect(same.statusCode).toBe(200);
    expect(same.json().worker_template).toEqual({
      ...created,
      updated: expect.any(Number),
      version: '2',
    });

    const res = await call('PUT', url, {
      name: 'V2',
      script_source: 'function main() { return { v: 2 }; }',
      type: 'ENDER',
      category: null,
      form_inputs: [{ name: 'b', type: 'number' }],
      visible: false,
      name_unknown: 'ignored',
    });
    expect(res.json().worker_template).toMatchObject({
      id: created.id,
      name: 'V2',
      script: 'function main() { return { v: 2 }; }',
      type: 'ENDER',
      category: null,
      visible: false,
      script_runtime: 'javascript',
      script_entry_point: 'main',
      form_inputs: [{ name: 'b', type: 'number' }],
      version: '3',
    });

    const nulls = await call('PUT', url, {
      name: null,
      script: null,
      type: null,
      visible: null,
      form_inputs: null,
    });
    expect(nulls.json().worker_template).toMatchObject({
      name: 'V2',
      script: 'function main() { return { v: 2 }; }',
      type: 'ENDER',
      visible: false,
      form_inputs: [{ name: 'b', type: 'number' }],
      version: '4',
    });

    for (const [body, message] of [
      [
        { script_runtime: 'python3.11' },
        'script_runtime "python3.11" is not supported: scripts run in a JavaScript sandbox, use javascript or typescript.',
      ],
      [{ script: '' }, scriptMessage],
      [{ form_inputs: [{ id: 'x' }] }, 'form_inputs[0].type is required (a non-empty string).'],
    ] as const) {
      expect((await call('PUT', url, body)).json()).toEqual({ code: 400, message });
    }
    expect((await call('GET', url)).json().worker_template.version).toBe('4');
    const missing = 'wtpl_' + 'B'.repeat(25);
    expect((await call('PUT', `/v2/worker_templates/${missing}`, { name: 'x' })).json()).toEqual({
      code: 404,
      message: `Worker template ${missing} not found.`,
    });
  });

  test('list leaves out form_inputs and script; id mode, name prefix; workspace ignored', async () => {
    const other = await createTestAccount(db);
    const a = await publish({ name: 'Loader one', form_inputs: [{ id: 'a', type: 'x' }] }, other);
    const b = await publish({ name: 'Loader two' }, other);
    const c = await publish({ name: 'Reporter' }, other);
    const list = (query = '') => call('GET', `/v2/worker_templates${query}`, undefined, other);
    const all = await list();
    expect(all.statusCode).toBe(200);
    expect(all.json().worker_templates.map((w: { id: string }) => w.id)).toEqual([c.id, b.id, a.id]);
    expect(all.json().next_page_token).toBeNull();
    expect(Object.keys(all.json().worker_templates[2]).sort()).toEqual(
      [
        'id',
        'name',
        'description',
        'tags',
        'category',
        'visible',
        'type',
        'script_runtime',
        'script_entry_point',
        'run_locally',
        'container_status',
        'created',
        'updated',
        'version',
      ].sort(),
    );
    expect((await list('?workspace=anything')).json()).toEqual(all.json());
    expect((await list(`?query=${a.id}`)).json().worker_templates.map((w: { id: string }) => w.id)).toEqual([
      a.id,
    ]);
    expect(
      (await list('?query=Loader')).json().worker_templates.map((w: { name: string }) => w.name),
    ).toEqual(['Loader two', 'Loader one']);
    const projected = await list(
      `?query=${encodeURIComponent(JSON.stringify({ projection: ['id', 'script'], filters: [['type', '=', 'BASIC']] }))}`,
    );
    // A projection cannot bring back what lists leave out.
    expect(projected.json().worker_templates).toEqual([{ id: c.id }, { id: b.id }, { id: a.id }]);
  });

  test('delete → {worker_template: {deleted, id, name}}; another account gets 404 everywhere', async () => {
    const created = await publish({ name: 'Disposable' });
    const url = `/v2/worker_templates/${created.id}`;
    const other = await createTestAccount(db);
    expect((await call('GET', url, undefined, other)).statusCode).toBe(404);
    expect((await call('PUT', url, { name: 'hijack' }, other)).statusCode).toBe(404);
    expect((await call('DELETE', url, undefined, other)).statusCode).toBe(404);
    expect((await call('GET', '/v2/worker_templates', undefined, other)).json().worker_templates).toEqual([]);

    const res = await call('DELETE', url);
    expect(res.json()).toEqual({ worker_template: { deleted: true, id: created.id, name: 'Disposable' } });
    expect((await call('GET', url)).statusCode).toBe(404);
    expect((await call('DELETE', url)).statusCode).toBe(404);
  });

  test('the workflow engine loads a template of the account, typed; another account: not found', async () => {
    const created = await publish({
      name: 'Runnable',
      type: 'STARTER',
      script_entry_point: 'start',
      form_inputs: SAMPLE_FORM_INPUTS,
    });
    await expect(loadWorkerTemplate(db, account.accountId, created.id)).resolves.toEqual({
      id: created.id,
      name: 'Runnable',
      type: 'STARTER',
      script: SCRIPT,
      scriptRuntime: 'javascript',
      scriptEntryPoint: 'start',
      formInputs: SAMPLE_FORM_INPUTS,
    });
    const other = await createTestAccount(db);
    await expect(loadWorkerTemplate(db, other.accountId, created.id)).rejects.toBeInstanceOf(NotFound);
  });

  test('audit trail: WorkerTemplate records for each action', async () => {
    const created = await publish({ name: 'Audited' });
    const url = `/v2/worker_templates/${created.id}`;
    await call('GET', url);
    await call('PUT', url, { name: 'Audited 2', script: 'function main() { return 1; }' });
    await call('DELETE', url);
    const records = await db('audit_logs').where({ entity_id: created.id }).orderBy('created_at');
    expect(records.map((r) => [r.operation, r.entity_type, r.entity_name, r.workspace])).toEqual([
      ['CREATE', 'WorkerTemplate', 'Audited', null],
      ['VIEW', 'WorkerTemplate', 'Audited', null],
      ['UPDATE', 'WorkerTemplate', 'Audited 2', null],
      ['DELETE', 'WorkerTemplate', 'Audited 2', null],
    ]);
    // Scripts are kept in the trail as a digest (up to 1 MB each otherwise).
    const sha256 = (text: string) => createHash('sha256').update(JSON.stringify(text)).digest('hex');
    expect(records[2].before.script).toEqual({
      sha256: sha256(SCRIPT),
      bytes: JSON.stringify(SCRIPT).length,
    });
    expect(records[2].after.script.sha256).toBe(sha256('function main() { return 1; }'));

    await call('POST', '/v2/worker_templates', {
      name: 'Fails',
      script_runtime: 'python3.11',
      script: SCRIPT,
    });
    const [failure] = await db('audit_logs')
      .where({ account_id: account.accountId, status: 'ERROR', entity_type: 'WorkerTemplate' })
      .orderBy('created_at', 'desc');
    expect(failure).toMatchObject({ operation: 'CREATE', source: 'API' });
  });

  test('the OpenAPI document lists the routes, the publishing ones marked as extensions', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    expect(Object.keys(doc.paths['/worker_templates']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/worker_templates/{id}']).sort()).toEqual(['delete', 'get', 'put']);
    expect(doc.paths['/worker_templates'].post.description).toMatch(/^Extension/);
    expect(doc.paths['/worker_templates/{id}'].put.description).toMatch(/^Extension/);
    expect(doc.paths['/worker_templates/{id}'].delete.description).toMatch(/^Extension/);
    const schema = Object.values(doc.components.schemas).find(
      (s) => (s as { title?: string }).title === 'WorkerTemplate',
    ) as { properties: Record<string, unknown> };
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['form_inputs', 'script', 'container_status', 'run_locally']),
    );
  });
});
