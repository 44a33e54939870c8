/**
 * The `gpujs` backend: the Monte Carlo core shaped for a GPU, as gpu.js kernels (webgpu where an
 * adapter answers; gpu.js's webasm and cpu modes run the same kernels without one, which is how the
 * suite checks them).
 *
 * One thread per path (or per path and line), the whole pass launched at once, chunked only so that
 * a chunk's per-line arrays fit one storage buffer (`chunkBytes`):
 * - `factors` [k × n]: the path's factor normals and regime uniform drawn on the device, f = mean_r +
 *   A_r·z.
 * - `loss` [n]: for each line, its drivers' x and e (β·f + μ + sd·z, z drawn on the device; a pinned
 *   driver moves by exactly c) and its unit P&L; L = Σ_l exposure_l·unit_l (compensated f32 sum).
 * - `g`, `r` [lines × n]: each (path, line)'s G and residual term (recomputed beside `loss`: drawing
 *   and pricing cost less on a GPU than a second pass through memory would).
 * - `comp` [(k+1) × lines × segments]: Σ over a segment of SEGMENT paths of w·G·f_j (j < k) and w·R
 *   (column k), w the path's weight in the set; `reduce` [(k+1) × lines] adds the segments. Only L and
 *   these sums come back to the host, which adds chunks in f64.
 * `factors`, `g`, `r` and `comp` are pipelined (`pipeline: true`): on webgpu their results stay in
 * device buffers and pass straight into the next kernel.
 *
 * The generator is the `wasm` kernel's (calc/wasm/assembly/kernel.ts), addressed by (seed, path,
 * dimension): two keyed rounds of murmur3's fmix32, the top bit the sign and the next 23 bits a
 * quantile read from the same table. Its integer half is gpu.js functions with Integer arguments and
 * results (i32 in WGSL and WebAssembly, Math.imul in cpu mode), so it computes the same words in
 * every mode; constants are built from 16-bit halves and path ids arrive as 16-bit halves, since a
 * kernel's plain values are f32 (exact only to 2^24). Pass 2 draws only the tail paths, by id.
 *
 * Numbers: the kernels compute in f32 where `wasm` computes in f32 too, with the same formulas
 * (Estrin's series for G below |x| = ½, Abramowitz–Stegun 26.2.17 for Φ); a GPU's exp and its fused
 * multiply-adds round differently by a few ulps, and in cpu mode gpu.js computes in f64 between its
 * f32 inputs and outputs. The tolerance against `wasm` that follows is derived in docs/calculations.md
 * and tested in test/calc/gpujs-kernels.test.ts.
 */
import { GPU, type IKernelRunShortcut } from 'gpu.js';
import { findTailSets } from '../kernels/tail-sets';
import { kernelLines, KERNEL_OPTION_FIELDS, quantileTable, seedKeys } from '../kernels/wasm-kernel';
import type { Seed } from '../random';
import type { Scenario, SimulationOptions, SimulationResult } from '../simulation';
import { checkPaths, type SimulationBackend, twoPassResult } from './backend';
import { simulateTyped } from './typed';
import { describeAdapter, detectWebGpu, type GpuAdapterInfo } from './webgpu-node';

export type GpuMode = 'webgpu' | 'webasm' | 'cpu';

/** Paths per component-sum segment (one `comp` thread adds this many paths in f32). */
export const SEGMENT = 256;
/**
 * Bytes of one per-line chunk array (G or R): WebGPU's guaranteed storage binding size, or up to
 * CHUNK_BYTES_MOST where the adapter allows more (then 3000 lines take 44,800 paths a chunk).
 */
export const CHUNK_BYTES = 128 * 1024 * 1024;
export const CHUNK_BYTES_MOST = 512 * 1024 * 1024;
/** The most paths in one chunk, whatever the memory allows (8 × 65,535 workgroups bound a launch's rows). */
export const MAX_CHUNK_PATHS = 131072;

/**
 * The generator's integer functions: (name, source, argument names). Each takes and returns i32
 * (`Integer`); `MUL` is 32-bit multiplication, wrapping.
 */
