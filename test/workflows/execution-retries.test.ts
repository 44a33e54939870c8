import { createTestAccount, type TestAccount } from '../support/test-app';
import {
  type Execution,
  startHarness,
  stepsInHistory,
  type WorkerExecution,
  type WorkflowHarness,
  workerId,
} from './workflow-harness';

/**
 * Re-running a failed execution from its failed step: end to end on a real Temporal dev server,
 * Worker, isolates and PostgreSQL. A step that already COMPLETED is reused, never run again: the
 * scripts below make an effect (a portfolio) and a random number, so a rerun would show.
 */
describe('retrying failed executions', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    h = await startHarness({ worker: true });
  }, 120_000);
  afterAll(() => h.close());

  const tag = () => Math.random().toString(36).slice(2, 10);

  /** A script that fails until the test raises its flag (a datastore of that name). */
  const gate = (flag: string) =>
    `const flags = await sdk.listDatastores({ query: { filters: [['name', '=', '${flag}']] } });
     if (flags.datastores.length === 0) throw new Error('${flag} is not raised');`;

  async function raise(flag: string, who?: TestAccount) {
    const res = await h.call('POST', '/v2/datastores', { name: flag, data: [] }, who);
    expect(res.statusCode).toBe(200);
  }

  async function portfoliosNamed(name: string, who = h.account): Promise<number> {
    const rows = await h
      .db('entities')
      .where({ account_id: who.accountId, kind: 'portfolio', name })
      .count({ n: '*' });
    return Number(rows[0]!.n);
  }

  async function stepsOf(executionId: string): Promise<WorkerExecution[]> {
    const rows = (await h
      .db('worker_executions')
      .where({ workflow_execution_id: executionId })
      .orderBy([{ column: 'created_at' }, { column: 'parallel_index' }])
      .select('id')) as Array<{ id: string }>;
    return Promise.all(rows.map((row) => h.workerExecution(row.id)));
  }

  async function retry(workflowId: string, executionId: string, who?: TestAccount) {
    return h.call('POST', `/v2/workflows/${workflowId}/workflow_executions/${executionId}/retry`, {}, who);
  }

  /** S → A (an effect and a random number) → B (fails until `flag`) → E. */
  async function linearWorkflow(flag: string) {
    const [s, a, b, e] = [workerId(), workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: `Linear ${flag}`,
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [a] },
        {
          id: a,
          name: 'A',
          type: 'BASIC',
          script: `async function main(args) {
            const made = await sdk.createPortfolio({ name: 'made by A ${flag}', securities: [] });
            return { portfolio: made.id, draw: Math.random(), n: args.inputs.n };
          }`,
          next: [b],
        },
        {
          id: b,
          name: 'B',
          type: 'BASIC',
          script: `async function main(args) { ${gate(flag)} return { ...args.inputs, b: true }; }`,
          next: [e],
        },
        { id: e, name: 'E', type: 'ENDER', script: 'function main(args) { return args.inputs; }' },
      ],
    });
    return { workflow, ids: { s, a, b, e } };
  }

  test('a retry reuses the completed steps, runs from the failed one, links to the failed run and is audited', async () => {
    const flag = `ready-${tag()}`;
    const { workflow, ids } = await linearWorkflow(flag);
    const failedRun = await h.run(workflow.id, { n: 7 });
    const failed = await h.pollUntilEnded(workflow.id, failedRun.id);
    expect(failed).toMatchObject({ run_status: 'FAILED', retry_of: null });
    const before = await stepsOf(failed.id);
    expect(before.map((step) => [step.worker_id, step.status])).toEqual([
      [ids.s, 'COMPLETED'],
      [ids.a, 'COMPLETED'],
      [ids.b, 'ERROR'],
    ]);
    // Edited since: the retry still runs the definition the failed run ran.
    const edited = await h.call('PUT', `/v2/workflows/${workflow.id}`, {
      workers: [
        { id: ids.s, name: 'S', type: 'STARTER', next: [ids.e] },
        { id: ids.e, name: 'E', type: 'ENDER', script: 'function main() { return "edited"; }' },
      ],
    });
    expect(edited.statusCode).toBe(200);
    await raise(flag);

    const res = await retry(workflow.id, failed.id);
    expect(res.statusCode).toBe(202);
    const started = res.json().workflow_execution as Execution;
    expect(started).toMatchObject({
      id: expect.stringMatching(/^wfex_/),
      run_status: 'RUNNING',
      status: 'OK',
      retry_of: failed.id,
      workflow_id: workflow.id,
      trigger: 'API',
    });
    expect(started.id).not.toBe(failed.id);
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    expect(ended).toMatchObject({ run_status: 'SUCCEEDED', status: 'COMPLETED', retry_of: failed.id });

    const after = await stepsOf(ended.id);
    expect(after.map((step) => [step.worker_id, step.status, step.reused_from])).toEqual([
      [ids.s, 'COMPLETED', before[0]!.id],
      [ids.a, 'COMPLETED', before[1]!.id],
      [ids.b, 'COMPLETED', null],
      [ids.e, 'COMPLETED', null],
    ]);
    // A was not run again: its result (a random draw) and its effect (one portfolio) are the first run's.
    expect(after[1]!.result).toEqual(before[1]!.result);
    expect(await portfoliosNamed(`made by A ${flag}`)).toBe(1);
    const ender = await h.workerExecution(ended.ender_worker_execution_id!);
    expect(ender.result).toEqual({ ...(before[1]!.result as object), b: true });
    // The run and its retry point at one stored definition (kept once, not per run).
    const shas = await h
      .db('workflow_executions')
      .whereIn('id', [failed.id, started.id])
      .pluck('definition_sha256');
    expect(shas[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set(shas).size).toBe(1);
    // The failed run is left as it was.
    const again = await h.pollUntilEnded(workflow.id, failed.id);
    expect(again).toMatchObject({ run_status: 'FAILED', ender_worker_execution_id: null });

    const audit = await h.db('audit_logs').where({ entity_id: started.id });
    expect(audit).toEqual([
      expect.objectContaining({
        operation: 'EXECUTE',
        entity_type: 'WorkflowExecution',
        source: 'API',
        status: 'SUCCESS',
        activity: `Started workflow execution of ${workflow.name}, retrying ${failed.id} from its failed step`,
      }),
    ]);
    // In Temporal: a run of its own, which completed (its records close just before it does).
    await h.t.temporal.workflow.getHandle(started.id).result();
    const description = await h.t.temporal.workflow.getHandle(started.id).describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(description.memo).toMatchObject({ workflow_id: workflow.id, retry_of: failed.id });
    // The reused steps answered their recorded outcome: the history still shows every step.
    const steps = stepsInHistory(await h.t.temporal.workflow.getHandle(started.id).fetchHistory());
    expect(steps.map((step) => step.step)).toEqual([ids.s, ids.a, ids.b, ids.e].map((id) => `${id}#-1`));

    // Once retried, a failed run is not retried again; nor is a run that did not fail.
    const twice = await retry(workflow.id, failed.id);
    expect(twice.statusCode).toBe(409);
    expect(twice.json()).toEqual({
      code: 409,
      message: `Workflow execution ${failed.id} was already retried as ${started.id}; retry that one if it failed too.`,
    });
    const succeeded = await retry(workflow.id, ended.id);
    expect(succeeded.statusCode).toBe(409);
    expect(succeeded.json()).toEqual({
      code: 409,
      message: `Workflow execution ${ended.id} is SUCCEEDED: only a FAILED execution can be retried.`,
    });
  });

  test('a retry that fails too can be retried in turn; its reused steps chain back', async () => {
    const flag = `late-${tag()}`;
    const { workflow, ids } = await linearWorkflow(flag);
    const first = await h.pollUntilEnded(workflow.id, (await h.run(workflow.id, { n: 1 })).id);
    const second = await retry(workflow.id, first.id);
    expect(second.statusCode).toBe(202);
    const secondEnded = await h.pollUntilEnded(workflow.id, second.json().workflow_execution.id);
    expect(secondEnded.run_status).toBe('FAILED');
    await raise(flag);
    const third = await retry(workflow.id, secondEnded.id);
    expect(third.statusCode).toBe(202);
    const thirdEnded = await h.pollUntilEnded(workflow.id, third.json().workflow_execution.id);
    expect(thirdEnded).toMatchObject({ run_status: 'SUCCEEDED', retry_of: secondEnded.id });
    const steps = await stepsOf(thirdEnded.id);
    expect(steps.find((step) => step.worker_id === ids.a)!.reused_from).toEqual(
      (await stepsOf(secondEnded.id)).find((step) => step.worker_id === ids.a)!.id,
    );
    expect(await portfoliosNamed(`made by A ${flag}`)).toBe(1);
  });

  test('a run that failed in a FORKER branch: the completed branches are reused, the failed one runs again', async () => {
    const flag = `branch-${tag()}`;
    const [s, f, b, j, e] = [workerId(), workerId(), workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Per item',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: [f] },
        { id: f, name: 'F', type: 'FORKER', next: [b] },
        {
          id: b,
          name: 'Per item',
          type: 'BASIC',
          // Item "b" fails until the flag is up, after its siblings are done (they take no time).
          script: `async function main(args) {
            if (args.inputs === 'b') {
              const until = Date.now() + 700; while (Date.now() < until) {}
              ${gate(flag)}
            }
            const made = await sdk.createPortfolio({ name: 'item ' + args.inputs + ' ${flag}', securities: [] });
            return { item: args.inputs, portfolio: made.id, draw: Math.random() };
          }`,
          next: [j],
        },
        { id: j, name: 'J', type: 'BARRIER', next: [e] },
        { id: e, name: 'E', type: 'ENDER' },
      ],
    });
    const failed = await h.pollUntilEnded(
      workflow.id,
      (await h.run(workflow.id, { items: ['a', 'b', 'c'] })).id,
    );
    expect(failed).toMatchObject({
      run_status: 'FAILED',
      resume: { failure: { worker_id: b, parallel_index: 1 } },
    });
    const before = await stepsOf(failed.id);
    const branch = (steps: WorkerExecution[], index: number) =>
      steps.find((step) => step.worker_id === b && step.parallel_index === index)!;
    expect([0, 1, 2].map((index) => branch(before, index).status)).toEqual([
      'COMPLETED',
      'ERROR',
      'COMPLETED',
    ]);
    await raise(flag);

    const res = await retry(workflow.id, failed.id);
    expect(res.statusCode).toBe(202);
    const ended = await h.pollUntilEnded(workflow.id, res.json().workflow_execution.id);
    expect(ended).toMatchObject({ run_status: 'SUCCEEDED', retry_of: failed.id });
    const after = await stepsOf(ended.id);
    const reused = (workerOf: string, index = -1) =>
      after.find((step) => step.worker_id === workerOf && step.parallel_index === index)!.reused_from;
    expect(reused(s)).toBe(before.find((step) => step.worker_id === s)!.id);
    expect(reused(f)).toBe(before.find((step) => step.worker_id === f)!.id);
    expect(reused(b, 0)).toBe(branch(before, 0).id);
    expect(reused(b, 1)).toBeNull();
    expect(reused(b, 2)).toBe(branch(before, 2).id);
    expect(reused(j)).toBeNull();
    expect(reused(e)).toBeNull();
    // The BARRIER joined the reused branches' recorded results with the new one, in branch order.
    const ender = await h.workerExecution(ended.ender_worker_execution_id!);
    expect(ender.result).toEqual([
      branch(before, 0).result,
      expect.objectContaining({ item: 'b' }),
      branch(before, 2).result,
    ]);
    for (const item of ['a', 'b', 'c']) expect(await portfoliosNamed(`item ${item} ${flag}`)).toBe(1);
  });

  test('unknown ids and other accounts’ runs are 404; a malformed id is 400; all {code, message}', async () => {
    const flag = `never-${tag()}`;
    const { workflow } = await linearWorkflow(flag);
    const failed = await h.pollUntilEnded(workflow.id, (await h.run(workflow.id, { n: 1 })).id);
    expect(failed.run_status).toBe('FAILED');

    const unknownRun = 'wfex_' + 'x'.repeat(25);
    const res = await retry(workflow.id, unknownRun);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ code: 404, message: `Workflow execution ${unknownRun} not found.` });
    const unknownWorkflow = await retry('wrkf_' + 'y'.repeat(25), failed.id);
    expect(unknownWorkflow.statusCode).toBe(404);
    expect(unknownWorkflow.json()).toEqual({ code: 404, message: expect.any(String) });

    // Another workflow's run, through this workflow's path.
    const { workflow: other } = await linearWorkflow(`other-${flag}`);
    const crossed = await retry(other.id, failed.id);
    expect(crossed.statusCode).toBe(404);

    const stranger = await createTestAccount(h.db);
    const theirs = await retry(workflow.id, failed.id, stranger);
    expect(theirs.statusCode).toBe(404);
    expect(theirs.json()).toEqual({ code: 404, message: expect.any(String) });

    const malformed = await retry(workflow.id, 'wfex_short');
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toEqual({ code: 400, message: expect.any(String) });

    // A retry with no body at all is accepted too.
    const noBody = await h.t.app.inject({
      method: 'POST',
      url: `/v2/workflows/${workflow.id}/workflow_executions/${failed.id}/retry`,
      headers: { authorization: h.account.bearer },
    });
    expect(noBody.statusCode).toBe(202);
    expect(noBody.json().workflow_execution.retry_of).toBe(failed.id);
    expect((await h.pollUntilEnded(workflow.id, noBody.json().workflow_execution.id)).run_status).toBe(
      'FAILED',
    );
    // Nothing was started for the refused requests.
    const [counted] = await h.db('workflow_executions').where({ retry_of: failed.id }).count({ n: '*' });
    expect(Number(counted!.n)).toBe(1);
  });

  test('two retries of one run at once: one starts, the other is a 409', async () => {
    const flag = `race-${tag()}`;
    const { workflow } = await linearWorkflow(flag);
    const failed = await h.pollUntilEnded(workflow.id, (await h.run(workflow.id, { n: 1 })).id);
    const answers = await Promise.all([retry(workflow.id, failed.id), retry(workflow.id, failed.id)]);
    expect(answers.map((res) => res.statusCode).sort()).toEqual([202, 409]);
    const [counted] = await h.db('workflow_executions').where({ retry_of: failed.id }).count({ n: '*' });
    expect(Number(counted!.n)).toBe(1);
  });

  test('a run recorded before definitions were kept is retried with the definition from its Temporal history', async () => {
    const flag = `old-${tag()}`;
    const { workflow, ids } = await linearWorkflow(flag);
    const failed = await h.pollUntilEnded(workflow.id, (await h.run(workflow.id, { n: 3 })).id);
    await h.db('workflow_executions').where({ id: failed.id }).update({ definition_sha256: null });
    // Edited since, so only the history can say what the run ran.
    await h.call('PUT', `/v2/workflows/${workflow.id}`, {
      workers: [
        { id: ids.s, name: 'S', type: 'STARTER', next: [ids.e] },
        { id: ids.e, name: 'E', type: 'ENDER', script: 'function main() { return "edited"; }' },
      ],
    });
    await raise(flag);
    const res = await retry(workflow.id, failed.id);
    expect(res.statusCode).toBe(202);
    const ended = await h.pollUntilEnded(workflow.id, res.json().workflow_execution.id);
    expect(ended.run_status).toBe('SUCCEEDED');
    expect((await h.workerExecution(ended.ender_worker_execution_id!)).result).toMatchObject({
      n: 3,
      b: true,
    });

    // Neither in the row nor in Temporal (a run Temporal never had): 409, nothing started.
    const lost = await h.run(workflow.id, {});
    const orphan = 'wfex_' + tag().padEnd(25, '0').slice(0, 25);
    await h.db('workflow_executions').insert({
      ...(await h.db('workflow_executions').where({ id: lost.id }).first()),
      id: orphan,
      run_status: 'FAILED',
      definition_sha256: null,
    });
    const refused = await retry(workflow.id, orphan);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      code: 409,
      message: expect.stringMatching(/definition it ran is no longer known/),
    });
  });

  test('retry_failed retries every FAILED run of the period, in bounded batches', async () => {
    const flag = `bulk-${tag()}`;
    const { workflow } = await linearWorkflow(flag);
    const failedIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await h.run(workflow.id, { n: i });
      failedIds.push((await h.pollUntilEnded(workflow.id, run.id)).id);
    }
    const bulk = (body: object) => h.call('POST', `/v2/workflows/${workflow.id}/retry_failed`, body);

    const noPeriod = await bulk({});
    expect(noPeriod.statusCode).toBe(400);
    expect(noPeriod.json()).toEqual({
      code: 400,
      message: 'Give the period whose failed executions to retry: start, end or date_time.',
    });
    const isoDate = await bulk({ start: '2026-01-01' });
    expect(isoDate.statusCode).toBe(400);
    expect(isoDate.json()).toEqual({ code: 400, message: expect.stringMatching(/start/) });
    const tooMany = await bulk({ start: '20200101', limit: 51 });
    expect(tooMany.statusCode).toBe(400);
    const unknown = await h.call('POST', `/v2/workflows/wrkf_${'z'.repeat(25)}/retry_failed`, {
      start: '20200101',
    });
    expect(unknown.statusCode).toBe(404);

    // A period before the runs finds nothing.
    const past = await bulk({ start: '20200101', end: '20200131' });
    expect(past.statusCode).toBe(202);
    expect(past.json()).toEqual({
      started: 0,
      workflow_executions: [],
      skipped: [],
      remaining: 0,
      has_more: false,
    });

    await raise(flag);
    const today = new Date().toISOString().slice(0, 10).replace(/-/g, '');
    const first = await bulk({ date_time: today, limit: 2 });
    expect(first.statusCode).toBe(202);
    expect(first.json()).toMatchObject({ started: 2, skipped: [], remaining: 1, has_more: true });
    // Oldest first.
    expect(first.json().workflow_executions.map((e: Execution) => e.retry_of)).toEqual(failedIds.slice(0, 2));
    const second = await bulk({ start: today });
    expect(second.json()).toMatchObject({ started: 1, remaining: 0, has_more: false });
    expect(second.json().workflow_executions.map((e: Execution) => e.retry_of)).toEqual([failedIds[2]]);
    const third = await bulk({ start: today });
    expect(third.json()).toMatchObject({ started: 0, remaining: 0, has_more: false });

    const retries = [
      ...first.json().workflow_executions,
      ...second.json().workflow_executions,
    ] as Execution[];
    for (const started of retries) {
      expect((await h.pollUntilEnded(workflow.id, started.id)).run_status).toBe('SUCCEEDED');
    }
    const audited = await h
      .db('audit_logs')
      .whereIn(
        'entity_id',
        retries.map((e) => e.id),
      )
      .where({ operation: 'EXECUTE' });
    expect(audited).toHaveLength(3);
  });

  test('the OpenAPI document declares both retry routes with every status', async () => {
    const doc = (await h.t.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    const one = doc.paths['/workflows/{id}/workflow_executions/{execution_id}/retry'].post;
    expect(Object.keys(one.responses).sort()).toEqual(['202', '400', '401', '404', '409', '429', '503']);
    expect(one.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual(
      expect.arrayContaining(['path:id', 'path:execution_id']),
    );
    const bulk = doc.paths['/workflows/{id}/retry_failed'].post;
    expect(Object.keys(bulk.responses).sort()).toEqual(['202', '400', '401', '404', '429', '503']);
    // The fields, then the rule across them: one bound of the period at least.
    const [fields, period] = bulk.requestBody.content['application/json'].schema.allOf;
    expect(Object.keys(fields.properties).sort()).toEqual([
      'date_time',
      'end',
      'limit',
      'start',
      'workspace',
    ]);
    expect(period['x-message']).toBe(
      'Give the period whose failed executions to retry: start, end or date_time.',
    );
    const schema = (title: string) =>
      Object.values(doc.components.schemas).find((s) => (s as { title?: string }).title === title) as {
        properties: Record<string, unknown>;
        required: string[];
      };
    expect(schema('WorkflowExecution').properties.retry_of).toBeDefined();
    expect(schema('WorkflowExecution').required).toContain('retry_of');
    expect(schema('WorkerExecution').properties.reused_from).toBeDefined();
  });
});
