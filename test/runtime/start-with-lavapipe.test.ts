import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePorts } from '../support/free-ports';
import { lavapipeEnvironment } from '../support/lavapipe';

/**
 * A machine where lavapipe is visible (a desktop, a CI image with Mesa's Vulkan drivers): WebGPU
 * would answer there with a CPU "adapter". `npm start` must be as quick to serve as where it is not:
 * the probe sees from the Vulkan drivers' manifests that lavapipe is the only one and skips gpujs
 * without starting WebGPU (Dawn) at all. Each start is a real launcher (embedded PostgreSQL and
 * Temporal, api, worker) on a fresh data folder, timed from process start to the first 200 of
 * GET /v2/health_check; both durations are printed, and what is checked is the cause.
 */
const ROOT = path.resolve(__dirname, '..', '..');

interface Start {
  ms: number;
  backend: { name: string; probe_ms: Record<string, number | string> };
}

async function timedStart(extra: Record<string, string>): Promise<Start> {
  const dataDir = await mkdtemp(path.join(ROOT, '.test-data', 'start-lavapipe-'));
  const [metrics, api, postgres, temporal, ui] = await freePorts(5, { span: 2 });
  let output = '';
  const started = performance.now();
  const child: ChildProcess = spawn(
    process.execPath,
    ['--no-node-snapshot', '--import', 'tsx', 'ops/launcher/launcher.ts'],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(api),
        EMBEDDED_POSTGRES_PORT: String(postgres),
        TEMPORAL_DEV_PORT: String(temporal),
        TEMPORAL_UI_PORT: String(ui),
        METRICS_PORT: String(metrics),
        LOG_LEVEL: 'warn',
        CALC_BACKEND: 'auto',
        ...extra,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    const deadline = Date.now() + 150_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the launcher exited early:\n${output}`);
      if (Date.now() > deadline) throw new Error(`no health_check 200 within 150 s:\n${output}`);
      const res = await fetch(`http://127.0.0.1:${api}/v2/health_check`).catch(() => null);
      if (res?.status === 200) {
        const ms = performance.now() - started;
        const body = (await res.json()) as { calculation_backend: Start['backend'] };
        return { ms, backend: body.calculation_backend };
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    // The worker's first Python environment build may still be unpacking into DATA_DIR as it stops.
    await rm(dataDir, { recursive: true, force: true, maxRetries: 20, retryDelay: 250 });
  }
}

test('npm start with lavapipe visible: gpujs skipped without starting WebGPU, the same candidates timed as without (process start to the first health_check 200, both printed)', async () => {
  const lavapipe = lavapipeEnvironment();
  // Without: no Vulkan driver visible. With: lavapipe's ICD and its Vulkan loader, as on a machine with Mesa.
  const without = await timedStart({ VK_ICD_FILENAMES: '/nonexistent/none.json', LD_LIBRARY_PATH: '' });
  const withLavapipe = await timedStart(lavapipe);
  console.log(
    `npm start to the first health_check 200: ${without.ms.toFixed(0)} ms without lavapipe ` +
      `(${JSON.stringify(without.backend.probe_ms)}), ${withLavapipe.ms.toFixed(0)} ms with it visible ` +
      `(${JSON.stringify(withLavapipe.backend.probe_ms)})`,
  );
  expect(withLavapipe.backend.probe_ms.gpujs).toBe(
    'skipped: software adapter (libvulkan_lvp.so (lvp_icd.json), the only Vulkan driver here: WebGPU not started)',
  );
  expect(withLavapipe.backend.name).not.toBe('gpujs');
  expect(without.backend.probe_ms.gpujs).toMatch(/^skipped: /);
  const timed = (t: Record<string, unknown>) =>
    Object.keys(t)
      .filter((k) => typeof t[k] === 'number')
      .sort();
  expect(timed(withLavapipe.backend.probe_ms)).toEqual(timed(without.backend.probe_ms));
}, 400_000);

/** The probe alone in a process of its own, with the driver manifests unknown to it (so WebGPU is asked). */
const PROBE = `
  const { chooseBackend } = await import('./calc/backends/choose.ts');
  const { vulkanSearchPath } = await import('./calc/backends/webgpu-node.ts');
  const { backend, timings } = await chooseBackend({
    threads: 2,
    clock: () => performance.now(),
    vulkanDirs: vulkanSearchPath(process.env.LD_LIBRARY_PATH),
  });
  await backend.close();
  console.log(JSON.stringify({ chosen: backend.name, timings }));
  process.exit(0);
`;

test('where the drivers are not known beforehand, WebGPU starts on lavapipe and its own answer (llvmpipe) makes the probe skip it', () => {
  const result = spawnSync(
    process.execPath,
    ['--no-node-snapshot', '--import', 'tsx', '--input-type=module', '-e', PROBE],
    { cwd: ROOT, encoding: 'utf8', timeout: 300_000, env: { ...process.env, ...lavapipeEnvironment() } },
  );
  if (result.status !== 0) throw new Error(`the probe failed: ${result.stderr.slice(-2000)}`);
  const { chosen, timings } = JSON.parse(result.stdout.trim().split('\n').pop()!) as {
    chosen: string;
    timings: Record<string, unknown>;
  };
  expect(timings.gpujs).toMatch(/^skipped: software adapter \(mesa software \(llvmpipe: Mesa 25\./);
  expect(chosen).not.toBe('gpujs');
}, 300_000);