function generatorFunctions(mode: GpuMode): [string, string, string[]][] {
  const mul = mode === 'cpu' ? 'Math.imul(a, b)' : '(a * b)';
  const add = mode === 'cpu' ? '((a + b) | 0)' : '(a + b)';
  return [
    ['join16', 'function join16(hi, lo) { return (hi << 16) | lo; }', ['hi', 'lo']],
    ['mul32', `function mul32(a, b) { return ${mul}; }`, ['a', 'b']],
    ['add32', `function add32(a, b) { return ${add}; }`, ['a', 'b']],
    ['xs16', 'function xs16(h) { return h ^ (h >>> 16); }', ['h']],
    ['xs13', 'function xs13(h) { return h ^ (h >>> 13); }', ['h']],
    // murmur3's fmix32: 0x85ebca6b = join16(34283, 51819), 0xc2b2ae35 = join16(49842, 44597).
    [
      'fmix',
      'function fmix(h) { return xs16(mul32(xs13(mul32(xs16(h), join16(34283, 51819))), join16(49842, 44597))); }',
      ['h'],
    ],
    // The path's two keys: a = fmix(path ^ seedA), b = fmix(a ^ 0x6a09e667).
    [
      'keyA',
      'function keyA(ph, pl, sah, sal) { return fmix(join16(ph, pl) ^ join16(sah, sal)); }',
      ['ph', 'pl', 'sah', 'sal'],
    ],
    ['keyB', 'function keyB(a) { return fmix(a ^ join16(27145, 58983)); }', ['a']],
    // A dimension's key: dim·0x9e3779b9 + seedB (0x9e3779b9 = join16(40503, 31161)).
    [
      'dimKey',
      'function dimKey(dim, sbh, sbl) { return add32(mul32(dim, join16(40503, 31161)), join16(sbh, sbl)); }',
      ['dim', 'sbh', 'sbl'],
    ],
    ['word', 'function word(a, b, key) { return fmix(fmix(add32(a, key)) ^ b); }', ['a', 'b', 'key']],
    // The top 24 bits of the word of (seed, path, dim): exact in an f32.
    [
      'draw',
      'function draw(ph, pl, sah, sal, sbh, sbl, dim) { return word(keyA(ph, pl, sah, sal), keyB(keyA(ph, pl, sah, sal)), dimKey(dim, sbh, sbl)) >>> 8; }',
      ['ph', 'pl', 'sah', 'sal', 'sbh', 'sbl', 'dim'],
    ],
    // From a drawn code c (sign bit 23, m = low 23 bits): the quantile table's line and fraction of
    // the f32 q' = m + ½, whose bits are ((E + 126) << 23) | ((n − 2^E) << (23 − E)) with n = 2m + 1
    // and E = ⌊log2 n⌋ (the wasm kernel reads the same bits from the float).
    ['odd', 'function odd(c) { return ((c & 8388607) << 1) | 1; }', ['c']],
    ['expo', 'function expo(n) { return 31 - Math.clz32(n); }', ['n']],
    ['mant', 'function mant(n, e) { return (n - (1 << e)) << (23 - e); }', ['n', 'e']],
    [
      'qline',
      'function qline(c) { return (expo(odd(c)) << 6) | (mant(odd(c), expo(odd(c))) >>> 17); }',
      ['c'],
    ],
    ['qfrac', 'function qfrac(c) { return mant(odd(c), expo(odd(c))) & 131071; }', ['c']],
  ];
}

/**
 * A line's row in the kernels' `lin` array: primary driver, FX driver, exposure, then the option
 * terms (right, ln(S/K), S, K, σ√T_h, P0; right 0 for a linear line). Inputs are packed into few
 * arrays because WebGPU's default allows 8 storage buffers per shader stage.
 */
const LINE_FIELDS = 9;

/** Source declaring `name`, the standard normal of (path, dim): the table's line through the fraction, signed. */
const normal = (name: string, dim: string) => `
  const c_${name} = draw(ph, pl, params[0], params[1], params[2], params[3], ${dim});
  let ${name} = table[2 * qline(c_${name})] + table[2 * qline(c_${name}) + 1] * qfrac(c_${name});
  if (c_${name} >= 8388608) { ${name} = -${name}; }`;

