import { readTemplateFolder } from '../../engine/worker-templates/template-folder';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { listAccounts } from '../../engine/identity/account-store';
import { connectDatabase } from '../../engine/platform/database';
import { NotFound } from '../../engine/platform/errors';
import {
  BUILTIN_TEMPLATES_DIR,
  builtinTemplateId,
  type PublishedBuiltin,
  publishBuiltinTemplates,
} from '../../engine/worker-templates/builtin-templates';
import { SYSTEM_ACCOUNT_ID } from '../../engine/identity/system-account';
import { loadWorkerTemplate, templateSandboxLimits } from '../../engine/kinds/worker-template';
import { runScript } from '../../plugins/sandbox/script-sandbox';
import { createTestAccount, createTestApp, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/** The stress test built-in's id, pinned: changing it would break every workflow that names it. */
const PINNED_STRESS_TEST_ID = 'wtpl_osPPdJ2bhgnusJnmlmqNvSB71';

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
  const h = useTestApp();
  const { call } = h;
  const publish = async (extra: object = {}, who = h.account) => {
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
    Number((await h.db('entities').where({ kind: 'worker_template' }).count({ n: '*' }))[0]!.n);

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
        requirements: [],
        environment: null,
        memory_limit_mb: null,
        timeout_seconds: null,
        builtin: false,
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
      requirements: [],
      environment: null,
      memory_limit_mb: null,
      timeout_seconds: null,
      builtin: false,
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
    [{ script: SCRIPT }, 'name is required.'],
    [{ name: 'No script' }, scriptMessage],
    [{ ...valid, script: '  \n ' }, 'script must be the source text of the worker, a non-empty string.'],
    [{ ...valid, script: 42 }, scriptMessage],
    [{ ...valid, script: null, script_source: null }, scriptMessage],
    // Another Python version is refused, naming the accepted ones.
    [
      { ...valid, script_runtime: 'python3.12' },
      'script_runtime must be one of the accepted runtimes: javascript, typescript, python3.11.',
    ],
    [
      { ...valid, script_runtime: 'JavaScript' },
      'script_runtime must be one of the accepted runtimes: javascript, typescript, python3.11.',
    ],
    [
      { ...valid, script_runtime: 3 },
      'script_runtime must be one of the accepted runtimes: javascript, typescript, python3.11.',
    ],
    [
      { ...valid, requirements: ['numpy==2.2.6'] },
      'requirements are for Python templates: set script_runtime to python3.11.',
    ],
    [
      { ...valid, type: 'WORKER' },
      'type must be one of STARTER, BASIC, ENDER, FORKER, BARRIER, CONDITIONAL.',
    ],
    [{ ...valid, type: 'basic' }, 'type must be one of STARTER, BASIC, ENDER, FORKER, BARRIER, CONDITIONAL.'],
    [{ ...valid, visible: 'yes' }, 'visible must be a boolean or null.'],
    [{ ...valid, category: 5 }, 'category must be a string or null.'],
    [{ ...valid, category: 'c'.repeat(201) }, 'category must be at most 200 characters long.'],
    [
      { ...valid, script_entry_point: 'main()' },
      'script_entry_point must be a function name (letters, digits, _ or $).',
    ],
    [
      { ...valid, script_entry_point: '' },
      'script_entry_point must be a function name (letters, digits, _ or $).',
    ],
    [{ ...valid, form_inputs: {} }, 'form_inputs must be an array or null.'],
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
    [{ ...valid, form_inputs: [{ id: 'a' }] }, 'form_inputs[0].type is required.'],
    [
      { ...valid, form_inputs: [{ id: 'a', type: 'x\u0000y' }] },
      'form_inputs[0].type must be text (without NUL characters).',
    ],
    [{ ...valid, category: 'x\u0000y' }, 'category must be text (without NUL characters).'],
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
      'form_inputs must hold at most 100 items.',
    ],
    [{ ...valid, description: 'd'.repeat(501) }, 'description must be at most 500 characters long.'],
  ])('invalid publish %j → 400 with its message, nothing stored', async (body, message) => {
    const before = await count();
    const res = await call('POST', '/v2/worker_templates', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await count()).toBe(before);
  });

  test('a script may take up to 1 MiB of UTF-8, counted in bytes', async () => {
    const big = await createTestApp(h.db, { maxPayloadBytes: 4 * 1024 * 1024 });
    try {
      const post = (script: string) =>
        big.app.inject({
          method: 'POST',
          url: '/v2/worker_templates',
          headers: { authorization: h.account.bearer },
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
        { script_runtime: 'python3.12' },
        'script_runtime must be one of the accepted runtimes: javascript, typescript, python3.11.',
      ],
      [{ script: '' }, 'script must not be empty.'],
      [{ form_inputs: [{ id: 'x' }] }, 'form_inputs[0].type is required.'],
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

  test('versions: newest first; one with its script; unknown → 404; out of range → 400', async () => {
    const created = await publish({ name: 'Versioned' });
    const url = `/v2/worker_templates/${created.id}/versions`;
    expect(
      (await call('PUT', `/v2/worker_templates/${created.id}`, { script: 'function main() { return 2; }' }))
        .statusCode,
    ).toBe(200);
    const all = await call('GET', url);
    expect(all.statusCode).toBe(200);
    expect(all.json().versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);
    expect(all.json().versions[0]).not.toHaveProperty('script');
    const one = await call('GET', `${url}?version=1`);
    expect(one.json().versions).toEqual([expect.objectContaining({ version: 1, script: SCRIPT })]);
    expect((await call('GET', `${url}?version=9`)).json()).toEqual({
      code: 404,
      message: `Worker template ${created.id} has no version 9 on record.`,
    });
    // Found by schemathesis: a version past PostgreSQL's integer failed the query with a 500.
    for (const version of ['1903081143776', '2147483648', '0']) {
      const res = await call('GET', `${url}?version=${version}`);
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/version/);
    }
    expect((await call('GET', `${url}?version=2147483647`)).statusCode).toBe(404);
  });

  test('list leaves out form_inputs and script; id mode, name prefix; workspace ignored', async () => {
    const other = await createTestAccount(h.db);
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
        'requirements',
        'environment',
        'memory_limit_mb',
        'timeout_seconds',
        'builtin',
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
    const other = await createTestAccount(h.db);
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
    await expect(loadWorkerTemplate(h.db, h.account.accountId, created.id)).resolves.toEqual({
      id: created.id,
      name: 'Runnable',
      type: 'STARTER',
      script: SCRIPT,
      scriptRuntime: 'javascript',
      scriptEntryPoint: 'start',
      formInputs: SAMPLE_FORM_INPUTS,
      compiledScript: null,
      memoryLimitMb: null,
      timeoutSeconds: null,
      requirements: [],
      containerStatus: 'SUCCESS',
      environmentHash: null,
    });
    const other = await createTestAccount(h.db);
    await expect(loadWorkerTemplate(h.db, other.accountId, created.id)).rejects.toBeInstanceOf(NotFound);
  });

  test('audit trail: WorkerTemplate records for each action', async () => {
    const created = await publish({ name: 'Audited' });
    const url = `/v2/worker_templates/${created.id}`;
    await call('GET', url);
    await call('PUT', url, { name: 'Audited 2', script: 'function main() { return 1; }' });
    await call('DELETE', url);
    const records = await h.db('audit_logs').where({ entity_id: created.id }).orderBy('created_at');
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
      script_runtime: 'python3.12',
      script: SCRIPT,
    });
    const [failure] = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, status: 'ERROR', entity_type: 'WorkerTemplate' })
      .orderBy('created_at', 'desc');
    expect(failure).toMatchObject({ operation: 'CREATE', source: 'API' });
  });

  test('the OpenAPI document lists the routes, the publishing ones marked as extensions', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
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
    // The extensions are documented: limits with their bounds, built-ins read-only.
    expect(schema.properties).toMatchObject({
      memory_limit_mb: { description: expect.stringMatching(/memory limit/) },
      timeout_seconds: { description: expect.stringMatching(/time limit/) },
      builtin: { description: expect.stringMatching(/read-only/) },
    });
    const put = doc.paths['/worker_templates/{id}'].put;
    const body = put.requestBody.content['application/json'].schema.properties;
    expect(body.memory_limit_mb.description).toMatch(/from 16 to 1024/);
    expect(body.timeout_seconds.description).toMatch(/from 1 to 600/);
    expect(Object.keys(put.responses)).toContain('403');
    expect(Object.keys(doc.paths['/worker_templates/{id}'].delete.responses)).toContain('403');
  });

  describe('per-template sandbox limits', () => {
    test('memory_limit_mb and timeout_seconds: stored, shown, null back to the default', async () => {
      const created = await publish({ memory_limit_mb: 256, timeout_seconds: 5 });
      expect(created).toMatchObject({ memory_limit_mb: 256, timeout_seconds: 5 });
      const kept = await call('PUT', `/v2/worker_templates/${created.id}`, { name: 'Renamed' });
      expect(kept.json().worker_template).toMatchObject({ memory_limit_mb: 256, timeout_seconds: 5 });
      const reset = await call('PUT', `/v2/worker_templates/${created.id}`, { memory_limit_mb: null });
      expect(reset.json().worker_template).toMatchObject({ memory_limit_mb: null, timeout_seconds: 5 });
      const loaded = await loadWorkerTemplate(h.db, h.account.accountId, created.id);
      expect([loaded.memoryLimitMb, loaded.timeoutSeconds]).toEqual([null, 5]);
    });

    test.each([
      ['memory_limit_mb', 15],
      ['memory_limit_mb', 1025],
      ['memory_limit_mb', 64.5],
      ['memory_limit_mb', '64'],
      ['timeout_seconds', 0],
      ['timeout_seconds', 601],
      ['timeout_seconds', 2.5],
      ['timeout_seconds', true],
    ])('%s = %p → 400 naming the bounds, on POST and PUT', async (field, value) => {
      const before = await count();
      const res = await call('POST', '/v2/worker_templates', { name: 'T', script: SCRIPT, [field]: value });
      expect(res.statusCode).toBe(400);
      const bounds = field === 'memory_limit_mb' ? '16 to 1024' : '1 to 600';
      expect(res.json()).toEqual({
        code: 400,
        message: `${field} must be a whole number from ${bounds}, or null for the service's default.`,
      });
      expect(await count()).toBe(before);
      const created = await publish();
      const put = await call('PUT', `/v2/worker_templates/${created.id}`, { [field]: value });
      expect(put.statusCode).toBe(400);
      expect((await call('GET', `/v2/worker_templates/${created.id}`)).json().worker_template.version).toBe(
        '1',
      );
    });

    test('a template raises or lowers the process defaults, never past the ceiling', () => {
      const defaults = { memoryLimitMb: 64, timeoutMs: 3_000 };
      expect(templateSandboxLimits({ memoryLimitMb: null, timeoutSeconds: null }, defaults)).toEqual(
        defaults,
      );
      expect(templateSandboxLimits({ memoryLimitMb: 256, timeoutSeconds: 1 }, defaults)).toEqual({
        memoryLimitMb: 256,
        timeoutMs: 1_000,
      });
      expect(
        templateSandboxLimits({ memoryLimitMb: 512, timeoutSeconds: 600 }, defaults, {
          memoryLimitMb: 300,
          timeoutMs: 60_000,
        }),
      ).toEqual({ memoryLimitMb: 300, timeoutMs: 60_000 });
      // Unset process defaults stay unset: the sandbox's own apply.
      expect(templateSandboxLimits({ memoryLimitMb: null, timeoutSeconds: 10 }, {})).toEqual({
        timeoutMs: 10_000,
      });
    });
  });

  describe('TypeScript transpiled when published', () => {
    const TS = [
      'interface Args { inputs: { n: number } }',
      'export function main(args: Args): { twice: number } {',
      '  const n: number = args.inputs.n;',
      '  return { twice: n * 2 };',
      '}',
    ].join('\n');
    const stored = async (id: string) =>
      (
        (await h.db('entities').where({ kind: 'worker_template', id }).first()) as {
          body: Record<string, unknown>;
        }
      ).body;

    test('the JavaScript is stored beside the source and runs in the sandbox as it is', async () => {
      const created = await publish({ script_runtime: 'typescript', script: TS });
      expect(created.script).toBe(TS);
      expect(created).not.toHaveProperty('script_compiled');
      const body = await stored(created.id);
      expect(body.script).toBe(TS);
      expect(body.script_compiled).toEqual(expect.stringContaining('args.inputs.n'));
      expect(body.script_compiled).not.toMatch(/interface|: number/);
      const outcome = await runScript({
        source: body.script_compiled as string,
        args: { inputs: { n: 21 } },
      });
      expect(outcome).toMatchObject({ ok: true, result: { twice: 42 } });
      const loaded = await loadWorkerTemplate(h.db, h.account.accountId, created.id);
      expect(loaded.compiledScript).toBe(body.script_compiled);
    });

    test('a syntax error → 400 naming the line; nothing stored or changed', async () => {
      const before = await count();
      const broken = 'const a: number = 1;\nexport function main(args: { a: number ) { return 1; }\n';
      const res = await call('POST', '/v2/worker_templates', {
        name: 'Broken',
        script_runtime: 'typescript',
        script: broken,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        code: 400,
        message: "script is not valid TypeScript: line 2: Expected ';', got ')'",
      });
      expect(await count()).toBe(before);

      const created = await publish({ script_runtime: 'typescript', script: TS });
      const put = await call('PUT', `/v2/worker_templates/${created.id}`, { script: broken });
      expect(put.statusCode).toBe(400);
      expect(put.json().message).toMatch(/^script is not valid TypeScript: line 2: /);
      expect((await stored(created.id)).script).toBe(TS);
      // Switching a JavaScript template to typescript checks its script too.
      const js = await publish({ script: 'function main(args) { return args. ; }' });
      const switched = await call('PUT', `/v2/worker_templates/${js.id}`, { script_runtime: 'typescript' });
      expect(switched.statusCode).toBe(400);
      expect(switched.json().message).toMatch(/^script is not valid TypeScript: line 1: /);
    });

    test('republishing recompiles; back to javascript drops the compiled copy', async () => {
      const created = await publish({ script_runtime: 'typescript', script: TS });
      const next = TS.replace('n * 2', 'n * 3');
      await call('PUT', `/v2/worker_templates/${created.id}`, { script: next });
      expect((await stored(created.id)).script_compiled).toEqual(expect.stringContaining('n * 3'));
      await call('PUT', `/v2/worker_templates/${created.id}`, {
        script_runtime: 'javascript',
        script: 'function main() { return 1; }',
      });
      expect(await stored(created.id)).not.toHaveProperty('script_compiled');
    });
  });
});

