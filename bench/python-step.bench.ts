import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { requirementsHash } from '../engine/kinds/worker-template';
import { ensureEnvironment } from '../engine/worker-templates/python-environments';
import { runPythonScript } from '../plugins/sandbox/python-sandbox';
import { runScript, type ScriptOutcome } from '../plugins/sandbox/script-sandbox';

/**
 * Step overhead of the script sandboxes: a trivial `main` returning its argument, in the JavaScript
 * sandbox (isolated-vm, the baseline) and in the Python sandbox (bubblewrap + /usr/bin/python3.11),
 * plus a Python step that imports numpy from the built-in templates' virtualenv. Each step makes
 * one SDK call through its bridge (an echo), so the channel is in the figure too.
 *
 * Cold: the first step of each case in this process (the virtualenv's files may already be in the
 * page cache: nothing here drops it). Warm: the steps after it, one at a time.
 * Targets (issue 24): p50 ≤ 150 ms for the trivial Python step, ≤ 400 ms with numpy.
 */
const ROOT = path.resolve(__dirname, '..');
const ENVIRONMENTS = path.join(ROOT, '.venvs', 'python-environments');

interface Case {
  label: string;
  run: () => Promise<ScriptOutcome>;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function timed(run: () => Promise<ScriptOutcome>): Promise<number> {
  const t0 = performance.now();
  const outcome = await run();
  const ms = performance.now() - t0;
  if (!outcome.ok) throw new Error(`step failed: ${outcome.error.kind}: ${outcome.error.message}`);
  return ms;
}

export async function runPythonStepBench(argv: readonly string[]): Promise<void> {
  const warmRuns = argv.includes('--quick') ? 10 : 40;
  const requirements = (
    await readFile(
      path.join(ROOT, 'plugins', 'builtin', 'python-return-statistics', 'requirements.txt'),
      'utf8',
    )
  )
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean);
  const built = await ensureEnvironment(
    ENVIRONMENTS,
    'python3.11',
    requirements,
    requirementsHash('python3.11', requirements),
  );
  if (!built.ok) throw new Error(`the numpy environment did not build:\n${built.log}`);
  const bridge = { echo: async (value: unknown) => value };
  const args = { script_inputs: { x: 1 }, inputs: null };
  const cases: Case[] = [
    {
      label: 'JavaScript (isolated-vm), baseline',
      run: () =>
        runScript({
          source: 'async function main(args) { return sdk.echo(args.script_inputs) }',
          args,
          bridge,
        }),
    },
    {
      label: 'Python 3.11 (bubblewrap), trivial main',
      run: () =>
        runPythonScript({
          source: 'def main(args):\n    return sdk.echo(args["script_inputs"])\n',
          args,
          bridge,
        }),
    },
    {
      label: 'Python 3.11 (bubblewrap), import numpy',
      run: () =>
        runPythonScript({
          source:
            'import numpy as np\n\ndef main(args):\n    return sdk.echo(float(np.sum(np.arange(10))))\n',
          args,
          bridge,
          venvDir: built.dir,
        }),
    },
  ];
  console.log(`\nScript step overhead (sandbox + one SDK call), ${warmRuns} warm steps per case`);
  console.log('| case | cold ms | warm p50 ms | warm p99 ms | p50 vs baseline |');
  console.log('|---|---|---|---|---|');
  let baseline: number | null = null;
  for (const item of cases) {
    const cold = await timed(item.run);
    const warm: number[] = [];
    for (let i = 0; i < warmRuns; i++) warm.push(await timed(item.run));
    warm.sort((a, b) => a - b);
    const p50 = percentile(warm, 50);
    baseline ??= p50;
    const versus = p50 === baseline ? 'baseline' : `+${(p50 - baseline).toFixed(1)} ms`;
    console.log(
      `| ${item.label} | ${cold.toFixed(1)} | ${p50.toFixed(1)} | ${percentile(warm, 99).toFixed(1)} | ${versus} |`,
    );
  }
}
