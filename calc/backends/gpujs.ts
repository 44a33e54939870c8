/**
 * The `gpujs` backend: repricing, the per-path portfolio P&L and the per-block component sums run as
 * gpu.js kernels (webgpu when an adapter answers, else webasm, else cpu); the tail sets and every sum
 * across blocks are f64 on the host.
 *
 * What stays on the host, and why: the Philox words. gpu.js kernel values are f32 (exact integers
 * only up to 2^24), so a 32-bit Philox word cannot be carried through a kernel; the host draws each
 * block's factors f (f64, exactly as the reference) and residual normals z, and hands them to the
 * kernels as f32.
 *
 * Numbers: kernels compute in f32, so L, g(x) and e carry ~1e-7 relative rounding and each block's
 * component sums ~1e-6. Paths whose L are within that rounding of the m-th rank can swap between a
 * tail set and its complement (near-ties), which moves a cvar mean by up to the difference of two
 * paths' components divided by m. Measured tolerances are in test/calc/backends.test.ts.
 */
import { GPU, type IKernelRunShortcut } from 'gpu.js';
import { findTailSets } from '../kernels/tail-sets';
import { fillNormals, type Seed, uniformAt } from '../random';
import type { Scenario, SimulationOptions, SimulationResult } from '../simulation';
import { checkPaths, type SimulationBackend, twoPassResult } from './backend';
import { simulateTyped } from './typed';

export type GpuMode = 'webgpu' | 'webasm' | 'cpu';

/** Paths per kernel launch. */
export const GPU_BLOCK = 1024;

// Kernel sources are strings: a transpiler (tsx, swc, coverage) would rewrite a function's text
// into something gpu.js cannot parse. Inputs are flat f32 arrays; thread.x is the driver or column.
const X = `
  let x = 0;
  for (let j = 0; j < this.constants.k; j++) { x += beta[d * this.constants.k + j] * f[p * this.constants.k + j]; }
  x += sd[d] * z[p * this.constants.drivers + d];
  if (d === pinned[0]) { x = pinned[1]; }`;
const G_SOURCE = `function (f, z, beta, sd, pinned) {
  const d = this.thread.x; const p = this.thread.y;${X}
  if (x === 0) { return 1; }
  return Math.expm1(x) / x;
}`;
const E_SOURCE = `function (f, z, beta, sd, pinned) {
  const d = this.thread.x; const p = this.thread.y;
  if (d === pinned[0]) {
    let s = 0;
    for (let j = 0; j < this.constants.k; j++) { s += beta[d * this.constants.k + j] * f[p * this.constants.k + j]; }
    return pinned[1] - s;
  }
  return sd[d] * z[p * this.constants.drivers + d];
}`;
const L_SOURCE = `function (f, z, beta, sd, pinned, exposure) {
  const p = this.thread.x;
  let total = 0;
  for (let d = 0; d < this.constants.drivers; d++) {${X}
    total += exposure[d] * Math.expm1(x);
  }
  return total;
}`;
/** Column j < k: Σ_p w_p·g_pd·f_pj; column k: Σ_p w_p·g_pd·e_pd (one block, f32). */
const C_SOURCE = `function (g, e, f, w) {
  const j = this.thread.x; const d = this.thread.y;
  let s = 0;
  for (let p = 0; p < this.constants.block; p++) {
    if (w[p] > 0) {
      if (j < this.constants.k) { s += g[p][d] * f[p * this.constants.k + j]; } else { s += g[p][d] * e[p][d]; }
    }
  }
  return s;
}`;

interface Kernels {
  g: IKernelRunShortcut;
  e: IKernelRunShortcut;
  l: IKernelRunShortcut;
  c: IKernelRunShortcut;
}

/** Probes webgpu → webasm → cpu with a tiny kernel; the first mode that computes it right wins. */
export async function probeGpuMode(): Promise<{ gpu: GPU; mode: GpuMode }> {
  for (const mode of ['webgpu', 'webasm', 'cpu'] as const) {
    try {
      if (mode === 'webgpu' && !(await GPU.isWebGPUAvailable())) continue;
      const gpu = new GPU({ mode });
      const kernel = gpu.createKernel(`function (a) { return Math.expm1(a[this.thread.x]); }` as never, {
        output: [2],
      });
      const out = (await Promise.resolve(kernel([0, 1]))) as Float32Array;
      if (Math.abs(out[1]! - Math.expm1(1)) < 1e-5 && out[0] === 0) return { gpu, mode };
      await gpu.destroy();
    } catch {
      // This mode is unavailable here; try the next one.
    }
  }
  throw new Error('gpu.js has no working mode');
}

