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
 * paths' components divided by m. Options are repriced in f32 too; their split PnL·β·f/x divides a
 * P&L that does not vanish at x = 0 (time decay) by a small x, so their component means carry ~1e-3
 * of f32 rounding (still far inside the Monte Carlo error). Measured tolerances are in
 * test/calc/backends.test.ts.
 */
import { GPU, type IKernelRunShortcut } from 'gpu.js';
import { findTailSets } from '../kernels/tail-sets';
import { fillNormals, type Seed, uniformAt } from '../random';
import type { Scenario, SimulationOptions, SimulationResult } from '../simulation';
import { checkPaths, type SimulationBackend, twoPassResult } from './backend';
import { simulateTyped } from './typed';
import { describeAdapter, detectWebGpu, type GpuAdapterInfo } from './webgpu-node';

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

// Lines (FX, cash, options: §9–§11) and residual means (§13). XL/EL: a driver's x and e per path, the
// residual centred on `mean`. U: a line's unit P&L from its drivers' x (Black–Scholes for an option,
// with Φ by Abramowitz–Stegun 7.1.26, |error| < 1.5e-7, below f32's own rounding of the price). G, R:
// the line's G and residual term. LL: the path's L. CL: the per-line component sums.
const DRIVER = `
  let sys = 0;
  for (let j = 0; j < this.constants.k; j++) { sys += beta[d * this.constants.k + j] * f[p * this.constants.k + j]; }
  let e = mean[d] + sd[d] * z[p * this.constants.drivers + d];
  if (d === pinned[0]) { e = pinned[1] - sys; }`;
const XL_SOURCE = `function (f, z, beta, sd, mean, pinned) {
  const d = this.thread.x; const p = this.thread.y;${DRIVER}
  return sys + e;
}`;
const EL_SOURCE = `function (f, z, beta, sd, mean, pinned) {
  const d = this.thread.x; const p = this.thread.y;${DRIVER}
  return e;
}`;
/** Source computing Φ(arg) into `name` (Abramowitz–Stegun 7.1.26 on erf). */
const phi = (name: string, arg: string) => `
  let ${name} = 0;
  {
    const y = ${arg} / 1.4142135623730951;
    const ay = Math.abs(y);
    const t = 1 / (1 + 0.3275911 * ay);
    const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let erf = 1 - poly * Math.exp(-ay * ay);
    if (y < 0) { erf = -erf; }
    ${name} = 0.5 * (1 + erf);
  }`;
const LINE_X = `
  const a = primary[l]; const b = fxd[l];
  let xl = 0; let el = 0; let xa = 0; let xb = 0;
  if (a >= 0) { xa = x[p][a]; xl = xa; el = e[p][a]; }
  if (b >= 0) { xb = x[p][b]; xl += xb; el += e[p][b]; }`;
const U_SOURCE = `function (x, e, primary, fxd, option) {
  const l = this.thread.x; const p = this.thread.y;${LINE_X}
  const right = option[l * 6];
  if (right === 0) { return Math.expm1(xl); }
  const spot = option[l * 6 + 1] * Math.exp(xa);
  const strike = option[l * 6 + 2];
  const total = option[l * 6 + 4] * Math.sqrt(Math.max(option[l * 6 + 3], 0));
  let price = 0;
  if (right === 1) { price = Math.max(spot - strike, 0); } else { price = Math.max(strike - spot, 0); }
  if (total > 0) {
    const d1 = Math.log(spot / strike) / total + total / 2;
    const d2 = d1 - total;
    if (right === 1) {${phi('n1', 'd1')}${phi('n2', 'd2')}
      price = spot * n1 - strike * n2;
    } else {${phi('m1', '-d1')}${phi('m2', '-d2')}
      price = strike * m2 - spot * m1;
    }
  }
  return Math.exp(xb) * price - option[l * 6 + 5];
}`;
const G_LINE_SOURCE = `function (x, e, primary, fxd, option, u) {
  const l = this.thread.x; const p = this.thread.y;${LINE_X}
  if (xl === 0) { if (option[l * 6] === 0) { return 1; } return 0; }
  return u[p][l] / xl;
}`;
const R_LINE_SOURCE = `function (x, e, primary, fxd, option, u) {
  const l = this.thread.x; const p = this.thread.y;${LINE_X}
  if (xl === 0) { if (option[l * 6] === 0) { return el; } return u[p][l]; }
  return u[p][l] / xl * el;
}`;
const LL_SOURCE = `function (u, exposure) {
  const p = this.thread.x;
  let total = 0;
  for (let l = 0; l < this.constants.lines; l++) { total += exposure[l] * u[p][l]; }
  return total;
}`;
/** Column j < k: Σ_p w_p·G_pl·f_pj; column k: Σ_p w_p·R_pl (one block, f32). */
const CL_SOURCE = `function (g, r, f, w) {
  const j = this.thread.x; const l = this.thread.y;
  let s = 0;
  for (let p = 0; p < this.constants.block; p++) {
    if (w[p] > 0) {
      if (j < this.constants.k) { s += g[p][l] * f[p * this.constants.k + j]; } else { s += r[p][l]; }
    }
  }
  return s;
}`;