/** In a database of their own: the other tests count and list exactly what they publish. */
describe('built-in worker templates', () => {
  let other: TestAccount;
  let published: PublishedBuiltin[];
  let scratch: string;

  const h = useTestApp({
    setUp: async ({ db }) => {
      other = await createTestAccount(db);
      published = await publishBuiltinTemplates(db);
      scratch = await mkdtemp(path.join(tmpdir(), 'pas-builtins-'));
    },
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });
  const { call } = h;
  const FOLDERS = [
    'backtest',
    'barrier',
    'custom-script',
    'exposure',
    'forker',
    'generate-report',
    'http-request',
    'marginal-tracking-error',
    'parametric-risk-attribution',
    'post-to-chat',
    'properties',
    'python-custom-script',
    'python-return-statistics',
    'retrieve-portfolio',
    'risk-attribution',
    'save-datastore',
    'save-file-csv',
    'send-email',
    'sensitivity',
    'stress-test',
    'underlying-stress-sensitivity',
  ];

  test('every folder of plugins/builtin is published once, with a fixed id derived from its name', async () => {
    expect(published.map((p) => [p.folder, p.action, p.version])).toEqual(
      FOLDERS.map((folder) => [folder, 'created', 1]),
    );
    for (const p of published) {
      expect(p.id).toMatch(/^wtpl_[A-Za-z0-9]{25}$/);
      expect(p.id).toBe(builtinTemplateId(p.folder));
    }
    expect(new Set(published.map((p) => p.id)).size).toBe(FOLDERS.length);
    // Pinned: the same in every installation, so a workflow written against one service runs on another.
    expect(builtinTemplateId('stress-test')).toBe(PINNED_STRESS_TEST_ID);
    const rows = await h.db('entities').where({ kind: 'worker_template' }).select('account_id');
    expect(rows.map((r) => r.account_id)).toEqual(FOLDERS.map(() => SYSTEM_ACCOUNT_ID));
  });

  test('every account lists and retrieves them, marked builtin, with their metadata', async () => {
    for (const who of [h.account, other]) {
      const list = await call('GET', '/v2/worker_templates?page_size=100', undefined, who);
      expect(list.statusCode).toBe(200);
      const items = list.json().worker_templates as Array<Record<string, unknown>>;
      expect(items.map((w) => w.id).sort()).toEqual(published.map((p) => p.id).sort());
      expect(items.every((w) => w.builtin === true)).toBe(true);
    }
    const id = builtinTemplateId('stress-test');
    const res = await call('GET', `/v2/worker_templates/${id}`, undefined, other);
    expect(res.statusCode).toBe(200);
    const template = res.json().worker_template;
    expect(template).toMatchObject({
      id,
      name: 'Stress test',
      type: 'BASIC',
      category: 'Calculations',
      tags: ['builtin', 'calculation', 'stress_test'],
      script_runtime: 'javascript',
      timeout_seconds: 120,
      memory_limit_mb: null,
      builtin: true,
      version: '1',
    });
    // The published script: the folder's script.js after the libraries it lists (_lib/).
    const script = await readFile(path.join(BUILTIN_TEMPLATES_DIR, 'stress-test', 'script.js'), 'utf8');
    expect(template.script.endsWith(script)).toBe(true);
    expect(template.script).toContain('function portfolioPart(');
    expect(template.script).toBe(
      (await readTemplateFolder(path.join(BUILTIN_TEMPLATES_DIR, 'stress-test'))).input.script,
    );
    expect(template.form_inputs).toEqual(
      expect.arrayContaining([
        {
          id: 'magnitude',
          name: 'Shock magnitude',
          type: 'number',
          default: -0.1,
          description: expect.any(String),
        },
      ]),
    );
    const views = await Promise.all(
      published.map(async (p) => (await call('GET', `/v2/worker_templates/${p.id}`)).json().worker_template),
    );
    expect(
      Object.fromEntries(views.map((w: { name: string; type: string }) => [w.name, w.type])),
    ).toMatchObject({
      'Split list (forker)': 'FORKER',
      'Join branches (barrier)': 'BARRIER',
    });
    // An account's own templates are listed beside them and stay its own.
    const own = (await call('POST', '/v2/worker_templates', { name: 'Mine', script: SCRIPT })).json()
      .worker_template.id as string;
    const mine = (await call('GET', '/v2/worker_templates?page_size=100')).json().worker_templates;
    expect(mine.map((w: { id: string }) => w.id)).toContain(own);
    const theirs = (await call('GET', '/v2/worker_templates?page_size=100', undefined, other)).json();
    expect(theirs.worker_templates.map((w: { id: string }) => w.id)).not.toContain(own);
    expect((await call('GET', `/v2/worker_templates/${own}`, undefined, other)).statusCode).toBe(404);
  });

  test('read-only: PUT and DELETE by an account → 403 with a clear message, nothing changes', async () => {
    const id = builtinTemplateId('custom-script');
    const before = await h.db('entities').where({ kind: 'worker_template', id }).first();
    const put = await call('PUT', `/v2/worker_templates/${id}`, {
      name: 'Hijacked',
      script: 'function main() {}',
    });
    expect(put.statusCode).toBe(403);
    expect(put.json()).toEqual({
      code: 403,
      message: `Worker template ${id} (Custom script) is built in and read-only: publish a template of your own with its script to change it.`,
    });
    const del = await call('DELETE', `/v2/worker_templates/${id}`, undefined, other);
    expect(del.statusCode).toBe(403);
    expect(del.json().message).toMatch(/is built in and read-only/);
    expect(await h.db('entities').where({ kind: 'worker_template', id }).first()).toEqual(before);
  });

  test('publishing again changes nothing; a changed script or metadata bumps the version, same id', async () => {
    const again = await publishBuiltinTemplates(h.db);
    expect(again.map((p) => [p.folder, p.action, p.version])).toEqual(
      FOLDERS.map((f) => [f, 'unchanged', 1]),
    );

    const dir = path.join(scratch, 'changed');
    await cp(BUILTIN_TEMPLATES_DIR, dir, { recursive: true });
    const scriptFile = path.join(dir, 'forker', 'script.js');
    await writeFile(scriptFile, `${await readFile(scriptFile, 'utf8')}\n// a comment\n`);
    const metaFile = path.join(dir, 'barrier', 'template.json');
    const meta = JSON.parse(await readFile(metaFile, 'utf8'));
    await writeFile(metaFile, JSON.stringify({ ...meta, version: '1.0.1' }));
    const changed = await publishBuiltinTemplates(h.db, dir);
    expect(
      changed.filter((p) => p.action !== 'unchanged').map((p) => [p.folder, p.action, p.version]),
    ).toEqual([
      ['barrier', 'updated', 2],
      ['forker', 'updated', 2],
    ]);
    const forker = (await call('GET', `/v2/worker_templates/${builtinTemplateId('forker')}`)).json()
      .worker_template;
    expect(forker).toMatchObject({ version: '2', script: expect.stringContaining('// a comment') });
    const audits = await h
      .db('audit_logs')
      .where({ account_id: SYSTEM_ACCOUNT_ID, entity_id: builtinTemplateId('forker') })
      .orderBy('created_at');
    expect(audits.map((r) => [r.operation, r.user_email])).toEqual([
      ['CREATE', 'System'],
      ['UPDATE', 'System'],
    ]);
    // And back: the shipped folders are republished over it.
    const restored = await publishBuiltinTemplates(h.db);
    expect(restored.filter((p) => p.action !== 'unchanged').map((p) => p.folder)).toEqual([
      'barrier',
      'forker',
    ]);
  });

  test('several processes publishing at once: each template created once, version 1', async () => {
    const dir = path.join(scratch, 'fresh');
    for (const name of ['alpha', 'beta']) {
      await mkdir(path.join(dir, name), { recursive: true });
      await writeFile(
        path.join(dir, name, 'template.json'),
        JSON.stringify({ name: `Concurrent ${name}`, type: 'BASIC', version: '1.0.0' }),
      );
      await writeFile(
        path.join(dir, name, 'script.ts'),
        `export function main(): string { return '${name}'; }\n`,
      );
    }
    // Separate pools, as separate processes would have.
    const pools = [0, 1, 2, 3].map(() => connectDatabase(h.databaseUrl, 2));
    try {
      const results = await Promise.all(pools.map((pool) => publishBuiltinTemplates(pool, dir)));
      for (const folder of ['alpha', 'beta']) {
        const actions = results.map((r) => r.find((p) => p.folder === folder)!.action).sort();
        expect(actions).toEqual(['created', 'unchanged', 'unchanged', 'unchanged']);
      }
    } finally {
      await Promise.all(pools.map((pool) => pool.destroy()));
    }
    const rows = await h
      .db('entities')
      .whereIn('id', [builtinTemplateId('alpha'), builtinTemplateId('beta')]);
    expect(
      rows.map((r) => [r.name, r.version, r.body.script_runtime, typeof r.body.script_compiled]).sort(),
    ).toEqual([
      ['Concurrent alpha', 1, 'typescript', 'string'],
      ['Concurrent beta', 1, 'typescript', 'string'],
    ]);
  });

  test("the system account is nobody's tenant: no users, no keys, not listed as an account", async () => {
    expect(await h.db('users').where({ account_id: SYSTEM_ACCOUNT_ID })).toEqual([]);
    expect(await h.db('api_keys').where({ account_id: SYSTEM_ACCOUNT_ID })).toEqual([]);
    const ids = (await listAccounts(h.db)).map((a) => a.id);
    expect(ids).not.toContain(SYSTEM_ACCOUNT_ID);
    expect(ids).toEqual(expect.arrayContaining([h.account.accountId, other.accountId]));
  });
});