export async function gpujsBackend(): Promise<SimulationBackend> {
  const { gpu, mode } = await probeGpuMode();
  const cache = new Map<string, Kernels>();
  const kernelsFor = (k: number, drivers: number, block: number): Kernels => {
    const key = `${k}/${drivers}/${block}`;
    let kernels = cache.get(key);
    if (kernels === undefined) {
      const constants = { k, drivers, block };
      const make = (source: string, output: number[]) =>
        gpu.createKernel(source as never, { constants, output, tactic: 'precision' });
      kernels = {
        g: make(G_SOURCE, [drivers, block]),
        e: make(E_SOURCE, [drivers, block]),
        l: make(L_SOURCE, [block]),
        c: make(C_SOURCE, [k + 1, drivers]),
      };
      cache.set(key, kernels);
    }
    return kernels;
  };

  const simulate = async (scenario: Scenario, options: SimulationOptions): Promise<SimulationResult> => {
    const { paths } = options;
    checkPaths(paths);
    // Lines (FX, cash, options) and residual means (drift, forecasts) have no f32 kernel yet: they run
    // on the host on the blocked CPU kernel, which is the reference bit for bit.
    if (scenario.lines !== undefined || scenario.residualMean !== undefined) {
      return simulateTyped(scenario, options);
    }
    const note = options.onAllocate ?? (() => {});
    const { k, exposure, beta, residualSd, pinned } = scenario;
    const drivers = exposure.length;
    const width = k + 1;
    const block = Math.min(GPU_BLOCK, paths);
    const kernels = kernelsFor(k, drivers, block);
    const host = new BlockInputs(scenario, options.seed, block);
    note('block factors (f32)', block * k);
    note('block residual normals (f32)', block * drivers);
    const beta32 = Float32Array.from(beta);
    const sd32 = Float32Array.from(residualSd);
    const exposure32 = Float32Array.from(exposure);
    const pinned32 = Float32Array.from(pinned === null ? [-1, 0] : [pinned.driver, pinned.logReturn]);
    const weights = new Float32Array(block);

    /** One block: fills inputs for `ids`, returns per-path L (f32) and adds weighted sums per set. */
    const runBlock = async (
      pathAt: (i: number) => number,
      count: number,
      sets: { weights: (i: number) => boolean; sums: Float64Array }[],
    ): Promise<Float32Array> => {
      host.fill(pathAt, count);
      const args = [host.f, host.z, beta32, sd32, pinned32] as const;
      const loss = (await Promise.resolve(kernels.l(...args, exposure32))) as Float32Array;
      const g = (await Promise.resolve(kernels.g(...args))) as Float32Array[];
      const e = (await Promise.resolve(kernels.e(...args))) as Float32Array[];
      for (const set of sets) {
        for (let i = 0; i < block; i++) weights[i] = i < count && set.weights(i) ? 1 : 0;
        const c = (await Promise.resolve(kernels.c(g, e, host.f, weights))) as Float32Array[];
        for (let d = 0; d < drivers; d++) {
          const row = c[d]!;
          for (let j = 0; j < width; j++) set.sums[d * width + j]! += row[j]!;
        }
      }
      return loss;
    };

    note('portfolio P&L per path', paths);
    const loss = new Float64Array(paths);
    const ev = new Float64Array(drivers * width);
    for (let first = 0; first < paths; first += block) {
      const count = Math.min(block, paths - first);
      const l = await runBlock((i) => first + i, count, [{ weights: () => true, sums: ev }]);
      for (let i = 0; i < count; i++) loss[first + i] = l[i]!;
    }
    let evTotal = 0;
    for (let p = 0; p < paths; p++) evTotal += loss[p]!;

    const withBand = options.varBand === true;
    const sets = findTailSets(loss, options.tail, withBand, note);
    const neg = new Float64Array(drivers * width);
    const pos = new Float64Array(drivers * width);
    const band = new Float64Array(withBand ? drivers * width : 0);
    const { ids, masks } = sets;
    for (let first = 0; first < ids.length; first += block) {
      const count = Math.min(block, ids.length - first);
      const has = (bit: number) => (i: number) => (masks[first + i]! & bit) !== 0;
      const targets = [
        { weights: has(1), sums: neg },
        { weights: has(2), sums: pos },
        ...(withBand ? [{ weights: has(4), sums: band }] : []),
      ];
      await runBlock((i) => ids[first + i]!, count, targets);
    }
    return twoPassResult(paths, loss, evTotal, sets, { ev, neg, pos, band });
  };

  let queue: Promise<unknown> = Promise.resolve();
  return {
    name: 'gpujs',
    detail: `gpu.js ${mode}, ${GPU_BLOCK}-path launches, Philox on the host`,
    simulate: (scenario, options) => {
      const run = queue.then(() => simulate(scenario, options));
      queue = run.catch(() => undefined);
      return run;
    },
    close: () => gpu.destroy(),
  };
}

/** The host half of path generation: a block's factors and residual normals, as the reference draws them. */
class BlockInputs {
  readonly f: Float32Array;
  readonly z: Float32Array;
  private readonly zPath: Float64Array;
  private readonly words = new Uint32Array(4);
  private readonly cumulative: Float64Array;

  constructor(
    private readonly scenario: Scenario,
    private readonly seed: Seed,
    block: number,
  ) {
    const drivers = scenario.exposure.length;
    this.f = new Float32Array(block * scenario.k);
    this.z = new Float32Array(block * drivers);
    this.zPath = new Float64Array(scenario.k + drivers);
    this.cumulative = new Float64Array(scenario.regimes.length);
    let total = 0;
    scenario.regimes.forEach((regime, r) => (this.cumulative[r] = total += regime.probability));
  }

  fill(pathAt: (i: number) => number, count: number): void {
    const { k, regimes } = this.scenario;
    const drivers = this.scenario.exposure.length;
    const { f, z, zPath, words, cumulative } = this;
    for (let i = 0; i < count; i++) {
      const p = pathAt(i);
      fillNormals(this.seed, p, zPath, k + drivers, 0, words);
      const u = uniformAt(this.seed, p, 0, words);
      let r = 0;
      while (r < regimes.length - 1 && !(u < cumulative[r]!)) r++;
      const { mean, root } = regimes[r]!;
      for (let a = 0; a < k; a++) {
        let value = mean[a]!;
        for (let j = 0; j < k; j++) value += root[a * k + j]! * zPath[j]!;
        f[i * k + a] = value;
      }
      z.set(zPath.subarray(k), i * drivers);
    }
  }
}
