import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startHarness, workerId, type WorkflowHarness } from './workflow-harness';

/**
 * docs/workflows.md's "What `main(args)` receives" examples, run as written: one workflow with a worker of
 * every type, built from the page's own code block, so the documented contract cannot drift.
 */
function readmeScripts(): string[] {
  const readme = readFileSync(path.resolve(__dirname, '..', '..', 'docs', 'workflows.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## What `main(args)` receives'));
  const block = /```js\n([\s\S]*?)```/.exec(section)![1]!;
  return block
    .split(/\n(?=\/\/ )/)
    .map((script) => script.trim())
    .filter(Boolean);
}

describe('the workflow authors’ contract in docs/workflows.md', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    h = await startHarness({ worker: true });
  });
  afterAll(async () => {
    await h.close();
  });

  test('every worker type’s example runs, and main(args) carries the documented fields', async () => {
    const scripts = readmeScripts();
    expect(scripts.map((script) => script.split(':')[0])).toEqual([
      '// STARTER',
      '// BASIC',
      '// FORKER',
      '// BASIC inside a branch',
      '// BARRIER',
      '// CONDITIONAL',
      '// ENDER',
    ]);
    const [starter, basic, forker, branch, barrier, conditional, ender] = scripts;
    const [s, b, f, p, j, c, e, small] = Array.from({ length: 8 }, () => workerId());
    const workflow = await h.store({
      name: 'Authors contract',
      workers: [
        { id: s, name: 'Start', type: 'STARTER', script: starter, next: [b] },
        { id: b, name: 'Upper', type: 'BASIC', script: basic, next: [f] },
        { id: f, name: 'Split', type: 'FORKER', script: forker, next: [p] },
        { id: p, name: 'Each', type: 'BASIC', script: branch, next: [j] },
        { id: j, name: 'Join', type: 'BARRIER', script: barrier, next: [c] },
        {
          id: c,
          name: 'Small?',
          type: 'CONDITIONAL',
          script: conditional,
          next_true: [e],
          next_false: [small],
        },
        { id: e, name: 'End', type: 'ENDER', script: ender },
        { id: small, name: 'Too many', type: 'ENDER' },
      ],
    });
    const started = await h.run(workflow.id, { symbols: ['aapl', 'jpm'], limit: 100 });
    const ended = await h.pollUntilEnded(workflow.id, started.id);
    expect(ended.run_status).toBe('SUCCEEDED');
    const result = await h.workerExecution(ended.ender_worker_execution_id!);
    expect(result.worker_id).toBe(e);
    expect(result.result).toEqual({ checked: ['AAPL', 'JPM'], run: started.id });

    // The branch saw its item and its place, as the table says.
    const rows = (await h
      .db('worker_executions')
      .where({ workflow_execution_id: started.id, worker_id: p })
      .orderBy('parallel_index')) as Array<{ result: unknown }>;
    expect(rows.map((row) => row.result)).toEqual([
      { symbol: 'AAPL', branch: 0, of: 2 },
      { symbol: 'JPM', branch: 1, of: 2 },
    ]);
  });
});
