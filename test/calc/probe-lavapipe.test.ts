import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * The start-up probe on a machine where lavapipe is visible (a desktop, a CI image with Mesa): the
 * software adapter answers WebGPU, and the probe must neither time nor keep it, so choosing a
 * backend takes as long as where no adapter answers. Each probe runs in a process of its own (the
 * Vulkan loader reads VK_ICD_FILENAMES and LD_LIBRARY_PATH at start), once with lavapipe visible and
 * once without; both durations are printed, and what is checked is the cause: gpujs skipped.
 */
const ROOT = path.resolve(__dirname, '..', '..');

const PROBE = `
  const { chooseBackend } = await import('./calc/backends/choose.ts');
  const { vulkanSearchPath } = await import('./calc/backends/webgpu-node.ts');
  const started = performance.now();
  const { backend, timings } = await chooseBackend({
    threads: 2,
    clock: () => performance.now(),
    vulkanDirs: vulkanSearchPath(process.env.LD_LIBRARY_PATH),
  });
  const ms = performance.now() - started;
  await backend.close();
  console.log(JSON.stringify({ ms, chosen: backend.name, timings }));
  process.exit(0);
`;

function probe(env: Record<string, string>): {
  ms: number;
  chosen: string;
  timings: Record<string, unknown>;
} {
  const result = spawnSync(
    process.execPath,
    ['--no-node-snapshot', '--import', 'tsx', '--input-type=module', '-e', PROBE],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 300_000,
      env: { ...process.env, ...env },
    },
  );
  if (result.status !== 0) throw new Error(`the probe failed: ${result.stderr.slice(-2000)}`);
  return JSON.parse(result.stdout.trim().split('\n').pop()!) as {
    ms: number;
    chosen: string;
    timings: Record<string, unknown>;
  };
}

test('with lavapipe visible the probe skips the software adapter: nothing is timed on it, only Dawn starts (both durations printed)', () => {
  const installed = spawnSync(
    process.execPath,
    [path.join(ROOT, 'engine', 'runtime', 'install-lavapipe.mjs')],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 300_000,
    },
  );
  if (installed.status !== 0)
    throw new Error(installed.stderr.trim().split('\n').pop() ?? 'lavapipe could not be had');
  const root = installed.stdout.trim().split('\n').pop()!;
  const withLavapipe = probe({
    VK_ICD_FILENAMES: path.join(root, 'usr', 'share', 'vulkan', 'icd.d', 'lvp_icd.json'),
    LD_LIBRARY_PATH: path.join(root, 'usr', 'lib', 'x86_64-linux-gnu'),
  });
  const without = probe({ VK_ICD_FILENAMES: '/nonexistent/none.json', LD_LIBRARY_PATH: '' });
  console.log(
    `probe with lavapipe visible: ${withLavapipe.ms.toFixed(0)} ms (${JSON.stringify(withLavapipe.timings)}); ` +
      `without: ${without.ms.toFixed(0)} ms (${JSON.stringify(without.timings)})`,
  );
  expect(withLavapipe.timings.gpujs).toMatch(
    /^skipped: software adapter \(mesa software \(llvmpipe: Mesa 25\./,
  );
  expect(withLavapipe.chosen).not.toBe('gpujs');
  expect(without.timings.gpujs).toMatch(/^skipped: /);
  // The same candidates were timed either way: the software adapter added no timing of its own.
  const timed = (t: Record<string, unknown>) =>
    Object.keys(t)
      .filter((k) => typeof t[k] === 'number')
      .sort();
  expect(timed(withLavapipe.timings)).toEqual(timed(without.timings));
}, 600_000);