/** Source declaring x_{s} and e_{s} of driver `d` for the path in row i (β·f + μ + sd·z; pinned: x = c). */
const driver = (s: string, d: string) => `
  let sys_${s} = 0;
  for (let t = 0; t < this.constants.k; t++) { sys_${s} += drv[${d} * this.constants.ds + t] * f[i][t]; }${normal(`z_${s}`, `this.constants.k + ${d}`)}
  let e_${s} = drv[${d} * this.constants.ds + this.constants.k + 1] + drv[${d} * this.constants.ds + this.constants.k] * z_${s};
  let x_${s} = sys_${s} + e_${s};
  if (${d} === params[4]) { x_${s} = params[5]; e_${s} = x_${s} - sys_${s}; }`;

/** Source computing Φ(arg) into `name`: Abramowitz–Stegun 26.2.17, as the wasm kernel's vcdf. */
const phi = (name: string, arg: string) => `
  let ${name} = 0;
  {
    const a_${name} = Math.abs(${arg});
    const t_${name} = 1 / (a_${name} * 0.2316419 + 1);
    let p_${name} = 1.330274429 * t_${name} - 1.821255978;
    p_${name} = p_${name} * t_${name} + 1.781477937;
    p_${name} = p_${name} * t_${name} - 0.356563782;
    p_${name} = p_${name} * t_${name} + 0.31938153;
    p_${name} = p_${name} * t_${name};
    const upper_${name} = Math.exp(a_${name} * a_${name} * -0.5) * 0.3989422804014327 * p_${name};
    if (${arg} >= 0) { ${name} = 1 - upper_${name}; } else { ${name} = upper_${name}; }
  }`;

/**
 * Source pricing line `l` for the path in row i: declares unit (its unit P&L), g (G) and res (the
 * residual term), as the wasm kernel's drawGroup does.
 */
const LINE = `
  const o = l * ${LINE_FIELDS};
  const a = lin[o];
  const b = lin[o + 1];
  let xa = 0; let el = 0; let xfx = 0;
  if (a >= 0) {${driver('a', 'a')}
    xa = x_a; el = e_a;
  }
  let xl = xa;
  if (b >= 0) {${driver('b', 'b')}
    xfx = x_b; xl = xl + x_b; el = el + e_b;
  }
  const right = lin[o + 3];
  let unit = 0; let g = 0; let res = 0;
  if (right === 0) {
    if (Math.abs(xl) < 0.5) {
      const x2 = xl * xl;
      const x4 = x2 * x2;
      const p01 = xl * 0.5 + 1;
      const p23 = xl * 0.041666666666666664 + 0.16666666666666666;
      const p45 = xl * 0.001388888888888889 + 0.008333333333333333;
      const p67 = xl * 0.0000248015873015873 + 0.0001984126984126984;
      g = x4 * (x2 * p67 + p45) + (x2 * p23 + p01);
    } else {
      g = (Math.exp(xl) - 1) / xl;
    }
    unit = g * xl;
    res = g * el;
  } else {
    const volT = lin[o + 7];
    const strike = lin[o + 6];
    const sh = lin[o + 5] * Math.exp(xa);
    let later = 0;
    if (volT > 0) {
      const d1 = (lin[o + 4] + xa + 0.5 * volT * volT) / volT;
      const d2 = d1 - volT;
      if (right === 1) {${phi('n1', 'd1')}${phi('n2', 'd2')}
        later = sh * n1 - strike * n2;
      } else {${phi('m1', '-d1')}${phi('m2', '-d2')}
        later = strike * m2 - sh * m1;
      }
    } else {
      if (right === 1) { later = Math.max(sh - strike, 0); } else { later = Math.max(strike - sh, 0); }
    }
    if (b >= 0) { later = later * Math.exp(xfx); }
    unit = later - lin[o + 8];
    if (xl === 0) { g = 0; res = unit; } else { g = unit / xl; res = g * el; }
  }`;

/** The path id of row i, as 16-bit halves. */
const PATH = `
  const ph = ids[2 * i];
  const pl = ids[2 * i + 1];`;

