/**
 * Host side of the WebAssembly SIMD kernel (calc/wasm/assembly/kernel.ts): lays out one scenario in
 * the module's memory and runs pass 1 (every path's L and the ev sums) and pass 2 (the tail paths'
 * sums) over path ranges or id lists. One instance per thread. See the kernel's header for the
 * generator and the arithmetic (f32 lanes, f64 sums over paths); it does not reproduce the
 * reference's Philox stream, only its distribution (methodology §5).
 */
import { inverseNormalCdf, type Seed } from '../random';
import type { Scenario } from '../simulation';
import { KERNEL_WASM_BASE64 } from '../wasm/kernel-module';
import { lineCount, OPTION_FIELDS } from './line-pricing';

/** The part of the WebAssembly API used here (the project's lib settings carry no DOM types). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
type WasmModule = object;
interface WasmApi {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { readonly exports: object };
}
const { WebAssembly: wasm } = globalThis as unknown as { WebAssembly: WasmApi };

interface KernelExports {
  readonly memory: WasmMemory;
  heapBase(): number;
  scratchBytes(k: number, drivers: number, lines: number): number;
  configure(...args: number[]): void;
  sumsAddress(set: number): number;
  reset(): void;
  pass1(first: number, count: number, loss: number, scratchLoss: number): void;
  pass2(ids: number, count: number, set: number, scratchLoss: number): void;
}

/** Paths (pass 1) or ids (pass 2) per kernel call; a caller's range is cut into these in order. */
export const WASM_CALL_PATHS = 4096;
/** Option fields per line in the kernel: right, ln(S/K), S, K, σ√T_h, P0, 2 spare. */
export const KERNEL_OPTION_FIELDS = 8;

let compiled: WasmModule | null = null;
let table: Float32Array<ArrayBuffer> | null = null;

/** Bins of the kernel's quantile table: f32 exponents 126..149 (½ to 2²³) × 64 mantissa steps. */
export const QUANTILE_BINS = 24 * 64;

/**
 * The kernel's Φ⁻¹ table (see `normal` in calc/wasm/assembly/kernel.ts): for each bin of q' = m + ½
 * (m a 23-bit integer, q = q'·2⁻²⁴), the line z = value + slope·(low 17 mantissa bits of q') through
 * the exact quantiles (this module's AS241, f64) of the first and last q' in the bin; a bin with
 * one q' has slope 0, an empty bin zeros. Entries are (value, slope) pairs of f32.
 */
export function quantileTable(): Float32Array<ArrayBuffer> {
  if (table !== null) return table;
  const out = new Float32Array(2 * QUANTILE_BINS);
  const word = new Float32Array(1);
  const bits = new Uint32Array(word.buffer);
  const fraction = (q: number) => {
    word[0] = q;
    return bits[0]! & 0x1ffff;
  };
  for (let bin = 0; bin < QUANTILE_BINS; bin++) {
    const exponent = 126 + (bin >> 6) - 127;
    const low = 2 ** exponent * (1 + (bin & 63) / 64);
    const high = 2 ** exponent * (1 + ((bin & 63) + 1) / 64);
    const first = Math.max(0, Math.ceil(low - 0.5)) + 0.5;
    const last = Math.min(2 ** 23 - 1, Math.ceil(high - 0.5) - 1) + 0.5;
    if (first > last) continue;
    const z0 = inverseNormalCdf(first * 2 ** -24);
    const z1 = inverseNormalCdf(last * 2 ** -24);
    const f0 = fraction(first);
    const f1 = fraction(last);
    const slope = f1 === f0 ? 0 : (z1 - z0) / (f1 - f0);
    out[2 * bin] = z0 - slope * f0;
    out[2 * bin + 1] = slope;
  }
  table = out;
  return out;
}

/** The compiled module, shared by every instance in this thread. */
export function wasmModule(): WasmModule {
  compiled ??= new wasm.Module(Buffer.from(KERNEL_WASM_BASE64, 'base64'));
  return compiled;
}

export interface WasmSums {
  /** Pass 1: ev; pass 2: neg, pos, band (each lines × (k+1)). */
  readonly sets: Float64Array<ArrayBuffer>[];
}

export class WasmKernel {
  private readonly exports: KernelExports;
  private readonly size: number;
  private readonly lossAt: number;
  private readonly idsAt: number;
  private readonly scratchLossAt: number;

