/**
 * The tuned CPU kernel shared by the `typed` and `threads` backends: the reference model of
 * `calc/simulation.ts` evaluated a block of paths at a time, with typed arrays allocated once.
 *
 * Exactness: every per-path quantity is computed with the same operations in the same order as the
 * reference (f = mean + Σ_j root·z in j order; systematic = Σ_j β·f in j order; L = Σ_d v_d·expm1(x_d)
 * in driver order), and every accumulator element receives its per-path terms in ascending path
 * order, as in the reference. Only the loop nesting differs (driver outside, path inside), which
 * changes no f64 sum, so a single-threaded run reproduces the reference bit for bit.
 *
 * Memory: O(block × (k + 4) + drivers × (k+1)) per kernel, never paths × drivers. The residual
 * normals of a block are generated one Philox block (4 dimensions) at a time, so at most 4 drivers'
 * normals for the block's paths are held at once.
 */
import { inverseNormalCdf, NORMAL_STREAM, philox4x32, type Seed, UNIFORM_STREAM } from '../random';
import { PathGenerator, type Scenario } from '../simulation';
import { lineCount, LinePricer } from './line-pricing';

// Bound once: under jest's vm sandbox every global lookup in a hot loop costs ~25×.
const { expm1 } = Math;
const TWO_32 = 4294967296;

/** Paths per block: large enough to amortise the per-driver loop set-up, small enough for L2. */
export const BLOCK_PATHS = 1024;

/** Set membership bits of a path (the reference uses NEG, POS, BAND; EV marks pass 1). */
export const NEG = 1;
export const POS = 2;
export const BAND = 4;
export const EV = 8;

/** Accumulators D×(k+1) per set; a set the caller does not need may be an empty array. */
export interface SetSums {
  readonly ev: Float64Array<ArrayBuffer>;
  readonly neg: Float64Array<ArrayBuffer>;
  readonly pos: Float64Array<ArrayBuffer>;
  readonly band: Float64Array<ArrayBuffer>;
}

export function newSetSums(drivers: number, width: number, band: boolean): SetSums {
  return {
    ev: new Float64Array(drivers * width),
    neg: new Float64Array(drivers * width),
    pos: new Float64Array(drivers * width),
    band: new Float64Array(band ? drivers * width : 0),
  };
}

export class PathBlockKernel {
  private readonly k: number;
  private readonly drivers: number;
  private readonly width: number;
  /** Factor values f of the block's paths, block × k. */
  private readonly f: Float64Array;
  /** Residual normals of one Philox block (4 dimensions) for the block's paths, 4 × block. */
  private readonly z: Float64Array;
  /** Factor normals of one path. */
  private readonly zf: Float64Array;
  private readonly words = new Uint32Array(4);
  private readonly cumulative: Float64Array;
  /** Portfolio P&L of the block's paths. */
  readonly loss: Float64Array;
  private readonly lo: number;
  private readonly hi: number;
  /**
   * A scenario with lines (FX, cash, options: §9–§11) or residual means (§13) is run path by path
   * with the reference's own generator and pricer, so it stays bit for bit the reference.
   */
  private readonly perPath: { generator: PathGenerator; pricer: LinePricer | null } | null;

  constructor(
    private readonly scenario: Scenario,
    seed: Seed,
    private readonly block = BLOCK_PATHS,
  ) {
    this.k = scenario.k;
    this.drivers = scenario.exposure.length;
    this.perPath =
      scenario.lines === undefined && scenario.residualMean === undefined
        ? null
        : {
            generator: new PathGenerator(scenario, seed),
            pricer: scenario.lines === undefined ? null : new LinePricer(scenario.lines),
          };
    this.width = this.k + 1;
    this.f = new Float64Array(block * this.k);
    this.z = new Float64Array(4 * block);
    this.zf = new Float64Array(this.k);
    this.loss = new Float64Array(block);
    this.cumulative = new Float64Array(scenario.regimes.length);
    let total = 0;
    scenario.regimes.forEach((regime, r) => (this.cumulative[r] = total += regime.probability));
    this.lo = seed.lo;
    this.hi = seed.hi;
  }

  /** Words per 32-bit lane to a normal: identical to the reference's wordToNormal. */
  private fillFactors(path: number, row: number): void {
    const { k, f, zf, words, lo, hi, cumulative } = this;
    const { regimes } = this.scenario;
    for (let b = 0, dim = 0; dim < k; b++) {
      philox4x32(b, path, NORMAL_STREAM, 0, lo, hi, words);
      for (let lane = 0; lane < 4 && dim < k; lane++, dim++) {
        zf[dim] = inverseNormalCdf((words[lane]! + 0.5) / TWO_32);
      }
    }
    philox4x32(0, path, UNIFORM_STREAM, 0, lo, hi, words);
    const u = (words[0]! + 0.5) / TWO_32;
    let r = 0;
    while (r < regimes.length - 1 && !(u < cumulative[r]!)) r++;
    const { mean, root } = regimes[r]!;
    const at = row * k;
    for (let i = 0; i < k; i++) {
      let value = mean[i]!;
      for (let j = 0; j < k; j++) value += root[i * k + j]! * zf[j]!;
      f[at + i] = value;
    }
  }

