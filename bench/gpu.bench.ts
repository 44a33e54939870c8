/**
 * The GPU check (issue 30): the Monte Carlo kernel alone (`backend.simulate`), M (250 × 1) and L
 * (3000 × 15) at 100,000 paths, stress test and cvar, on `wasm` with every core of the machine and on
 * `gpujs`, beside each other in one run. Each case runs once to warm up (gpu.js compiles its kernels
 * on the first call; that time is printed too), then 3 times; the table shows medians, the ratio,
 * and how far the two backends' answers are apart. It names the WebGPU adapter, or why there is none,
 * and on a GPU checks the device's generator against the wasm kernel's, word for word.
 *
 *   npm run bench -- gpu                 # in a checkout
 *   npm run bench -- gpu --software      # on Mesa's lavapipe (fetched into tools/lavapipe): answers, not speed
 *   node bench/gpu-bundle.mjs            # packs it for a GPU machine with no install (bench/out/gpu-check)
 *
 * Without an adapter gpu.js runs its webasm mode: then only M runs on gpujs (L would take minutes and
 * shows nothing about a GPU), and the output says so.
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { SimulationBackend } from '../calc/backends/backend';
import { createBackend } from '../calc/backends/choose';
import { describeAdapter, detectWebGpu, vulkanSearchPath } from '../calc/backends/webgpu-node';
import { drawOn } from '../calc/backends/gpujs';
import { kernelNormal, kernelWord } from '../calc/kernels/wasm-kernel';
import { seedFromNumber } from '../calc/random';
import type { SimulationResult } from '../calc/simulation';
import { PATHS, prepare, SIZES } from './calc-books';

const RUNS = 3;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

async function time(backend: SimulationBackend, run: () => Promise<SimulationResult>) {
  const started = performance.now();
  const result = await run();
  return { ms: performance.now() - started, result, backend: backend.name };
}

/** Difference of two P&L figures, relative to the size of the tail's P&L (the mean can be near 0). */
const apart = (a: number, b: number, scale: number) => Math.abs(a - b) / Math.max(Math.abs(scale), 1e-300);

/** The largest difference of two backends' component means over ev and the tails, relative to each set's largest. */
function worstComponent(a: SimulationResult, b: SimulationResult): number {
  let worst = 0;
  for (const set of ['ev', 'cvarNeg', 'cvarPos'] as const) {
    const scale = Math.max(...a[set].means.map(Math.abs));
    a[set].means.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - b[set].means[i]!) / scale)));
  }
  return worst;
}

/**
 * The generator on the device against the wasm kernel's, in JavaScript: 2^20 paths at three
 * dimensions (a factor, a driver's residual, the regime uniform). Integer words must be identical;
 * normals may differ by the device's f32 rounding of one multiply-add.
 */
async function checkGenerator(): Promise<string> {
  const { GPU } = await import('gpu.js');
  const gpu = new GPU({ mode: 'webgpu' });
  const seed = seedFromNumber(2026);
  const paths = 1 << 20;
  let draws = 0;
  let same = 0;
  let worst = 0;
  try {
    for (const dim of [0, 20, -1]) {
      const { codes, normals } = await drawOn(gpu, 'webgpu', seed, paths, dim);
      for (let p = 0; p < paths; p++) {
        const word = kernelWord(seed, p, dim >>> 0);
        draws++;
        if (codes[p] === word >>> 8) same++;
        worst = Math.max(worst, Math.abs(normals[p]! - kernelNormal(word)));
      }
    }
  } finally {
    await gpu.destroy();
  }
  return `${same === draws ? 'identical' : 'DIFFERENT'} words for ${same} of ${draws} draws; normals at most ${worst.toExponential(1)} apart`;
}

/**
 * `--software`: the same check on Mesa's lavapipe (Vulkan on the CPU), fetched into tools/lavapipe
 * as the tests fetch it. The Vulkan loader reads VK_ICD_FILENAMES and LD_LIBRARY_PATH when a process
 * starts, so the check runs again in a process of its own with them set (M only unless --size says
 * otherwise: lavapipe takes seconds a call).
 */
function runOnSoftwareAdapter(argv: readonly string[]): void {
  const root = path.resolve(__dirname, '..');
  const installed = spawnSync(process.execPath, [path.join(root, 'scripts', 'install-lavapipe.mjs')], {
    cwd: root,
    encoding: 'utf8',
  });
  if (installed.status !== 0) throw new Error(installed.stderr.trim() || 'lavapipe could not be had');
  const lavapipe = installed.stdout.trim().split('\n').pop()!;
  const rest = argv.filter((arg) => arg !== '--software' && arg !== 'gpu');
  if (!rest.some((arg) => arg.startsWith('--size='))) rest.push('--size=M');
  const run = spawnSync(process.execPath, ['--no-node-snapshot', '--import', 'tsx', __filename, ...rest], {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...process.env,
      PAS_GPU_CHECK_SOFTWARE: '1',
      VK_ICD_FILENAMES: path.join(lavapipe, 'usr', 'share', 'vulkan', 'icd.d', 'lvp_icd.json'),
      LD_LIBRARY_PATH: path.join(lavapipe, 'usr', 'lib', 'x86_64-linux-gnu'),
    },
  });
  if (run.status !== 0) throw new Error(`the GPU check on lavapipe failed (exit ${run.status})`);
}