  constructor(scenario: Scenario, seed: Seed) {
    const instance = new wasm.Instance(wasmModule(), {
      env: {
        abort: () => {
          throw new Error('wasm kernel aborted');
        },
      },
    });
    const ex = instance.exports as unknown as KernelExports;
    this.exports = ex;
    const { k, regimes } = scenario;
    const drivers = scenario.exposure.length;
    const lines = lineCount(scenario);
    const R = regimes.length;
    this.size = lines * (k + 1);

    let at = align(ex.heapBase(), 16);
    const take = (bytes: number) => {
      const start = at;
      at = align(at + bytes, 16);
      return start;
    };
    const regCum = take(4 * R);
    const regMean = take(4 * R * k);
    const regRoot = take(4 * R * k * k);
    const beta = take(4 * drivers * k);
    const sd = take(4 * drivers);
    const mu = take(4 * drivers);
    const primary = take(4 * lines);
    const fx = take(4 * lines);
    const exposure = take(8 * lines);
    const option = take(4 * KERNEL_OPTION_FIELDS * lines);
    const quantiles = take(8 * QUANTILE_BINS);
    this.scratchLossAt = take(32);
    this.lossAt = take(8 * WASM_CALL_PATHS);
    this.idsAt = take(4 * WASM_CALL_PATHS);
    const scratch = take(ex.scratchBytes(k, drivers, lines));
    const pages = Math.ceil(at / 65536) - ex.memory.buffer.byteLength / 65536;
    if (pages > 0) ex.memory.grow(pages);
    const buffer = ex.memory.buffer;

    const f32 = (address: number, n: number) => new Float32Array(buffer, address, n);
    f32(quantiles, 2 * QUANTILE_BINS).set(quantileTable());
    let cumulative = 0;
    regimes.forEach((regime, r) => {
      cumulative += regime.probability;
      f32(regCum, R)[r] = cumulative;
      f32(regMean + 4 * r * k, k).set(regime.mean);
      f32(regRoot + 4 * r * k * k, k * k).set(regime.root);
    });
    f32(beta, drivers * k).set(scenario.beta.subarray(0, drivers * k));
    f32(sd, drivers).set(scenario.residualSd.subarray(0, drivers));
    if (scenario.residualMean) f32(mu, drivers).set(scenario.residualMean.subarray(0, drivers));
    const tables = kernelLines(scenario);
    new Int32Array(buffer, primary, lines).set(tables.primary);
    new Int32Array(buffer, fx, lines).set(tables.fx);
    new Float64Array(buffer, exposure, lines).set(tables.exposure);
    f32(option, lines * KERNEL_OPTION_FIELDS).set(tables.option);
    const pinned = scenario.pinned;
    ex.configure(
      k,
      drivers,
      lines,
      R,
      ...seedKeys(seed),
      pinned === null ? -1 : pinned.driver,
      pinned === null ? 0 : pinned.logReturn,
      regCum,
      regMean,
      regRoot,
      beta,
      sd,
      mu,
      primary,
      fx,
      exposure,
      option,
      quantiles,
      scratch,
    );
  }

  private sums(sets: number): Float64Array<ArrayBuffer>[] {
    const { buffer } = this.exports.memory;
    // The kernel keeps two f64 partial sums per entry (lanes 0+2 and 1+3); their sum is the entry.
    return Array.from({ length: sets }, (_, s) => {
      const pairs = new Float64Array(buffer, this.exports.sumsAddress(s), 2 * this.size);
      return Float64Array.from({ length: this.size }, (_, i) => pairs[2 * i]! + pairs[2 * i + 1]!);
    });
  }

  /** Pass 1 over paths first..first+count−1: their L and the ev component sums. */
  pass1(first: number, count: number): { loss: Float64Array<ArrayBuffer>; ev: Float64Array<ArrayBuffer> } {
    const ex = this.exports;
    ex.reset();
    const loss = new Float64Array(count);
    for (let at = 0; at < count; at += WASM_CALL_PATHS) {
      const n = Math.min(WASM_CALL_PATHS, count - at);
      ex.pass1(first + at, n, this.lossAt, this.scratchLossAt);
      loss.set(new Float64Array(ex.memory.buffer, this.lossAt, n), at);
    }
    return { loss, ev: this.sums(1)[0]! };
  }

