/**
 * Backend construction and the start-up probe. calc/ reads no environment and no clock of its own:
 * the caller passes the thread count, the candidates it allows and a clock (e.g. performance.now).
 */
import { seedFromNumber } from '../random';
import type { Scenario } from '../simulation';
import type { BackendName, SimulationBackend } from './backend';
import { referenceBackend } from './reference';
import { threadsBackend } from './threads';
import { typedBackend } from './typed';
import { describeAdapter, detectWebGpu, softwareOnlyVulkan, type WebGpuStatus } from './webgpu-node';

export interface BackendPreferences {
  /** Backends to consider, in order of preference on a tie. Default: typed, threads, wasm, gpujs. */
  readonly candidates?: readonly BackendName[];
  /** Worker count for `threads` (e.g. os.availableParallelism()); below 2 `threads` is skipped. */
  readonly threads: number;
  /** Milliseconds, monotonic; only differences are used. */
  readonly clock: () => number;
  /**
   * Whether a WebGPU adapter answers (default: installs Dawn's navigator.gpu where a Vulkan loader
   * exists and asks). `gpujs` is timed only when one does: without a GPU, gpu.js runs its webasm
   * mode, which is never faster than `wasm` on the same cores.
   */
  readonly webgpu?: () => Promise<WebGpuStatus>;
  /** Folders to look for the Vulkan loader in (the caller's LD_LIBRARY_PATH first); default: the usual ones. */
  readonly vulkanDirs?: readonly string[];
  /**
   * The Vulkan driver manifests the loader would read (vulkanDriverManifests of the caller's
   * environment). Where every one is the CPU's, gpujs is skipped without starting WebGPU at all.
   */
  readonly vulkanDrivers?: readonly string[];
  /** Makes a candidate (default: createBackend); tests pass stand-ins. */
  readonly create?: (name: BackendName) => Promise<SimulationBackend>;
}

export async function createBackend(
  name: BackendName,
  preferences: { threads: number; vulkanDirs?: readonly string[] },
): Promise<SimulationBackend> {
  switch (name) {
    case 'reference':
      return referenceBackend();
    case 'typed':
      return typedBackend();
    case 'threads':
      return threadsBackend({ threads: preferences.threads });
    case 'wasm':
      // WebAssembly SIMD kernel on worker_threads; one worker when the machine has one core.
      return threadsBackend({ threads: Math.max(1, preferences.threads), kernel: 'wasm' });
    case 'gpujs': {
      // Loaded on demand: gpu.js probes its webgpu/webasm/cpu modes when it loads.
      const { gpujsBackend } = await import('./gpujs');
      return gpujsBackend({ vulkanDirs: preferences.vulkanDirs });
    }
  }
}

/** The probe's fixed case: 200 securities × 2 projections × 8192 paths, one distress regime. */
export function probeScenario(): Scenario {
  const k = 2;
  const drivers = 200;
  const root = (scale: number) => Float64Array.from([0.02 * scale, 0, 0.01 * scale, 0.015 * scale]);
  return {
    k,
    regimes: [
      { probability: 0.1, mean: new Float64Array(k), root: root(2) },
      { probability: 0.9, mean: new Float64Array(k), root: root(1) },
    ],
    beta: new Float64Array(drivers * k).map((_, i) => 0.5 + (i % 5) * 0.2),
    residualSd: new Float64Array(drivers).fill(0.02),
    exposure: new Float64Array(drivers).map((_, d) => 1000 + 10 * d),
    pinned: null,
  };
}

export interface ProbeResult {
  readonly backend: SimulationBackend;
  /** Best-of-two milliseconds per candidate; a candidate that failed to start has its error instead. */
  readonly timings: Readonly<Record<string, number | string>>;
}

/**
 * Times each candidate on the probe case (one warm-up, best of two) and keeps the fastest; the others
 * are closed. A candidate that throws (no worker support, gpu.js failing to load) is skipped and
 * reported, and so is `gpujs` where no WebGPU adapter answers. `typed` always works, so there is
 * always a result.
 */
export async function chooseBackend(preferences: BackendPreferences): Promise<ProbeResult> {
  const candidates = preferences.candidates ?? ['typed', 'threads', 'wasm', 'gpujs'];
  const scenario = probeScenario();
  const options = { paths: 8192, seed: seedFromNumber(1), tail: 0.05 };
  const timings: Record<string, number | string> = {};
  let best: { backend: SimulationBackend; ms: number } | null = null;
  for (const name of candidates) {
    if (name === 'threads' && preferences.threads < 2) {
      timings[name] = 'skipped: fewer than 2 threads';
      continue;
    }
    if (name === 'gpujs') {
      const software = preferences.webgpu ? null : softwareOnlyVulkan(preferences.vulkanDrivers ?? []);
      if (software !== null) {
        timings[name] =
          `skipped: software adapter (${software}, the only Vulkan driver here: WebGPU not started)`;
        continue;
      }
      const gpu = await (preferences.webgpu ?? (() => detectWebGpu(preferences.vulkanDirs)))();
      if (!gpu.ok) {
        timings[name] = `skipped: ${gpu.reason}`;
        continue;
      }
      // A CPU behind a WebGPU adapter (lavapipe on a desktop or CI image) is never a GPU: timing it
      // would only slow start-up (a call takes seconds there), and wasm is faster on the same cores.
      if (gpu.software) {
        timings[name] = `skipped: software adapter (${describeAdapter(gpu.adapter)})`;
        continue;
      }
    }
    let backend: SimulationBackend | null = null;
    try {
      backend = await (preferences.create ?? ((candidate) => createBackend(candidate, preferences)))(name);
      await backend.simulate(scenario, options);
      let ms = Infinity;
      for (let run = 0; run < 2; run++) {
        const start = preferences.clock();
        await backend.simulate(scenario, options);
        ms = Math.min(ms, preferences.clock() - start);
      }
      timings[name] = ms;
      if (best === null || ms < best.ms) {
        await best?.backend.close();
        best = { backend, ms };
      } else {
        await backend.close();
      }
    } catch (error) {
      await backend?.close().catch(() => undefined);
      timings[name] = `failed: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  if (best === null) return { backend: typedBackend(), timings };
  return { backend: best.backend, timings };
}