interface LineKernels {
  x: IKernelRunShortcut;
  e: IKernelRunShortcut;
  u: IKernelRunShortcut;
  g: IKernelRunShortcut;
  r: IKernelRunShortcut;
  l: IKernelRunShortcut;
  c: IKernelRunShortcut;
}

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

export async function gpujsBackend(
  options: { vulkanDirs?: readonly string[] } = {},
): Promise<SimulationBackend> {
  // navigator.gpu first (Dawn, where a Vulkan loader exists), so gpu.js can find an adapter.
  const webgpu = await detectWebGpu(options.vulkanDirs);
  const { gpu, mode } = await probeGpuMode();
  const adapter: GpuAdapterInfo | undefined = mode === 'webgpu' && webgpu.ok ? webgpu.adapter : undefined;
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

  const lineCache = new Map<string, LineKernels>();
  const lineKernelsFor = (k: number, drivers: number, lines: number, block: number): LineKernels => {
    const key = `${k}/${drivers}/${lines}/${block}`;
    let kernels = lineCache.get(key);
    if (kernels === undefined) {
      const constants = { k, drivers, lines, block };
      const make = (source: string, output: number[]) =>
        gpu.createKernel(source as never, { constants, output, tactic: 'precision' });
      kernels = {
        x: make(XL_SOURCE, [drivers, block]),
        e: make(EL_SOURCE, [drivers, block]),
        u: make(U_SOURCE, [lines, block]),
        g: make(G_LINE_SOURCE, [lines, block]),
        r: make(R_LINE_SOURCE, [lines, block]),
        l: make(LL_SOURCE, [block]),
        c: make(CL_SOURCE, [k + 1, lines]),
      };
      lineCache.set(key, kernels);
    }
    return kernels;
  };

  /** A book with lines or residual means (§9–§13): drivers' x and e, then lines, on the kernels. */
  const simulateLines = async (scenario: Scenario, options: SimulationOptions): Promise<SimulationResult> => {
    const { paths } = options;
    const note = options.onAllocate ?? (() => {});
    const { k, exposure, beta, residualSd, pinned } = scenario;
    const drivers = exposure.length;
    // Without lines, each driver is a linear line of its exposure (a stock book with drift).
    const lines = scenario.lines ?? {
      primary: Int32Array.from(exposure, (_, d) => d),
      fx: new Int32Array(drivers).fill(-1),
      exposure,
      option: null,
    };
    const count = lines.primary.length;
    const width = k + 1;
    const block = Math.min(GPU_BLOCK, paths);
    const kernels = lineKernelsFor(k, drivers, count, block);
    const host = new BlockInputs(scenario, options.seed, block);
    note('block factors (f32)', block * k);
    note('block residual normals (f32)', block * drivers);
    const beta32 = Float32Array.from(beta);
    const sd32 = Float32Array.from(residualSd);
    const mean32 = Float32Array.from(scenario.residualMean ?? new Float64Array(drivers));
    const pinned32 = Float32Array.from(pinned === null ? [-1, 0] : [pinned.driver, pinned.logReturn]);
    const primary32 = Float32Array.from(lines.primary);
    const fx32 = Float32Array.from(lines.fx);
    const option32 = lines.option === null ? new Float32Array(count * 6) : Float32Array.from(lines.option);
    const exposure32 = Float32Array.from(lines.exposure);
    const weights = new Float32Array(block);

    const runBlock = async (
      pathAt: (i: number) => number,
      n: number,
      sets: { weights: (i: number) => boolean; sums: Float64Array }[],
    ): Promise<Float32Array> => {
      host.fill(pathAt, n);
      const args = [host.f, host.z, beta32, sd32, mean32, pinned32] as const;
      const x = (await Promise.resolve(kernels.x(...args))) as Float32Array[];
      const e = (await Promise.resolve(kernels.e(...args))) as Float32Array[];
      const lineArgs = [x, e, primary32, fx32, option32] as const;
      const u = (await Promise.resolve(kernels.u(...lineArgs))) as Float32Array[];
      const loss = (await Promise.resolve(kernels.l(u, exposure32))) as Float32Array;
      const g = (await Promise.resolve(kernels.g(...lineArgs, u))) as Float32Array[];
      const r = (await Promise.resolve(kernels.r(...lineArgs, u))) as Float32Array[];
      for (const set of sets) {
        for (let i = 0; i < block; i++) weights[i] = i < n && set.weights(i) ? 1 : 0;
        const c = (await Promise.resolve(kernels.c(g, r, host.f, weights))) as Float32Array[];
        for (let l = 0; l < count; l++) {
          const row = c[l]!;
          for (let j = 0; j < width; j++) set.sums[l * width + j]! += row[j]!;
        }
      }
      return loss;
    };
    return twoPasses(paths, block, count * width, options, note, runBlock);
  };

  const simulate = async (scenario: Scenario, options: SimulationOptions): Promise<SimulationResult> => {
    const { paths } = options;
    checkPaths(paths);
    if (scenario.lines !== undefined || scenario.residualMean !== undefined) {
      // A book of base-currency cash only has no driver to put on a kernel: its P&L is 0 everywhere.
      if (scenario.exposure.length === 0) return simulateTyped(scenario, options);
      return simulateLines(scenario, options);
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
    detail:
      `gpu.js ${mode}${adapter ? ` on ${describeAdapter(adapter)}` : ''}, ${GPU_BLOCK}-path launches, ` +
      'Philox on the host',
    ...(adapter ? { adapter } : {}),
    simulate: (scenario, options) => {
      const run = queue.then(() => simulate(scenario, options));
      queue = run.catch(() => undefined);
      return run;
    },
    close: () => gpu.destroy(),
  };
}

type BlockRunner = (
  pathAt: (i: number) => number,
  count: number,
  sets: { weights: (i: number) => boolean; sums: Float64Array }[],
) => Promise<Float32Array>;

/** Pass 1 over every path (L, ev sums), the tail sets on the host, pass 2 over the tail paths. */
async function twoPasses(
  paths: number,
  block: number,
  size: number,
  options: SimulationOptions,
  note: (what: string, n: number) => void,
  runBlock: BlockRunner,
): Promise<SimulationResult> {
  note('portfolio P&L per path', paths);
  const loss = new Float64Array(paths);
  const ev = new Float64Array(size);
  for (let first = 0; first < paths; first += block) {
    const count = Math.min(block, paths - first);
    const l = await runBlock((i) => first + i, count, [{ weights: () => true, sums: ev }]);
    for (let i = 0; i < count; i++) loss[first + i] = l[i]!;
  }
  let evTotal = 0;
  for (let p = 0; p < paths; p++) evTotal += loss[p]!;
  const withBand = options.varBand === true;
  const sets = findTailSets(loss, options.tail, withBand, note);
  const neg = new Float64Array(size);
  const pos = new Float64Array(size);
  const band = new Float64Array(withBand ? size : 0);
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