  /**
   * Pass 2 over ascending path ids with their set bits (1 neg, 2 pos, 4 band): the sets' sums. Each
   * set is drawn over its own ids (a path in two sets is drawn twice), so a path's components are
   * added to its set only; the band set only when `band`.
   */
  pass2(
    ids: Uint32Array,
    masks: Uint8Array,
    band: boolean,
  ): { neg: Float64Array<ArrayBuffer>; pos: Float64Array<ArrayBuffer>; band: Float64Array<ArrayBuffer> } {
    const ex = this.exports;
    ex.reset();
    const own = new Uint32Array(ids.length);
    for (let set = 0; set < (band ? 3 : 2); set++) {
      let n = 0;
      for (let i = 0; i < ids.length; i++) if (masks[i]! & (1 << set)) own[n++] = ids[i]!;
      for (let at = 0; at < n; at += WASM_CALL_PATHS) {
        const count = Math.min(WASM_CALL_PATHS, n - at);
        new Uint32Array(ex.memory.buffer, this.idsAt, count).set(own.subarray(at, at + count));
        ex.pass2(this.idsAt, count, set, this.scratchLossAt);
      }
    }
    const [neg, pos, bandSums] = this.sums(3) as [
      Float64Array<ArrayBuffer>,
      Float64Array<ArrayBuffer>,
      Float64Array<ArrayBuffer>,
    ];
    return { neg, pos, band: bandSums };
  }
}

/**
 * A scenario's lines as the kernels read them (this one and the gpujs kernels): a book without lines
 * is one linear line per driver; an option line's terms are (right, ln(S/K), S, K, σ√T_h, P0) in
 * KERNEL_OPTION_FIELDS slots, zeros for a linear line.
 */
export function kernelLines(scenario: Scenario): {
  primary: Int32Array;
  fx: Int32Array;
  exposure: Float64Array;
  option: Float32Array;
} {
  const lines = lineCount(scenario);
  const lineSet = scenario.lines;
  const option = new Float32Array(lines * KERNEL_OPTION_FIELDS);
  if (lineSet === undefined) {
    return {
      primary: Int32Array.from({ length: lines }, (_, l) => l),
      fx: new Int32Array(lines).fill(-1),
      exposure: Float64Array.from(scenario.exposure),
      option,
    };
  }
  const terms = lineSet.option;
  if (terms !== null) {
    for (let l = 0; l < lines; l++) {
      const o = l * OPTION_FIELDS;
      const right = terms[o]!;
      if (right === 0) continue;
      const [spot, strike, years, sigma, p0] = [
        terms[o + 1]!,
        terms[o + 2]!,
        terms[o + 3]!,
        terms[o + 4]!,
        terms[o + 5]!,
      ];
      option.set(
        [right, Math.log(spot / strike), spot, strike, sigma * Math.sqrt(Math.max(years, 0)), p0],
        l * KERNEL_OPTION_FIELDS,
      );
    }
  }
  return { primary: lineSet.primary, fx: lineSet.fx, exposure: lineSet.exposure, option };
}

/**
 * The kernel's two 32-bit keys from the 64-bit seed: splitmix64's finaliser of (hi, lo), so every
 * bit of the seed moves every bit of both keys (the kernel XORs the first into the path index).
 */
export function seedKeys(seed: Seed): [number, number] {
  const mask = (1n << 64n) - 1n;
  let z = ((BigInt(seed.hi >>> 0) << 32n) | BigInt(seed.lo >>> 0)) + 0x9e3779b97f4a7c15n;
  z &= mask;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & mask;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & mask;
  z ^= z >> 31n;
  return [Number(z >> 32n), Number(z & 0xffffffffn)];
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The kernel's 32-bit word of (seed, path, dim) in plain JavaScript, from its description (two keyed
 * fmix32 rounds): what the gpujs kernels' generator is checked against, here and on a GPU.
 */
export function kernelWord(seed: Seed, path: number, dim: number): number {
  const [seedA, seedB] = seedKeys(seed);
  const a = fmix32((path ^ seedA) >>> 0);
  const b = fmix32((a ^ 0x6a09e667) >>> 0);
  const key = (Math.imul(dim, 0x9e3779b9) + seedB) >>> 0;
  return fmix32((fmix32((a + key) >>> 0) ^ b) >>> 0);
}

/** The kernel's normal of a word, with its f32 arithmetic: the quantile table's line at q' = m + ½, signed. */
export function kernelNormal(word: number): number {
  const table = quantileTable();
  const q = new Float32Array([((word << 1) >>> 9) + 0.5]);
  const bits = new Uint32Array(q.buffer)[0]!;
  const line = (bits >>> 17) - (126 << 6);
  const z = Math.fround(Math.fround(table[2 * line + 1]! * (bits & 0x1ffff)) + table[2 * line]!);
  return word >>> 31 ? -z : z;
}

function align(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}