export async function runGpuBench(argv: readonly string[] = []): Promise<void> {
  if (argv.includes('--software') && process.env.PAS_GPU_CHECK_SOFTWARE !== '1') {
    runOnSoftwareAdapter(argv);
    return;
  }
  const flag = (name: string) => argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1];
  const sizes = SIZES.filter((s) => s.label !== 'MX').filter((s) =>
    (flag('size')?.split(',') ?? [s.label]).includes(s.label),
  );
  const threads = os.availableParallelism();
  const vulkanDirs = vulkanSearchPath(process.env.LD_LIBRARY_PATH);
  const status = await detectWebGpu(vulkanDirs);
  console.log(
    `\nGPU check: ${PATHS} paths; ${new Date().toISOString()}; Node ${process.version}; ` +
      `CPU: ${os.cpus()[0]?.model ?? 'unknown'}, ${threads} cores\n` +
      `WebGPU adapter: ${status.ok ? `${describeAdapter(status.adapter)} ${JSON.stringify(status.adapter)}` : `none (${status.reason})`}`,
  );
  if (status.ok && status.software) {
    console.log(
      'A SOFTWARE adapter (the CPU through Vulkan, not a GPU): the answers and the generator check below are\n' +
        "meaningful; the speed is not, and says nothing about a GPU (lavapipe runs WGSL on the CPU's cores).",
    );
  }
  const wasm = await createBackend('wasm', { threads });
  const gpu = await createBackend('gpujs', { threads, vulkanDirs });
  const onGpu = gpu.detail.startsWith('gpu.js webgpu');
  console.log(`wasm: ${wasm.detail}\ngpujs: ${gpu.detail}`);
  if (onGpu) console.log(`generator on the device against the wasm kernel's: ${await checkGenerator()}`);
  console.log(
    '\n| size | calculation | wasm p50 ms | gpujs first call ms | gpujs p50 ms | gpujs vs wasm | ev L apart | cvar L apart | worst component apart |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  try {
    for (const size of sizes) {
      const { calcs } = prepare(size);
      for (const calc of calcs) {
        const run = (backend: SimulationBackend) => () => backend.simulate(calc.scenario, calc.simulation);
        await run(wasm)();
        const wasmTimes: number[] = [];
        let wasmResult: SimulationResult | null = null;
        for (let i = 0; i < RUNS; i++) {
          const t = await time(wasm, run(wasm));
          wasmTimes.push(t.ms);
          wasmResult = t.result;
        }
        if (!onGpu && size.label === 'L') {
          console.log(
            `| ${size.label} | ${calc.name} | ${median(wasmTimes).toFixed(1)} | not run: gpu.js is in its ${/^gpu\.js (\w+)/.exec(gpu.detail)?.[1] ?? 'CPU'} mode here (no GPU) | | | | | |`,
          );
          continue;
        }
        const first = await time(gpu, run(gpu));
        const gpuTimes: number[] = [];
        let gpuResult = first.result;
        for (let i = 0; i < (onGpu ? RUNS : 1); i++) {
          const t = await time(gpu, run(gpu));
          gpuTimes.push(t.ms);
          gpuResult = t.result;
        }
        const w = median(wasmTimes);
        const g = median(gpuTimes);
        console.log(
          `| ${size.label} | ${calc.name} | ${w.toFixed(1)} | ${first.ms.toFixed(0)} | ${g.toFixed(1)} | ` +
            `${(w / g).toFixed(2)}× | ${apart(wasmResult!.ev.portfolio, gpuResult.ev.portfolio, wasmResult!.cvarNeg.portfolio).toExponential(1)} | ` +
            `${apart(wasmResult!.cvarNeg.portfolio, gpuResult.cvarNeg.portfolio, wasmResult!.cvarNeg.portfolio).toExponential(1)} | ` +
            `${worstComponent(wasmResult!, gpuResult).toExponential(1)} |`,
        );
      }
    }
  } finally {
    await wasm.close();
    await gpu.close();
  }
  console.log(
    `\n(gpujs vs wasm: how many times faster gpujs is; "apart": the difference of the two backends' mean ` +
      `and tail-mean P&L over the tail-mean's size, and the largest difference of a component mean over ` +
      `its set's largest. Both draw the same paths with the same generator, so they agree to f32 ` +
      `rounding: docs/calculations.md states the tolerance, 1e-6 for the P&L and 1e-5 for components ` +
      `(2e-3 for an option line's).)`,
  );
}

if (require.main === module) {
  runGpuBench(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