const FACTORS_SOURCE = `function (ids, params, table, reg) {
  const j = this.thread.x; const i = this.thread.y;${PATH}
  const u = draw(ph, pl, params[0], params[1], params[2], params[3], -1) * 5.9604644775390625e-8;
  let r = 0;
  for (let q = 0; q < this.constants.regimes - 1; q++) {
    if (r === q && !(u < reg[q * this.constants.rs])) { r = q + 1; }
  }
  let value = reg[r * this.constants.rs + 1 + j];
  for (let t = 0; t < this.constants.k; t++) {${normal('z', 't')}
    value = value + reg[r * this.constants.rs + 1 + this.constants.k + j * this.constants.k + t] * z;
  }
  return value;
}`;
const LINE_ARGS = 'ids, params, table, f, drv, lin';
const LOSS_SOURCE = `function (${LINE_ARGS}) {
  const i = this.thread.x;${PATH}
  let total = 0;
  let carry = 0;
  for (let l = 0; l < this.constants.lines; l++) {${LINE}
    const term = lin[o + 2] * unit - carry;
    const next = total + term;
    carry = (next - total) - term;
    total = next;
  }
  return total;
}`;
const G_SOURCE = `function (${LINE_ARGS}) {
  const l = this.thread.x; const i = this.thread.y;${PATH}${LINE}
  return g;
}`;
const R_SOURCE = `function (${LINE_ARGS}) {
  const l = this.thread.x; const i = this.thread.y;${PATH}${LINE}
  return res;
}`;
/** Column j < k: Σ over segment s of w·G·f_j; column k: Σ w·R. */
const COMP_SOURCE = `function (g, r, f, w) {
  const j = this.thread.x; const l = this.thread.y; const s = this.thread.z;
  let sum = 0;
  for (let q = 0; q < ${SEGMENT}; q++) {
    const i = s * ${SEGMENT} + q;
    if (w[i] > 0) {
      if (j < this.constants.k) { sum = sum + g[i][l] * f[i][j]; } else { sum = sum + r[i][l]; }
    }
  }
  return sum;
}`;
const REDUCE_SOURCE = `function (c) {
  const j = this.thread.x; const l = this.thread.y;
  let sum = 0;
  for (let s = 0; s < this.constants.segments; s++) { sum = sum + c[s][l][j]; }
  return sum;
}`;

interface Kernels {
  readonly rows: number;
  factors: IKernelRunShortcut;
  loss: IKernelRunShortcut;
  g: IKernelRunShortcut;
  r: IKernelRunShortcut;
  /**
   * One per weight set a chunk sums (ev; or the tails neg, pos and the VaR band): a pipelined
   * kernel's output lives in one device buffer that its next launch overwrites, and each set's
   * reduce reads its comp's buffer after the chunk has launched every set. Sharing one comp made a
   * set's reduce read the next set's components on a real WebGPU queue (found on lavapipe, issue 42).
   */
  comp: IKernelRunShortcut[];
  reduce: IKernelRunShortcut;
}

/** The most weight sets a chunk sums at once: neg, pos and the VaR band in pass 2. */
const MAX_SETS = 3;

const withGenerator = new WeakSet<GPU>();

/** Adds the generator's functions to a gpu.js instance (once). */
function installGenerator(gpu: GPU, mode: GpuMode): void {
  if (withGenerator.has(gpu)) return;
  withGenerator.add(gpu);
  for (const [, source, names] of generatorFunctions(mode)) {
    const argumentTypes = Object.fromEntries(names.map((name) => [name, 'Integer']));
    gpu.addFunction(source as never, { argumentTypes, returnType: 'Integer' } as never);
  }
}

/**
 * The generator alone, for tests and the GPU check: for paths first..first+paths−1 (ids are u32,
 * passed as two 16-bit halves) at dimension `dim` (−1: the regime uniform's), the drawn 24-bit codes
 * (the word's top 24 bits) and the normals, computed by a kernel in the instance's mode.
 */
