import { createTestAccount, type TestAccount } from '../support/test-app';
import { startHarness, type WorkflowHarness, workerId } from './workflow-harness';

/** Storing, reading, listing, updating and deleting definitions; every rule that refuses one. */
describe('workflow definitions', () => {
  let h: WorkflowHarness;
  let other: TestAccount;
  /** A template with a form: factor (number, mandatory), label (string, default), flags (object). */
  let templateId: string;
  let otherAccountTemplateId: string;

  beforeAll(async () => {
    h = await startHarness();
    other = await createTestAccount(h.db);
    const publish = async (who: TestAccount) => {
      const res = await h.call(
        'POST',
        '/v2/worker_templates',
        {
          name: 'Scale',
          script: 'function main(args) { return args.inputs; }',
          form_inputs: [
            { id: 'factor', name: 'Factor', type: 'number', mandatory: true },
            { id: 'label', type: 'string', default: 'scaled' },
            { name: 'flags', type: 'object' },
            { id: 'portfolio', type: 'assembler' },
          ],
        },
        who,
      );
      expect(res.statusCode).toBe(200);
      return res.json().worker_template.id as string;
    };
    templateId = await publish(h.account);
    otherAccountTemplateId = await publish(other);
  });
  afterAll(() => h.close());

  /** starter → basic → ender, the smallest valid graph, with ids to build variants from. */
  function line() {
    const [s, b, e] = [workerId(), workerId(), workerId()];
    return {
      s,
      b,
      e,
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [b] },
        {
          id: b,
          name: 'Work',
          type: 'BASIC',
          script: 'function main(args) { return args.inputs; }',
          next: [e],
        },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    };
  }

  test('store → 200 with defaults and normalised workers; retrieve returns them', async () => {
    const { s, b, e, workers } = line();
    const res = await h.call('POST', '/v2/workflows', {
      name: 'Nightly risk',
      description: 'Runs the #risk checks',
      tags: ['Ops Team'],
      workers: [workers[0], { ...workers[1], next: e, colour: 'ignored' }, workers[2]],
      unknown_key: 'ignored',
    });
    expect(res.statusCode).toBe(200);
    const workflow = res.json().workflow;
    expect(workflow).toEqual({
      id: expect.stringMatching(/^wrkf_[A-Za-z0-9]{25}$/),
      name: 'Nightly risk',
      description: 'Runs the #risk checks',
      tags: ['ops_team', 'risk'],
      status: 'OK',
      trigger_type: 'MANUAL',
      trigger_config: {},
      trigger_enabled: false,
      starter_worker_id: s,
      gui: { offset_x: 0, offset_y: 0, zoom: 1 },
      on_failure: null,
      workers: [
        {
          id: s,
          name: 'Start',
          type: 'STARTER',
          template_id: null,
          script: null,
          script_inputs: {},
          next: [b],
        },
        {
          id: b,
          name: 'Work',
          type: 'BASIC',
          template_id: null,
          script: 'function main(args) { return args.inputs; }',
          script_inputs: {},
          next: [e],
        },
        { id: e, name: 'End', type: 'ENDER', template_id: null, script: null, script_inputs: {}, next: [] },
      ],
      workspace: 'main',
      created: expect.any(Number),
      updated: expect.any(Number),
      version: '1',
    });
    const got = await h.call('GET', `/v2/workflows/${workflow.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.json().workflow).toEqual(workflow);
  });

  test('trigger settings and gui are stored; another workspace or account does not see the workflow', async () => {
    const integration = await h.call('POST', '/v2/integrations', { name: 'Inbox', type: 'WEBHOOK' });
    expect(integration.statusCode).toBe(200);
    const integrationId = integration.json().integration.id as string;
    const workflow = await h.store({
      name: 'Hooked',
      workspace: 'research',
      trigger_type: 'FILE_RECEIVED',
      trigger_config: { integration_id: integrationId },
      trigger_enabled: true,
      gui: { offset_x: 10.5, offset_y: -3, zoom: 0.8 },
      workers: line().workers,
    });
    expect(workflow).toMatchObject({
      trigger_type: 'FILE_RECEIVED',
      trigger_config: { integration_id: integrationId },
      trigger_enabled: true,
      gui: { offset_x: 10.5, offset_y: -3, zoom: 0.8 },
      workspace: 'research',
    });
    expect((await h.call('GET', `/v2/workflows/${workflow.id}?workspace=research`)).statusCode).toBe(200);
    expect((await h.call('GET', `/v2/workflows/${workflow.id}`)).statusCode).toBe(404);
    const foreign = await h.call('GET', `/v2/workflows/${workflow.id}?workspace=research`, undefined, other);
    expect(foreign.statusCode).toBe(404);
  });

  const refusals: Array<[string, () => object, RegExp]> = [
    ['no workers at all', () => ({ name: 'x' }), /^workers is required/],
    [
      'no STARTER',
      () => ({ workers: line().workers.slice(1) }),
      /^A workflow needs exactly one STARTER worker, got 0\.$/,
    ],
    [
      'two STARTERs',
      () => {
        const { workers, b } = line();
        return { workers: [...workers, { id: workerId(), name: 'Again', type: 'STARTER', next: [b] }] };
      },
      /exactly one STARTER worker, got 2/,
    ],
    [
      'no reachable ENDER',
      () => {
        const { workers } = line();
        return { workers: [workers[0], { ...workers[1], next: [] }, workers[2]] };
      },
      /^No ENDER worker is reachable from the STARTER\.$/,
    ],
    [
      'a cycle',
      () => {
        const { s, b, e, workers } = line();
        const c = workerId();
        return {
          workers: [
            { id: s, name: 'S', type: 'STARTER', next: [b] },
            { ...workers[1], next: [c] },
            {
              id: c,
              name: 'Loop',
              type: 'CONDITIONAL',
              script: 'function main() { return true; }',
              next_true: [b],
              next_false: [e],
            },
            workers[2],
          ],
        };
      },
      /cycle through worker wrkr_/,
    ],
    [
      'an edge to an unknown worker',
      () => {
        const { workers } = line();
        return { workers: [{ ...workers[0], next: [workerId()] }, ...workers.slice(1)] };
      },
      /points at an unknown worker wrkr_/,
    ],
    [
      'an unknown template',
      () => {
        const { workers } = line();
        return {
          workers: [
            workers[0],
            { ...workers[1], script: undefined, template_id: 'wtpl_AAAAAAAAAAAAAAAAAAAAAAAAA' },
            workers[2],
          ],
        };
      },
      /^Unknown worker template wtpl_AAAAAAAAAAAAAAAAAAAAAAAAA\.$/,
    ],
    [
      "another account's template",
      () => {
        const { workers } = line();
        return {
          workers: [
            workers[0],
            {
              ...workers[1],
              script: null,
              template_id: otherAccountTemplateId,
              script_inputs: { factor: 1 },
            },
            workers[2],
          ],
        };
      },
      /^Unknown worker template wtpl_/,
    ],
    [
      'a required script input missing',
      () => {
        const { workers } = line();
        return {
          workers: [
            workers[0],
            { ...workers[1], script: null, template_id: templateId, script_inputs: { label: 'x' } },
            workers[2],
          ],
        };
      },
      /: the required script input "factor" is missing\.$/,
    ],
    [
      'an unknown script input',
      () => {
        const { workers } = line();
        return {
          workers: [
            workers[0],
            {
              ...workers[1],
              script: null,
              template_id: templateId,
              script_inputs: { factor: 2, colour: 'red' },
            },
            workers[2],
          ],
        };
      },
      /unknown script input "colour" \(the template's form_inputs are factor, label, flags, portfolio\)/,
    ],
    [
      'a script input of the wrong type',
      () => {
        const { workers } = line();
        return {
          workers: [
            workers[0],
            { ...workers[1], script: null, template_id: templateId, script_inputs: { factor: '2' } },
            workers[2],
          ],
        };
      },
      /script input "factor" must be of type number, got string/,
    ],
    [
      'an object input given a list',
      () => {
        const { workers } = line();
        return {
          workers: [
            workers[0],
            { ...workers[1], script: null, template_id: templateId, script_inputs: { factor: 2, flags: [] } },
            workers[2],
          ],
        };
      },
      /script input "flags" must be of type object, got array/,
    ],
    [
      'a FORKER without a BARRIER',
      () => {
        const { s, b, workers } = line();
        const f = workerId();
        return {
          workers: [
            { id: s, name: 'S', type: 'STARTER', next: [f] },
            { id: f, name: 'Fork', type: 'FORKER', next: [b] },
            ...workers.slice(1),
          ],
        };
      },
      /^FORKER wrkr_\w+ has no matching BARRIER downstream: a branch reaches ENDER wrkr_\w+\.$/,
    ],
    [
      'a BARRIER without a FORKER',
      () => {
        const { workers, e } = line();
        const j = workerId();
        return {
          workers: [
            workers[0],
            { ...workers[1], next: [j] },
            { id: j, name: 'Join', type: 'BARRIER', next: [e] },
            workers[2],
          ],
        };
      },
      /^BARRIER wrkr_\w+ has no FORKER upstream to join\.$/,
    ],
    [
      'nested FORKERs',
      () => {
        const [s, f1, f2, j, e] = [workerId(), workerId(), workerId(), workerId(), workerId()];
        return {
          workers: [
            { id: s, name: 'S', type: 'STARTER', next: [f1] },
            { id: f1, name: 'F1', type: 'FORKER', next: [f2] },
            { id: f2, name: 'F2', type: 'FORKER', next: [j] },
            { id: j, name: 'J', type: 'BARRIER', next: [e] },
            { id: e, name: 'E', type: 'ENDER' },
          ],
        };
      },
      /forks do not nest/,
    ],
    [
      'a worker both inside and outside a fork',
      () => {
        const [s, c, f, b, j, e] = [workerId(), workerId(), workerId(), workerId(), workerId(), workerId()];
        return {
          workers: [
            { id: s, name: 'S', type: 'STARTER', next: [c] },
            {
              id: c,
              name: 'C',
              type: 'CONDITIONAL',
              script: 'function main() { return true; }',
              next_true: [f],
              next_false: [b],
            },
            { id: f, name: 'F', type: 'FORKER', next: [b] },
            { id: b, name: 'B', type: 'BASIC', script: 'function main() { return 1; }', next: [j] },
            { id: j, name: 'J', type: 'BARRIER', next: [e] },
            { id: e, name: 'E', type: 'ENDER' },
          ],
        };
      },
      /is reachable both inside and outside the branches of FORKER/,
    ],
    [
      'a CONDITIONAL without next_false',
      () => {
        const { s, e } = line();
        const c = workerId();
        return {
          workers: [
            { id: s, name: 'S', type: 'STARTER', next: [c] },
            {
              id: c,
              name: 'C',
              type: 'CONDITIONAL',
              script: 'function main() { return true; }',
              next_true: [e],
            },
            { id: e, name: 'E', type: 'ENDER' },
          ],
        };
      },
      /needs exactly one next_true and one next_false worker/,
    ],
    [
      'a BASIC with two next workers',
      () => {
        const { workers, e } = line();
        const e2 = workerId();
        return {
          workers: [
            workers[0],
            { ...workers[1], next: [e, e2] },
            workers[2],
            { id: e2, name: 'E2', type: 'ENDER' },
          ],
        };
      },
      /must have exactly one next worker: a parallel fan-out needs a FORKER and a BARRIER/,
    ],
    [
      'an unreachable worker',
      () => ({ workers: [...line().workers, { id: workerId(), name: 'Orphan', type: 'ENDER' }] }),
      /^Worker wrkr_\w+ is not reachable from the STARTER\.$/,
    ],
    [
      'a BASIC with neither template nor script',
      () => {
        const { workers } = line();
        return { workers: [workers[0], { ...workers[1], script: null }, workers[2]] };
      },
      /^workers\[1\] \(BASIC\) needs a template_id or a script\.$/,
    ],
    [
      'both template and script',
      () => {
        const { workers } = line();
        return { workers: [workers[0], { ...workers[1], template_id: templateId }, workers[2]] };
      },
      /has both template_id and script/,
    ],
    [
      'a malformed worker id',
      () => {
        const { workers } = line();
        return { workers: [{ ...workers[0], id: 'wrkr_short' }, ...workers.slice(1)] };
      },
      /^workers\[0\]\.id must be wrkr_ plus 25 letters or digits\.$/,
    ],
    [
      'a duplicated worker id',
      () => {
        const { workers, b } = line();
        return { workers: [...workers, { ...workers[1], id: b }] };
      },
      /is used twice/,
    ],
    [
      'an unknown trigger_type',
      () => ({ workers: line().workers, trigger_type: 'HOURLY' }),
      /^trigger_type must be one of/,
    ],
    [
      'a gui that is not numbers',
      () => ({ workers: line().workers, gui: { zoom: 'big' } }),
      /^gui\.zoom must be null or a number\.$/,
    ],
  ];

  test.each(refusals)('refused with 400: %s', async (_, body, message) => {
    const res = await h.call('POST', '/v2/workflows', { name: 'Refused', ...body() });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message: expect.stringMatching(message) });
  });

  test('nothing refused was stored', async () => {
    const names = await h.db('entities').where({ kind: 'workflow', name: 'Refused' }).count({ n: '*' });
    expect(Number(names[0]!.n)).toBe(0);
  });

  test('template workers: the form decides; a STARTER may leave required inputs to the run parameters', async () => {
    const [s, t, e] = [workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Templated',
      workers: [
        {
          id: s,
          name: 'Start',
          type: 'STARTER',
          template_id: templateId,
          script_inputs: { label: 'from run' },
          next: [t],
        },
        {
          id: t,
          name: 'Scale',
          type: 'BASIC',
          template_id: templateId,
          script_inputs: { factor: 3, flags: { a: 1 } },
          next: [e],
        },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    });
    expect(workflow.workers[1]).toMatchObject({
      template_id: templateId,
      script: null,
      script_inputs: { factor: 3, flags: { a: 1 } },
    });
  });

  test('list: without workers, name prefix, #tags and JSON queries on definition fields', async () => {
    const a = await h.store({
      name: 'Alpha pricing',
      tags: ['desk'],
      trigger_type: 'API',
      workers: line().workers,
    });
    const b = await h.store({ name: 'Beta pricing', workers: line().workers });
    const list = await h.call('GET', '/v2/workflows?page_size=2');
    expect(list.statusCode).toBe(200);
    expect(list.json().workflows.map((w: { id: string }) => w.id)).toEqual([b.id, a.id]);
    expect(list.json().workflows[0].workers).toBeUndefined();
    expect(list.json().next_page_token).toEqual(expect.any(String));
    const byName = await h.call('GET', `/v2/workflows?query=${encodeURIComponent('Alpha')}`);
    expect(byName.json().workflows.map((w: { id: string }) => w.id)).toEqual([a.id]);
    const byTag = await h.call('GET', `/v2/workflows?query=${encodeURIComponent('#desk')}`);
    expect(byTag.json().workflows.map((w: { id: string }) => w.id)).toEqual([a.id]);
    const json = JSON.stringify({ filters: [['trigger_type', '=', 'API']] });
    const byTrigger = await h.call('GET', `/v2/workflows?query=${encodeURIComponent(json)}`);
    expect(byTrigger.json().workflows.map((w: { id: string }) => w.id)).toEqual([a.id]);
    const foreign = await h.call('GET', '/v2/workflows', undefined, other);
    expect(foreign.json().workflows).toEqual([]);
  });

  test('update: fields and graph replaced, version bumped; an invalid graph changes nothing', async () => {
    const workflow = await h.store({ name: 'Editable', workers: line().workers });
    const next = line();
    const res = await h.call('PUT', `/v2/workflows/${workflow.id}`, {
      name: 'Edited',
      trigger_type: 'TIME_BASED',
      trigger_config: { cron: '0 6 * * 1-5', timezone: 'Europe/London' },
      workers: next.workers,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().workflow).toMatchObject({
      name: 'Edited',
      trigger_type: 'TIME_BASED',
      trigger_config: { cron: '0 6 * * 1-5', timezone: 'Europe/London' },
      starter_worker_id: next.s,
      version: '2',
    });
    const bad = await h.call('PUT', `/v2/workflows/${workflow.id}`, {
      name: 'Broken',
      workers: next.workers.slice(1),
    });
    expect(bad.statusCode).toBe(400);
    const after = (await h.call('GET', `/v2/workflows/${workflow.id}`)).json().workflow;
    expect(after).toMatchObject({ name: 'Edited', version: '2', starter_worker_id: next.s });
    const missing = await h.call('PUT', '/v2/workflows/wrkf_AAAAAAAAAAAAAAAAAAAAAAAAA', { name: 'x' });
    expect(missing.statusCode).toBe(404);
  });

  test('delete → {workflow: {deleted, id, name}}, then 404; every step audited as Workflow', async () => {
    const workflow = await h.store({ name: 'Short-lived', workers: line().workers });
    await h.call('GET', `/v2/workflows/${workflow.id}`);
    await h.call('PUT', `/v2/workflows/${workflow.id}`, { description: 'changed' });
    const res = await h.call('DELETE', `/v2/workflows/${workflow.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ workflow: { deleted: true, id: workflow.id, name: 'Short-lived' } });
    expect((await h.call('GET', `/v2/workflows/${workflow.id}`)).statusCode).toBe(404);
    expect((await h.call('DELETE', `/v2/workflows/${workflow.id}`)).statusCode).toBe(404);
    const trail = await h
      .db('audit_logs')
      .where({ entity_id: workflow.id, status: 'SUCCESS' })
      .orderBy('created_at')
      .select('operation', 'entity_type', 'source');
    expect(trail).toEqual(
      ['CREATE', 'VIEW', 'UPDATE', 'DELETE'].map((operation) => ({
        operation,
        entity_type: 'Workflow',
        source: 'API',
      })),
    );
  });
});
