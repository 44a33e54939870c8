import { WorkflowFailedError } from '@temporalio/client';
import { createTestAccount, type TestAccount } from '../support/test-app';
import {
  type Execution,
  startHarness,
  stepsInHistory,
  type WorkflowHarness,
  workerId,
} from './workflow-harness';

/**
 * Runs on a real Temporal dev server, with a real Worker and real isolates: fan-out and join,
 * conditional routing, failure semantics, the executions API, hostile scripts, TypeScript
 * templates and the SDK bridge's scoping.
 */
describe('workflow runs', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    // Short limits keep the hostile cases quick; every honest script here takes milliseconds.
    h = await startHarness({ worker: true, sandboxLimits: { timeoutMs: 3_000, memoryLimitMb: 64 } });
  }, 120_000);
  afterAll(() => h.close());

  async function runToEnd(
    workflowId: string,
    parameters: object = {},
    who?: TestAccount,
  ): Promise<Execution> {
    const started = await h.run(workflowId, parameters, who);
    return h.pollUntilEnded(workflowId, started.id, who);
  }

  async function enderResult(execution: Execution): Promise<unknown> {
    expect(execution.run_status).toBe('SUCCEEDED');
    return (await h.workerExecution(execution.ender_worker_execution_id!)).result;
  }

  /** Every payload's bytes in a Temporal history, decoded: what Temporal stored for the run. */
  function payloadTexts(value: unknown): string {
    // isView, not instanceof: the SDK's buffers come from Node's realm, not the test's.
    if (ArrayBuffer.isView(value))
      return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('utf8');
    if (Array.isArray(value)) return value.map(payloadTexts).join('\n');
    if (value !== null && typeof value === 'object') return Object.values(value).map(payloadTexts).join('\n');
    return '';
  }

  /** A run's worker executions, grouped by worker in the order the workers started. */
  async function rowsOf(executionId: string) {
    return h
      .db('worker_executions')
      .where({ workflow_execution_id: executionId })
      .orderByRaw('min(created_at) over (partition by worker_id), worker_id, parallel_index');
  }

  describe('fan-out and join', () => {
    const [s, f, b, j, e] = [workerId(), workerId(), workerId(), workerId(), workerId()];
    let workflowId: string;

    beforeAll(async () => {
      workflowId = (
        await h.store({
          name: 'Fan out',
          workers: [
            { id: s, name: 'Start', type: 'STARTER', next: [f] },
            {
              id: f,
              name: 'Split',
              type: 'FORKER',
              script: 'function main(args) { return { items: args.inputs.values }; }',
              next: [b],
            },
            {
              id: b,
              name: 'Times ten',
              type: 'BASIC',
              script:
                'function main(args) { return { value: args.inputs * 10, index: args.parallel_info.index, length: args.parallel_info.length }; }',
              next: [j],
            },
            {
              id: j,
              name: 'Join',
              type: 'BARRIER',
              script:
                'function main(args) { return { total: args.inputs.reduce((sum, r) => sum + r.value, 0), order: args.inputs.map((r) => r.index), type: args.worker_type, parallel: args.parallel_info }; }',
              next: [e],
            },
            { id: e, name: 'End', type: 'ENDER' },
          ],
        })
      ).id;
    });

    test('each item runs in its own branch with parallel_index; the BARRIER gets the results in order', async () => {
      const ended = await runToEnd(workflowId, { values: [1, 2, 3] });
      expect(await enderResult(ended)).toEqual({
        total: 60,
        order: [0, 1, 2],
        type: 'BARRIER',
        parallel: { index: -1, length: -1 },
      });
      const rows = await rowsOf(ended.id);
      expect(rows.map((row) => [row.worker_id, row.parallel_index, row.status])).toEqual([
        [s, -1, 'COMPLETED'],
        [f, -1, 'COMPLETED'],
        [b, 0, 'COMPLETED'],
        [b, 1, 'COMPLETED'],
        [b, 2, 'COMPLETED'],
        [j, -1, 'COMPLETED'],
        [e, -1, 'COMPLETED'],
      ]);
      const branch = rows.find((row) => row.worker_id === b && row.parallel_index === 1)!;
      expect(branch.result).toEqual({ value: 20, index: 1, length: 3 });
      expect(branch.input_params).toEqual({
        script_inputs: {},
        parallel_info: { index: 1, length: 3 },
        inputs_info: {
          joined: false,
          sources: [{ worker_id: f, worker_execution_id: rows[1]!.id, item: 1 }],
        },
      });
      expect(ended.resume).toMatchObject({
        worker_executions: { total: 7, completed: 7, error: 0, running: 0 },
        parallel_index_max: 2,
        failure: null,
      });

      // One activity per worker execution, named `<worker>#<parallel_index>` in the Temporal UI (inline
      // scripts are short steps: local activities, named by their summary).
      // The records close before the Temporal run does: wait for it, then read its history.
      await h.t.temporal.workflow.getHandle(ended.id).result();
      const history = await h.t.temporal.workflow.getHandle(ended.id).fetchHistory();
      const activityIds = stepsInHistory(history).map((step) => step.step);
      expect(activityIds.filter((id) => id.includes('#')).sort()).toEqual(
        [`${s}#-1`, `${f}#-1`, `${b}#0`, `${b}#1`, `${b}#2`, `${j}#-1`, `${e}#-1`].sort(),
      );
      // Results travel through PostgreSQL: the payloads in the history carry ids, never results.
      const payloads = payloadTexts(history);
      expect(payloads).toContain(rows[2]!.id);
      expect(payloads).not.toContain('"total"');
      expect(payloads).not.toContain('"value"');
    });

    test('the grouped worker-executions list: one element per execution, parallel_index_max', async () => {
      const ended = await runToEnd(workflowId, { values: [5, 6] });
      const res = await h.call(
        'GET',
        `/v2/workflows/${workflowId}/worker_executions?workflow_execution_id=${ended.id}`,
      );
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.parallel_index_max).toBe(1);
      expect(body.worker_executions).toHaveLength(6);
      const [first] = body.worker_executions;
      expect(first).toEqual({
        worker_id: s,
        worker_name: 'Start',
        is_parallel_execution: false,
        execution: {
          id: expect.stringMatching(/^wkex_[A-Za-z0-9]{25}$/),
          worker_id: s,
          worker_name: 'Start',
          worker_type: 'STARTER',
          status: 'COMPLETED',
          created: expect.any(Number),
          started: expect.any(Number),
          ended: expect.any(Number),
          duration: 0,
          parallel_index: -1,
        },
      });
      const branches = body.worker_executions.filter((item: { worker_id: string }) => item.worker_id === b);
      expect(
        branches.map((item: { is_parallel_execution: boolean; execution: { parallel_index: number } }) => [
          item.is_parallel_execution,
          item.execution.parallel_index,
        ]),
      ).toEqual([
        [true, 0],
        [true, 1],
      ]);
      // with_result as Python clients send it.
      const withResult = await h.call(
        'GET',
        `/v2/workflows/${workflowId}/worker_executions?workflow_execution_id=${ended.id}&with_result=True`,
      );
      expect(withResult.json().worker_executions[5].execution.result).toEqual({
        total: 110,
        order: [0, 1],
        type: 'BARRIER',
        parallel: { index: -1, length: -1 },
      });
      // One execution through the workflow's path: result by default, and not another workflow's.
      const one = await h.call(
        'GET',
        `/v2/workflows/${workflowId}/worker_executions?worker_execution_id=${branches[1].execution.id}`,
      );
      expect(one.json().worker_execution).toMatchObject({
        parallel_index: 1,
        result: { value: 60, index: 1, length: 2 },
      });
      const without = await h.call(
        'GET',
        `/v2/workflows/${workflowId}/worker_executions?worker_execution_id=${branches[1].execution.id}&with_result=False`,
      );
      expect(without.json().worker_execution.result).toBeUndefined();
      const elsewhere = await h.call(
        'GET',
        `/v2/workflows/wrkf_AAAAAAAAAAAAAAAAAAAAAAAAA/worker_executions?worker_execution_id=${branches[1].execution.id}`,
      );
      expect(elsewhere.statusCode).toBe(404);
    });

    test('an empty list makes no branch: the BARRIER joins nothing', async () => {
      const ended = await runToEnd(workflowId, { values: [] });
      expect(await enderResult(ended)).toMatchObject({ total: 0, order: [] });
      expect((await rowsOf(ended.id)).map((row) => row.worker_id)).toEqual([s, f, j, e]);
    });

    test('the executions list: most recent first, paged by token, with_resume', async () => {
      const first = await h.call('GET', `/v2/workflows/${workflowId}/workflow_executions?page_size=2`);
      expect(first.statusCode).toBe(200);
      const page1 = first.json();
      expect(page1.workflow_executions).toHaveLength(2);
      expect(page1.workflow_executions[0].resume).toBeNull();
      expect(page1.next_page_token).toEqual(expect.any(String));
      const second = await h.call(
        'GET',
        `/v2/workflows/${workflowId}/workflow_executions?page_size=2&with_resume=True&page_token=${page1.next_page_token}`,
      );
      const page2 = second.json();
      expect(page2.workflow_executions).toHaveLength(1);
      expect(page2.next_page_token).toBeNull();
      expect(page2.workflow_executions[0].resume).toMatchObject({ parallel_index_max: 2 });
      const all = [...page1.workflow_executions, ...page2.workflow_executions];
      expect(new Set(all.map((x: { id: string }) => x.id)).size).toBe(3);
      const created = all.map((x: { created: number }) => x.created);
      expect([...created].sort((x, y) => y - x)).toEqual(created);
      const bad = await h.call('GET', `/v2/workflows/${workflowId}/workflow_executions?page_token=nonsense`);
      expect(bad.statusCode).toBe(400);
      const otherWorkspace = await h.call(
        'GET',
        `/v2/workflows/${workflowId}/workflow_executions?workspace=research`,
      );
      expect(otherWorkspace.statusCode).toBe(404);
      const unknown = await h.call('GET', '/v2/workflows/wrkf_AAAAAAAAAAAAAAAAAAAAAAAAA/workflow_executions');
      expect(unknown.statusCode).toBe(404);
    });
  });

  describe('conditional routing', () => {
    const [s, c, big, e, small] = [workerId(), workerId(), workerId(), workerId(), workerId()];
    let workflowId: string;

    beforeAll(async () => {
      workflowId = (
        await h.store({
          name: 'Route by size',
          workers: [
            { id: s, name: 'Start', type: 'STARTER', next: [c] },
            {
              id: c,
              name: 'Big?',
              type: 'CONDITIONAL',
              script: 'function main(args) { return args.inputs.amount > 100; }',
              next_true: [big],
              next_false: [small],
            },
            {
              id: big,
              name: 'Big',
              type: 'BASIC',
              script: 'function main(args) { return { label: "big", amount: args.inputs.amount }; }',
              next: [e],
            },
            { id: e, name: 'End', type: 'ENDER' },
            {
              id: small,
              name: 'Small end',
              type: 'ENDER',
              script: 'function main(args) { return { label: "small", seen: args.inputs }; }',
            },
          ],
        })
      ).id;
    });

    test('true goes to next_true, false to next_false; the chosen worker gets the CONDITIONAL input', async () => {
      const started = await h.run(workflowId, { amount: 500 });
      // Two ENDERs: which one ends the run is known only when it does.
      expect(started.ender_worker_id).toBeNull();
      const bigRun = await h.pollUntilEnded(workflowId, started.id);
      expect(await enderResult(bigRun)).toEqual({ label: 'big', amount: 500 });
      expect(bigRun.ender_worker_id).toBe(e);
      expect((await rowsOf(bigRun.id)).map((row) => row.worker_id)).toEqual([s, c, big, e]);

      const smallRun = await runToEnd(workflowId, { amount: 5 });
      expect(await enderResult(smallRun)).toEqual({ label: 'small', seen: { amount: 5 } });
      expect(smallRun.ender_worker_id).toBe(small);
      expect((await rowsOf(smallRun.id)).map((row) => row.worker_id)).toEqual([s, c, small]);

      // worker_id keeps the runs that ran that worker.
      const filtered = await h.call(
        'GET',
        `/v2/workflows/${workflowId}/workflow_executions?worker_id=${big}`,
      );
      expect(filtered.json().workflow_executions.map((x: { id: string }) => x.id)).toEqual([bigRun.id]);
    });

    test('a CONDITIONAL that does not answer true or false fails the run', async () => {
      const [s2, c2, e2] = [workerId(), workerId(), workerId()];
      const broken = await h.store({
        name: 'Undecided',
        workers: [
          { id: s2, name: 'S', type: 'STARTER', next: [c2] },
          {
            id: c2,
            name: 'C',
            type: 'CONDITIONAL',
            script: 'function main() { return "yes"; }',
            next_true: [e2],
            next_false: [e2],
          },
          { id: e2, name: 'E', type: 'ENDER' },
        ],
      });
      const failed = await runToEnd(broken.id);
      expect(failed.run_status).toBe('FAILED');
      expect(failed.resume).toMatchObject({
        failure: { worker_id: c2, message: expect.stringMatching(/A CONDITIONAL must return true or false/) },
      });
    });
  });

  describe('failure semantics', () => {
    test('a failing worker that is not the ENDER ends the run FAILED; legacy status OK, then COMPLETED', async () => {
      const [s, slow, e] = [workerId(), workerId(), workerId()];
      const workflow = await h.store({
        name: 'Fails midway',
        workers: [
          { id: s, name: 'S', type: 'STARTER', next: [slow] },
          {
            id: slow,
            name: 'Slow then broken',
            type: 'BASIC',
            script:
              'function main() { const until = Date.now() + 800; while (Date.now() < until) {} console.error("giving up"); throw new Error("no prices for 20240101"); }',
            next: [e],
          },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      });
      const started = await h.run(workflow.id);
      expect(started).toMatchObject({ run_status: 'RUNNING', status: 'OK', ender_worker_execution_id: null });
      const polled = await h.call(
        'GET',
        `/v2/workflows/${workflow.id}/workflow_executions?workflow_execution_id=${started.id}`,
      );
      expect(polled.json().workflow_execution).toMatchObject({
        run_status: 'RUNNING',
        status: 'OK',
        duration: null,
      });

      const ended = await h.pollUntilEnded(workflow.id, started.id);
      expect(ended).toMatchObject({
        run_status: 'FAILED',
        status: 'COMPLETED',
        ender_worker_id: e,
        ender_worker_execution_id: null,
        resume: {
          failure: {
            worker_id: slow,
            parallel_index: -1,
            worker_execution_id: expect.stringMatching(/^wkex_/),
            message: expect.stringMatching(/^script: no prices for 20240101/),
          },
        },
      });
      expect(ended.duration).toBeGreaterThan(0.5);
      expect(ended.total_execution_time).toBeGreaterThan(0.5);
      expect(ended.real_execution_time).toBeGreaterThan(0.3);
      const rows = await rowsOf(started.id);
      expect(rows.map((row) => [row.worker_id, row.status])).toEqual([
        [s, 'COMPLETED'],
        [slow, 'ERROR'],
      ]);
      const failedStep = await h.workerExecution(rows[1]!.id);
      expect(failedStep).toMatchObject({
        status: 'ERROR',
        result: { error: expect.stringMatching(/no prices/) },
        logs: [expect.objectContaining({ level: 'error', message: 'giving up' })],
      });
      // The records close before the Temporal run does, which then fails (red in the Temporal UI).
      await expect(h.t.temporal.workflow.getHandle(started.id).result()).rejects.toThrow(WorkflowFailedError);
      const description = await h.t.temporal.workflow.getHandle(started.id).describe();
      expect(description.status.name).toBe('FAILED');
      expect(description.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value])).toEqual(
        expect.arrayContaining([['PasRunStatus', 'FAILED']]),
      );
      expect(description.memo).toMatchObject({ workflow_id: workflow.id, run_status: 'FAILED' });
    });

    test('a failing branch fails the run at once; the branches still running are stopped', async () => {
      const [s, f, b, j, e] = [workerId(), workerId(), workerId(), workerId(), workerId()];
      const workflow = await h.store({
        name: 'One bad branch',
        workers: [
          { id: s, name: 'S', type: 'STARTER', next: [f] },
          { id: f, name: 'F', type: 'FORKER', next: [b] },
          {
            id: b,
            name: 'B',
            type: 'BASIC',
            script:
              'function main(args) { if (args.parallel_info.index === 1) throw new Error("branch one broke"); const until = Date.now() + 2500; while (Date.now() < until) {} return 1; }',
            next: [j],
          },
          { id: j, name: 'J', type: 'BARRIER', next: [e] },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      });
      // A scriptless FORKER forks its input: the STARTER's inputs, i.e. the run parameters.
      const ended = await runToEnd(workflow.id, { items: ['a', 'b', 'c'] });
      expect(ended.run_status).toBe('FAILED');
      expect(ended.resume).toMatchObject({ failure: { worker_id: b, parallel_index: 1 } });
      const rows = await rowsOf(ended.id);
      expect(rows.some((row) => row.status === 'RUNNING')).toBe(false);
      expect(rows.map((row) => row.worker_id)).not.toContain(j);
      const siblings = rows.filter((row) => row.worker_id === b && row.parallel_index !== 1);
      // Had the run waited for them, they would have COMPLETED after 2.5 s.
      for (const sibling of siblings) {
        expect(sibling).toMatchObject({
          status: 'ERROR',
          error_message: `Stopped: the run failed at worker ${b}.`,
        });
      }
    });

    test('hostile scripts: an infinite loop and a memory bomb end their worker with ERROR; the worker stays healthy', async () => {
      const hostile = async (script: string) => {
        const [s, x, e] = [workerId(), workerId(), workerId()];
        const workflow = await h.store({
          name: 'Hostile',
          workers: [
            { id: s, name: 'S', type: 'STARTER', next: [x] },
            { id: x, name: 'X', type: 'BASIC', script, next: [e] },
            { id: e, name: 'E', type: 'ENDER' },
          ],
        });
        const ended = await runToEnd(workflow.id);
        expect(ended.run_status).toBe('FAILED');
        const [, step] = await rowsOf(ended.id);
        return step;
      };
      const loop = await hostile('function main() { while (true) {} }');
      expect(loop).toMatchObject({
        status: 'ERROR',
        error_message: 'timeout: Script timed out after 3000 ms',
      });
      const bomb = await hostile(
        'function main() { const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random())); }',
      );
      expect(bomb).toMatchObject({
        status: 'ERROR',
        error_message: 'memory: Script exceeded the memory limit of 64 MB',
      });
      const escape = await hostile('function main() { return process.env; }');
      expect(escape.error_message).toMatch(/^script: process is not defined/);

      const [s, ok, e] = [workerId(), workerId(), workerId()];
      const healthy = await h.store({
        name: 'After the attack',
        workers: [
          { id: s, name: 'S', type: 'STARTER', next: [ok] },
          {
            id: ok,
            name: 'OK',
            type: 'BASIC',
            script: 'function main(args) { return { fine: args.inputs.n + 1 }; }',
            next: [e],
          },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      });
      expect(await enderResult(await runToEnd(healthy.id, { n: 41 }))).toEqual({ fine: 42 });
    });
  });

  describe('worker templates', () => {
    test('a TypeScript template is transpiled and run, with its form defaults and the script args contract', async () => {
      const template = await h.call('POST', '/v2/worker_templates', {
        name: 'Scale (TypeScript)',
        script_runtime: 'typescript',
        form_inputs: [
          { id: 'factor', type: 'number', mandatory: true },
          { id: 'label', type: 'string', default: 'scaled' },
        ],
        script: [
          'interface Args { inputs: { value: number }; script_inputs: { factor: number; label: string };',
          '  parallel_info: { index: number; length: number }; worker_type: string; workspace: string;',
          '  worker_id: string; workflow_id: string; workflow_execution_id: string; inputs_info: unknown }',
          'type Result = Record<string, unknown>;',
          'export function main(args: Args): Result {',
          '  const scaled: number = args.inputs.value * args.script_inputs.factor;',
          '  return { [args.script_inputs.label]: scaled, parallel: args.parallel_info, type: args.worker_type,',
          '    workspace: args.workspace, ids: [args.worker_id, args.workflow_id, args.workflow_execution_id] };',
          '}',
        ].join('\n'),
      });
      expect(template.statusCode).toBe(200);
      const templateId = template.json().worker_template.id;
      const [s, t, e] = [workerId(), workerId(), workerId()];
      const workflow = await h.store({
        name: 'Typed',
        workers: [
          { id: s, name: 'S', type: 'STARTER', next: [t] },
          {
            id: t,
            name: 'T',
            type: 'BASIC',
            template_id: templateId,
            script_inputs: { factor: 3 },
            next: [e],
          },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      });
      const ended = await runToEnd(workflow.id, { value: 7 });
      expect(await enderResult(ended)).toEqual({
        scaled: 21,
        parallel: { index: -1, length: -1 },
        type: 'BASIC',
        workspace: 'main',
        ids: [t, workflow.id, ended.id],
      });

      // A template that does not transpile is refused when published; the stored one keeps running.
      const broken = await h.call('PUT', `/v2/worker_templates/${templateId}`, {
        script: 'export function main(args: { a: number ) { return 1; }',
      });
      expect(broken.statusCode).toBe(400);
      expect(broken.json().message).toMatch(/line 1/);
      const again = await runToEnd(workflow.id, { value: 7 });
      expect(await enderResult(again)).toMatchObject({ scaled: 21 });
    });

    test('STARTER templates take required inputs from the run parameters, checked when the run starts', async () => {
      const template = await h.call('POST', '/v2/worker_templates', {
        name: 'Needs a portfolio id',
        form_inputs: [{ id: 'portfolio_id', type: 'string', mandatory: true }],
        script:
          'function main(args) { return { id: args.script_inputs.portfolio_id, body: args.script_inputs.body }; }',
      });
      const [s, e] = [workerId(), workerId()];
      const workflow = await h.store({
        name: 'Parameterised',
        workers: [
          { id: s, name: 'S', type: 'STARTER', template_id: template.json().worker_template.id, next: [e] },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      });
      const ok = await runToEnd(workflow.id, { portfolio_id: 'port_1', body: { a: 1 } });
      expect(await enderResult(ok)).toEqual({ id: 'port_1', body: { a: 1 } });
      const missing = await runToEnd(workflow.id, {});
      expect(missing.run_status).toBe('FAILED');
      expect((missing.resume as { failure: { message: string } }).failure.message).toBe(
        'Invalid script inputs: the required script input "portfolio_id" is missing.',
      );
    });
  });

  describe('the SDK bridge', () => {
    test("a script reaches only its own account's and workspace's data; its calls are audited as WORKER", async () => {
      const other = await createTestAccount(h.db);
      const portfolio = async (name: string, workspace: string, who?: TestAccount) => {
        const res = await h.call(
          'POST',
          '/v2/portfolios',
          { name, workspace, securities: [{ id: 'p1', symbol: 'AAPL', quantity: 10 }] },
          who,
        );
        expect(res.statusCode).toBe(200);
        return res.json().portfolio.id as string;
      };
      const own = await portfolio('Own book', 'main');
      const research = await portfolio('Research book', 'research');
      const foreign = await portfolio('Foreign book', 'main', other);

      const [s, x, e] = [workerId(), workerId(), workerId()];
      const workflow = await h.store({
        name: 'Bridge probe',
        workers: [
          { id: s, name: 'S', type: 'STARTER', next: [x] },
          {
            id: x,
            name: 'Probe',
            type: 'BASIC',
            script: `
              async function attempt(call) {
                try { return { ok: await call() }; } catch (error) { return { error: error.message }; }
              }
              async function main(args) {
                const p = args.parameters;
                const own = await attempt(() => sdk.retrievePortfolio(p.own));
                const research = await attempt(() => sdk.retrievePortfolio(p.research));
                const foreign = await attempt(() => sdk.retrievePortfolio(p.foreign));
                const sneaky = await sdk.listPortfolios({ query: { filters: [['workspace', '=', 'research']] } });
                const listed = await sdk.listPortfolios();
                const saved = await sdk.createDatastore({ name: 'From a worker', data: [['x'], [1]], workspace: 'research' });
                const removed = await attempt(() => sdk.deletePortfolio(p.research));
                return {
                  own: own.ok.name,
                  research: research.error,
                  foreign: foreign.error,
                  sneaky: sneaky.portfolios.length,
                  listed: listed.portfolios.map((q) => q.id),
                  saved: { id: saved.id, workspace: saved.workspace },
                  removed: removed.error,
                  names: Object.keys(sdk).sort(),
                };
              }`,
            next: [e],
          },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      });
      const ended = await runToEnd(workflow.id, { own, research, foreign });
      const result = (await enderResult(ended)) as Record<string, unknown>;
      expect(result).toMatchObject({
        own: 'Own book',
        research: `Portfolio ${research} not found.`,
        foreign: `Portfolio ${foreign} not found.`,
        sneaky: 0,
        listed: [own],
        saved: { id: expect.stringMatching(/^dats_/), workspace: 'main' },
        removed: `Portfolio ${research} not found.`,
      });
      expect(result.names).toEqual(
        expect.arrayContaining([
          'createCustomIndex',
          'deleteReport',
          'listPrivateSecurities',
          'retrievePortfolio',
          'updateDatastore',
        ]),
      );
      // The research book and the foreign one are untouched.
      expect((await h.call('GET', `/v2/portfolios/${research}?workspace=research`)).statusCode).toBe(200);
      expect((await h.call('GET', `/v2/portfolios/${foreign}`, undefined, other)).statusCode).toBe(200);

      const trail = await h
        .db('audit_logs')
        .where({ workflow_execution_id: ended.id })
        .orderBy('created_at')
        .select(
          'operation',
          'entity_type',
          'entity_id',
          'source',
          'user_email',
          'workflow_id',
          'workflow_name',
          'user_id',
        );
      expect(trail).toEqual(
        expect.arrayContaining([
          {
            operation: 'VIEW',
            entity_type: 'Portfolio',
            entity_id: own,
            source: 'WORKER',
            user_email: 'System',
            workflow_id: workflow.id,
            workflow_name: 'Bridge probe',
            user_id: h.account.ownerId,
          },
          expect.objectContaining({
            operation: 'CREATE',
            entity_type: 'Datastore',
            entity_id: (result.saved as { id: string }).id,
            source: 'WORKER',
          }),
        ]),
      );
      expect(trail.every((row) => row.source === 'WORKER')).toBe(true);
      expect(trail.some((row) => row.entity_id === research || row.entity_id === foreign)).toBe(false);
    });
  });
});