export async function drawOn(
  gpu: GPU,
  mode: GpuMode,
  seed: Seed,
  paths: number,
  dim: number,
  first = 0,
): Promise<{ codes: Float32Array; normals: Float32Array }> {
  installGenerator(gpu, mode);
  const [seedA, seedB] = seedKeys(seed);
  const params = Float32Array.from([seedA >>> 16, seedA & 0xffff, seedB >>> 16, seedB & 0xffff, dim]);
  const ids = new Float32Array(2 * paths);
  for (let i = 0; i < paths; i++) {
    const p = (first + i) >>> 0;
    [ids[2 * i], ids[2 * i + 1]] = [p >>> 16, p & 0xffff];
  }
  const settings = { output: [paths], tactic: 'precision' as const };
  const codes = gpu.createKernel(
    `function (ids, params) { const i = this.thread.x;${PATH}
      return draw(ph, pl, params[0], params[1], params[2], params[3], params[4]); }` as never,
    settings,
  );
  const normals = gpu.createKernel(
    `function (ids, params, table) { const i = this.thread.x;${PATH}${normal('z', 'params[4]')}
      return z; }` as never,
    settings,
  );
  return {
    codes: (await Promise.resolve(codes(ids, params))) as Float32Array,
    normals: (await Promise.resolve(normals(ids, params, quantileTable()))) as Float32Array,
  };
}

/** Probes webgpu → webasm → cpu with a tiny kernel; the first mode that computes it right wins. */
export async function probeGpuMode(only?: GpuMode): Promise<{ gpu: GPU; mode: GpuMode }> {
  for (const mode of ['webgpu', 'webasm', 'cpu'] as const) {
    if (only !== undefined && mode !== only) continue;
    try {
      if (mode === 'webgpu' && !(await GPU.isWebGPUAvailable())) continue;
      const gpu = new GPU({ mode });
      const kernel = gpu.createKernel(`function (a) { return Math.exp(a[this.thread.x]) - 1; }` as never, {
        output: [2],
      });
      const out = (await Promise.resolve(kernel([0, 1]))) as Float32Array;
      if (Math.abs(out[1]! - Math.expm1(1)) < 1e-5 && out[0] === 0) return { gpu, mode };
      await gpu.destroy();
    } catch {
      // This mode is unavailable here; try the next one.
    }
  }
  throw new Error(`gpu.js has no working mode${only ? ` (${only} asked)` : ''}`);
}

/**
 * Rows (paths) per chunk: what fits `chunkBytes` per lines-wide f32 array, in whole segments, and no
 * more than the paths need rounded up to a power of two of segments (so a few kernel shapes serve
 * every path count: each shape compiles once).
 */
export function chunkRows(paths: number, lines: number, chunkBytes: number): number {
  const fit = Math.floor(chunkBytes / (4 * Math.max(1, lines)) / SEGMENT) * SEGMENT;
  const wanted = 2 ** Math.ceil(Math.log2(Math.max(1, Math.ceil(paths / SEGMENT)))) * SEGMENT;
  return Math.max(SEGMENT, Math.min(fit, wanted, MAX_CHUNK_PATHS));
}

export interface GpujsOptions {
  /** Folders to look for the Vulkan loader in (the caller's LD_LIBRARY_PATH first). */
  readonly vulkanDirs?: readonly string[];
  /** A gpu.js mode to use instead of the probe's first working one (tests run cpu and webasm). */
  readonly mode?: GpuMode;
  /** Bytes of one chunk's G (and of its R); default CHUNK_BYTES. */
  readonly chunkBytes?: number;
}

export async function gpujsBackend(options: GpujsOptions = {}): Promise<SimulationBackend> {
  // navigator.gpu first (Dawn, where a Vulkan loader exists), so gpu.js can find an adapter.
  const webgpu =
    options.mode === undefined || options.mode === 'webgpu' ? await detectWebGpu(options.vulkanDirs) : null;
  const { gpu, mode } = await probeGpuMode(options.mode);
  const onAdapter = mode === 'webgpu' && webgpu?.ok ? webgpu : undefined;
  const chunkBytes =
    options.chunkBytes ?? Math.max(CHUNK_BYTES, Math.min(CHUNK_BYTES_MOST, onAdapter?.maxStorageBytes ?? 0));
  const backend = gpujsBackendOn(gpu, mode, onAdapter?.adapter, chunkBytes);
  if (!onAdapter?.software) return backend;
  // Forced onto a CPU behind WebGPU (CALC_BACKEND=gpujs where only lavapipe answers): it runs, and
  // its detail, which each process prints at start, warns that this is no GPU.
  return {
    ...backend,
    detail: `${backend.detail}; WARNING: a software adapter (the CPU), not a GPU: exact but slow, wasm is faster here`,
  };
}