  /**
   * Runs `count` paths: path ids[first + i] when `ids` is given (ascending), else path first + i.
   * Fills this.loss[0..count) with L and adds each path's components to the sets its `mask` bit
   * selects (mask null: every path goes to ev only). Returns nothing; sums are in `sums`.
   */
  run(first: number, count: number, ids: Uint32Array | null, mask: Uint8Array | null, sums: SetSums): void {
    const { k, drivers, width, f, z, words, lo, hi, loss } = this;
    const { beta, residualSd, exposure, pinned } = this.scenario;
    const block = this.block;
    if (count > block) throw new RangeError(`A block holds at most ${block} paths, got ${count}.`);
    if (this.perPath !== null) return this.runPerPath(first, count, ids, mask, sums);
    for (let i = 0; i < count; i++) {
      this.fillFactors(ids === null ? first + i : ids[first + i]!, i);
      loss[i] = 0;
    }
    const pinnedDriver = pinned === null ? -1 : pinned.driver;
    const pinnedReturn = pinned === null ? 0 : pinned.logReturn;
    const { ev, neg, pos, band } = sums;
    const lastDim = k + drivers;
    for (let b = k >>> 2; 4 * b < lastDim; b++) {
      // Normals of dimensions 4b..4b+3 for every path of the block (lanes outside the residuals unused).
      for (let i = 0; i < count; i++) {
        philox4x32(b, ids === null ? first + i : ids[first + i]!, NORMAL_STREAM, 0, lo, hi, words);
        for (let lane = 0; lane < 4; lane++) {
          z[lane * block + i] = inverseNormalCdf((words[lane]! + 0.5) / TWO_32);
        }
      }
      for (let lane = 0; lane < 4; lane++) {
        const d = 4 * b + lane - k;
        if (d < 0 || d >= drivers) continue;
        const sd = residualSd[d]!;
        const v = exposure[d]!;
        const betaAt = d * k;
        const at = d * width;
        const zAt = lane * block;
        for (let i = 0; i < count; i++) {
          const fAt = i * k;
          let systematic = 0;
          for (let j = 0; j < k; j++) systematic += beta[betaAt + j]! * f[fAt + j]!;
          let e = sd * z[zAt + i]!;
          let x = systematic + e;
          if (d === pinnedDriver) {
            x = pinnedReturn;
            e = pinnedReturn - systematic;
          }
          const move = expm1(x);
          loss[i]! += v * move;
          const g = x === 0 ? 1 : move / x;
          const m = mask === null ? EV : mask[i]!;
          if (m & EV) accumulate(ev, at, k, g, f, fAt, e);
          if (m & NEG) accumulate(neg, at, k, g, f, fAt, e);
          if (m & POS) accumulate(pos, at, k, g, f, fAt, e);
          if (m & BAND) accumulate(band, at, k, g, f, fAt, e);
        }
      }
    }
  }

  /** The reference's per-path loop (see `perPath`): same draws, same pricing, same order of sums. */
  private runPerPath(
    first: number,
    count: number,
    ids: Uint32Array | null,
    mask: Uint8Array | null,
    sums: SetSums,
  ): void {
    const { generator, pricer } = this.perPath!;
    const { k, drivers, width, loss } = this;
    const { exposure } = this.scenario;
    const { f, x, e } = generator;
    const { ev, neg, pos, band } = sums;
    const add = (target: Float64Array): void => {
      if (pricer !== null) return pricer.accumulate(target, f, k);
      for (let d = 0; d < drivers; d++) {
        const xd = x[d]!;
        accumulate(target, d * width, k, xd === 0 ? 1 : expm1(xd) / xd, f, 0, e[d]!);
      }
    };
    for (let i = 0; i < count; i++) {
      generator.draw(ids === null ? first + i : ids[first + i]!);
      let total = 0;
      if (pricer !== null) total = pricer.price(x, e);
      else for (let d = 0; d < drivers; d++) total += exposure[d]! * expm1(x[d]!);
      loss[i] = total;
      const m = mask === null ? EV : mask[i]!;
      if (m & EV) add(ev);
      if (m & NEG) add(neg);
      if (m & POS) add(pos);
      if (m & BAND) add(band);
    }
  }
}

/** Result rows of a scenario's sums: its lines, or its drivers. */
export function resultRows(scenario: Scenario): number {
  return lineCount(scenario);
}

/** target[at + j] += g·f_j (j < k), target[at + k] += g·e: the reference's per-path accumulate. */
function accumulate(
  target: Float64Array,
  at: number,
  k: number,
  g: number,
  f: Float64Array,
  fAt: number,
  e: number,
): void {
  for (let j = 0; j < k; j++) target[at + j]! += g * f[fAt + j]!;
  target[at + k]! += g * e;
}