/**
 * The backend on a gpu.js instance already made in `mode` (the probe's, or a test's: Dawn's Null
 * adapter validates every kernel's WGSL without computing anything).
 */
export function gpujsBackendOn(
  gpu: GPU,
  mode: GpuMode,
  adapter: GpuAdapterInfo | undefined,
  chunkBytes: number,
): SimulationBackend {
  installGenerator(gpu, mode);

  const cache = new Map<string, Kernels>();
  const kernelsFor = (k: number, drivers: number, lines: number, regimes: number, rows: number): Kernels => {
    const key = `${k}/${drivers}/${lines}/${regimes}/${rows}`;
    let kernels = cache.get(key);
    if (kernels === undefined) {
      const segments = rows / SEGMENT;
      const constants = { k, drivers, lines, regimes, segments, rs: 1 + k + k * k, ds: k + 2 };
      const make = (source: string, output: number[], pipeline: boolean) =>
        gpu.createKernel(source as never, { constants, output, pipeline, tactic: 'precision' });
      kernels = {
        rows,
        factors: make(FACTORS_SOURCE, [k, rows], true),
        loss: make(LOSS_SOURCE, [rows], false),
        g: make(G_SOURCE, [lines, rows], true),
        r: make(R_SOURCE, [lines, rows], true),
        comp: Array.from({ length: MAX_SETS }, () => make(COMP_SOURCE, [k + 1, lines, segments], true)),
        reduce: make(REDUCE_SOURCE, [k + 1, lines], false),
      };
      cache.set(key, kernels);
    }
    return kernels;
  };

  const simulate = async (scenario: Scenario, options: SimulationOptions): Promise<SimulationResult> => {
    const { paths } = options;
    checkPaths(paths);
    // A book of base-currency cash only has no driver to draw: its P&L is 0 everywhere.
    if (scenario.exposure.length === 0) return simulateTyped(scenario, options);
    const note = options.onAllocate ?? (() => {});
    const chunked = options.onChunk ?? (() => {});
    const { k, regimes, pinned } = scenario;
    const drivers = scenario.exposure.length;
    const lineTables = kernelLines(scenario);
    const lines = lineTables.primary.length;
    const width = k + 1;
    const rows = chunkRows(paths, lines, chunkBytes);
    note('chunk G and R (f32, device)', 2 * rows * lines);
    note('chunk factors (f32, device)', rows * k);

    const [seedA, seedB] = seedKeys(options.seed);
    const params = Float32Array.from([
      seedA >>> 16,
      seedA & 0xffff,
      seedB >>> 16,
      seedB & 0xffff,
      pinned === null ? -1 : pinned.driver,
      pinned === null ? 0 : pinned.logReturn,
    ]);
    // Packed rows (see LINE_FIELDS): a regime's cumulative probability, mean and root; a driver's
    // β, sd and μ; a line's drivers, exposure and option terms.
    const rs = 1 + k + k * k;
    const reg = new Float32Array(regimes.length * rs);
    let cumulative = 0;
    regimes.forEach((regime, r) => {
      reg[r * rs] = cumulative += regime.probability;
      reg.set(regime.mean, r * rs + 1);
      reg.set(regime.root, r * rs + 1 + k);
    });
    const ds = k + 2;
    const drv = new Float32Array(drivers * ds);
    for (let d = 0; d < drivers; d++) {
      drv.set(scenario.beta.subarray(d * k, (d + 1) * k), d * ds);
      drv[d * ds + k] = scenario.residualSd[d]!;
      drv[d * ds + k + 1] = scenario.residualMean?.[d] ?? 0;
    }
    const lin = new Float32Array(lines * LINE_FIELDS);
    for (let l = 0; l < lines; l++) {
      lin[l * LINE_FIELDS] = lineTables.primary[l]!;
      lin[l * LINE_FIELDS + 1] = lineTables.fx[l]!;
      lin[l * LINE_FIELDS + 2] = lineTables.exposure[l]!;
      lin.set(
        lineTables.option.subarray(l * KERNEL_OPTION_FIELDS, l * KERNEL_OPTION_FIELDS + 6),
        l * LINE_FIELDS + 3,
      );
    }
    const table = quantileTable();

    /** One chunk: its paths' L and, per set, the weighted component sums added into `sums` (f64). */
    const runChunk = async (
      kernels: Kernels,
      pathAt: (i: number) => number,
      count: number,
      sets: { weight: (i: number) => boolean; sums: Float64Array }[],
      withLoss: boolean,
    ): Promise<Float32Array | null> => {
      const { rows } = kernels;
      const ids = new Float32Array(2 * rows);
      for (let i = 0; i < rows; i++) {
        // Rows past the end repeat the last path, weighted 0.
        const p = pathAt(Math.min(i, count - 1));
        ids[2 * i] = p >>> 16;
        ids[2 * i + 1] = p & 0xffff;
      }
      // Launched in order without waiting for the readbacks (L, the sums) until the chunk's end, so
      // the device queue stays full; pipelined results never leave the device.
      const f = await Promise.resolve(kernels.factors(ids, params, table, reg));
      const args = [ids, params, table, f, drv, lin] as const;
      const loss = withLoss ? (Promise.resolve(kernels.loss(...args)) as Promise<Float32Array>) : null;
      const g = await Promise.resolve(kernels.g(...args));
      const r = await Promise.resolve(kernels.r(...args));
      const reduced: Promise<Float32Array[]>[] = [];
      for (const [s, set] of sets.entries()) {
        const w = new Float32Array(rows);
        for (let i = 0; i < count; i++) w[i] = set.weight(i) ? 1 : 0;
        const c = await Promise.resolve(kernels.comp[s]!(g, r, f, w));
        reduced.push(Promise.resolve(kernels.reduce(c)) as Promise<Float32Array[]>);
      }
      for (const [s, set] of sets.entries()) {
        const sums = await reduced[s]!;
        for (let l = 0; l < lines; l++) {
          const row = sums[l]!;
          for (let j = 0; j < width; j++) set.sums[l * width + j]! += row[j]!;
        }
      }
      return loss === null ? null : await loss;
    };

    note('portfolio P&L per path', paths);
    const loss = new Float64Array(paths);
    const ev = new Float64Array(lines * width);
    const pass1 = kernelsFor(k, drivers, lines, regimes.length, rows);
    for (let first = 0; first < paths; first += rows) {
      const count = Math.min(rows, paths - first);
      chunked(1, count, pass1.rows);
      const l = (await runChunk(pass1, (i) => first + i, count, [{ weight: () => true, sums: ev }], true))!;
      for (let i = 0; i < count; i++) loss[first + i] = l[i]!;
    }
    let evTotal = 0;
    for (let p = 0; p < paths; p++) evTotal += loss[p]!;

    const withBand = options.varBand === true;
    const sets = findTailSets(loss, options.tail, withBand, note);
    const neg = new Float64Array(lines * width);
    const pos = new Float64Array(lines * width);
    const band = new Float64Array(withBand ? lines * width : 0);
    const { ids: tailIds, masks } = sets;
    // Pass 2 launches only as many rows as the tail paths need.
    const pass2 = kernelsFor(k, drivers, lines, regimes.length, chunkRows(tailIds.length, lines, chunkBytes));
    for (let first = 0; first < tailIds.length; first += pass2.rows) {
      const count = Math.min(pass2.rows, tailIds.length - first);
      chunked(2, count, pass2.rows);
      const has = (bit: number) => (i: number) => (masks[first + i]! & bit) !== 0;
      const targets = [
        { weight: has(1), sums: neg },
        { weight: has(2), sums: pos },
        ...(withBand ? [{ weight: has(4), sums: band }] : []),
      ];
      await runChunk(pass2, (i) => tailIds[first + i]!, count, targets, false);
    }
    return twoPassResult(paths, loss, evTotal, sets, { ev, neg, pos, band });
  };

  let queue: Promise<unknown> = Promise.resolve();
  return {
    name: 'gpujs',
    detail:
      `gpu.js ${mode}${adapter ? ` on ${describeAdapter(adapter)}` : ''}, one thread per path, ` +
      'generator on the device',
    ...(adapter ? { adapter } : {}),
    simulate: (scenario, options) => {
      const run = queue.then(() => simulate(scenario, options));
      queue = run.catch(() => undefined);
      return run;
    },
    close: () => gpu.destroy(),
  };
}
