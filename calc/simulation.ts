/**
 * The reference Monte Carlo implementation (methodology §4–§6): plain TypeScript, written to be read
 * and to be the yardstick the accelerated kernels are tested against.
 *
 * Memory is O(paths + drivers × projections), never paths × drivers: pass 1 generates every path from
 * the counter-based generator, keeps only the portfolio P&L L per path (which fixes the tail sets)
 * and accumulates the ev components, which average over all paths; pass 2 regenerates just the
 * paths of the tail sets (about 2·tail of them) and accumulates their components. Sums over paths
 * are f64.
 *
 * Units: x are log-returns at the horizon; exposures and L are money. Per-driver results are kept
 * exposure-free (means of g(x)·f_j and g(x)·e) so several positions in one symbol, even ones that net
 * to zero, each get their own exact share; `positionComponents` turns them into fractions of NLV.
 */
import type { FactorModel } from './estimation';
import { lineBeta, lineCount, LinePricer, type ScenarioLines } from './kernels/line-pricing';
import { psdRoot } from './linear-algebra';
import { fillNormals, type Seed, uniformAt } from './random';

export type { ScenarioLines } from './kernels/line-pricing';
export { lineCount, OPTION_FIELDS } from './kernels/line-pricing';

// Bound once: under jest's vm sandbox every global lookup (Math, Number) in a hot loop costs ~25×.
const { expm1, sqrt } = Math;

export interface Regime {
  /** Probability of the regime; one uniform per path picks the first regime whose cumulative sum exceeds it. */
  readonly probability: number;
  /** Mean of f at the horizon (k). */
  readonly mean: Float64Array;
  /** A (k×k row-major) with A·Aᵀ = the covariance of f at the horizon: f = mean + A·z. */
  readonly root: Float64Array;
}

/** Everything a simulation needs, already at the horizon. The kernels take the same object. */
export interface Scenario {
  /** Number of projections. */
  readonly k: number;
  readonly regimes: readonly Regime[];
  /** β of each driver (a distinct symbol held), D×k row-major. */
  readonly beta: Float64Array;
  /** √(r_d·h/s) per driver. */
  readonly residualSd: Float64Array;
  /**
   * Σ of the exposures v of the positions in each driver, in money. Its length is the driver count D;
   * with `lines` the P&L is priced per line and these values are not read.
   */
  readonly exposure: Float64Array;
  /** A held shocked security (§7): x = logReturn exactly and e = logReturn − β·f. */
  readonly pinned: { readonly driver: number; readonly logReturn: number } | null;
  /** Mean of each driver's residual at the horizon (§13 drift and forecasts); absent = 0. */
  readonly residualMean?: Float64Array;
  /**
   * What is priced (§9–§11): one line per distinct (driver, FX driver, option) combination. Absent =
   * one linear line per driver with `exposure[d]` (a book of base-currency stocks). Results are per
   * line, L×(k+1).
   */
  readonly lines?: ScenarioLines;
}

export interface SimulationOptions {
  readonly paths: number;
  readonly seed: Seed;
  /** Tail fraction: the tail sets hold m = ceil(tail·P) paths. */
  readonly tail: number;
  /** Also average over the 2·floor(0.005·P)+1 paths around the VaR rank (§8). */
  readonly varBand?: boolean;
  /** Sees every array the simulation allocates (the memory test counts them). */
  readonly onAllocate?: (what: string, elements: number) => void;
  /**
   * Sees each chunk a chunked backend (gpujs) launches: the pass (1: every path, 2: the tail paths),
   * the paths it holds and the rows launched. The tests check that chunking really chunks.
   */
  readonly onChunk?: (pass: 1 | 2, count: number, rows: number) => void;
}

export interface PathSetResult {
  /** Number of paths in the set. */
  readonly count: number;
  /** Mean of L over the set, money. */
  readonly portfolio: number;
  /**
   * L×(k+1) (L = lines, or drivers without lines): mean over the set of G_l·f_j (j < k) and the
   * line's residual term (j = k), G_l = unit P&L / x_l (linear: g(x) = expm1(x)/x). Component ij of a
   * position on line l is scale_i·B_lj·that (residual: scale_i·that), B_l the line's β.
   */
  readonly means: Float64Array;
}

export interface SimulationResult {
  readonly paths: number;
  readonly tailCount: number;
  readonly ev: PathSetResult;
  readonly cvarNeg: PathSetResult;
  readonly cvarPos: PathSetResult;
  readonly var: PathSetResult | null;
}

/** m = ceil(tail·P), clamped to [1, P]; the 1e-9 absorbs tail·P landing an ulp above an integer. */
export function tailCount(tail: number, paths: number): number {
  return Math.min(paths, Math.max(1, Math.ceil(tail * paths - 1e-9)));
}

/** The 2·floor(0.005·P)+1 ranks (0-based start) centred on the VaR rank ceil(tail·P), kept inside [0, P). */
export function varBand(tail: number, paths: number): { start: number; count: number } {
  const half = Math.floor(0.005 * paths);
  const count = Math.min(2 * half + 1, paths);
  const centre = tailCount(tail, paths) - 1;
  return { start: Math.min(Math.max(centre - half, 0), paths - count), count };
}

const NEG = 1;
const POS = 2;
const BAND = 4;

/** Regenerates any path on demand: the only source of randomness of both passes. */
export class PathGenerator {
  readonly f: Float64Array;
  readonly x: Float64Array;
  readonly e: Float64Array;
  private readonly z: Float64Array;
  private readonly words = new Uint32Array(4);
  private readonly cumulative: Float64Array;

  constructor(
    private readonly scenario: Scenario,
    private readonly seed: Seed,
    alloc: (what: string, n: number) => Float64Array = (_, n) => new Float64Array(n),
  ) {
    const { k } = scenario;
    const drivers = scenario.exposure.length;
    this.f = alloc('factors', k);
    this.x = alloc('log-returns', drivers);
    this.e = alloc('residuals', drivers);
    this.z = alloc('normals', k + drivers);
    this.cumulative = alloc('regime probabilities', scenario.regimes.length);
    let total = 0;
    scenario.regimes.forEach((regime, r) => (this.cumulative[r] = total += regime.probability));
  }

  /** Fills f, x and e for path p. Dimensions: 0..k−1 factors, k + d the residual of driver d. */
  draw(p: number): void {
    const { k, beta, residualSd, regimes, pinned, residualMean } = this.scenario;
    const { f, x, e, z } = this;
    const drivers = x.length;
    fillNormals(this.seed, p, z, k + drivers, 0, this.words);
    const u = uniformAt(this.seed, p, 0, this.words);
    let r = 0;
    while (r < regimes.length - 1 && !(u < this.cumulative[r]!)) r++;
    const { mean, root } = regimes[r]!;
    for (let i = 0; i < k; i++) {
      let value = mean[i]!;
      for (let j = 0; j < k; j++) value += root[i * k + j]! * z[j]!;
      f[i] = value;
    }
    for (let d = 0; d < drivers; d++) {
      let systematic = 0;
      for (let j = 0; j < k; j++) systematic += beta[d * k + j]! * f[j]!;
      // A drift or forecast shifts the residual's mean (§13); without one the draw is unchanged.
      const residual =
        residualMean === undefined
          ? residualSd[d]! * z[k + d]!
          : residualMean[d]! + residualSd[d]! * z[k + d]!;
      e[d] = residual;
      x[d] = systematic + residual;
    }
    if (pinned !== null) {
      let systematic = 0;
      for (let j = 0; j < k; j++) systematic += beta[pinned.driver * k + j]! * f[j]!;
      x[pinned.driver] = pinned.logReturn;
      e[pinned.driver] = pinned.logReturn - systematic;
    }
  }
}

export function simulate(scenario: Scenario, options: SimulationOptions): SimulationResult {
  const { paths } = options;
  if (!Number.isInteger(paths) || paths < 1 || paths > 0xffffffff) {
    throw new RangeError(`paths must be an integer in [1, 2^32), got ${paths}.`);
  }
  const note = options.onAllocate ?? (() => {});
  const alloc = (what: string, n: number): Float64Array => {
    note(what, n);
    return new Float64Array(n);
  };
  const { k, exposure } = scenario;
  const drivers = lineCount(scenario);
  const generator = new PathGenerator(scenario, options.seed, alloc);

  const width = k + 1;
  const sums = {
    ev: alloc('ev sums', drivers * width),
    neg: alloc('cvar_neg sums', drivers * width),
    pos: alloc('cvar_pos sums', drivers * width),
    band: alloc('var sums', options.varBand ? drivers * width : 0),
  };
  const { f, x, e } = generator;
  const g = alloc('g(x) per driver', drivers);
  const lines = scenario.lines;
  const pricer = lines === undefined ? null : new LinePricer(lines, alloc);
  /** Adds this path's g(x_d)·f_j and g(x_d)·e_d to every driver's sums in `target`. */
  const accumulate = (target: Float64Array): void => {
    if (pricer !== null) return pricer.accumulate(target, f, k);
    for (let d = 0; d < drivers; d++) {
      const at = d * width;
      const gd = g[d]!;
      for (let j = 0; j < k; j++) target[at + j]! += gd * f[j]!;
      target[at + k]! += gd * e[d]!;
    }
  };
  /** Draws path p and fills g; returns the path's portfolio P&L L. */
  const drawPath = (p: number): number => {
    generator.draw(p);
    if (pricer !== null) return pricer.price(x, e);
    let total = 0;
    for (let d = 0; d < drivers; d++) {
      const xd = x[d]!;
      const move = expm1(xd);
      total += exposure[d]! * move;
      // g(x) = expm1(x)/x, g(0) = 1: Math.expm1 is accurate to an ulp near 0, so is the quotient.
      g[d] = xd === 0 ? 1 : move / xd;
    }
    return total;
  };

  // Pass 1: every path's L; ev averages over all paths, so its sums are taken here too.
  const loss = alloc('portfolio P&L per path', paths);
  let evTotal = 0;
  for (let p = 0; p < paths; p++) {
    loss[p] = drawPath(p);
    evTotal += loss[p]!;
    accumulate(sums.ev);
  }

  // Tail sets of exactly m paths: rank by (L, path index), so ties are broken and m is exact.
  note('rank order', paths);
  const order = new Uint32Array(paths);
  for (let p = 0; p < paths; p++) order[p] = p;
  order.sort((a, b) => loss[a]! - loss[b]! || a - b);
  const m = tailCount(options.tail, paths);
  note('set flags', paths);
  const flags = new Uint8Array(paths);
  for (let i = 0; i < m; i++) {
    flags[order[i]!]! |= NEG;
    flags[order[paths - 1 - i]!]! |= POS;
  }
  const band = options.varBand ? varBand(options.tail, paths) : null;
  if (band) for (let i = band.start; i < band.start + band.count; i++) flags[order[i]!]! |= BAND;

  // Pass 2: regenerate only the paths in a tail set (the generator can draw any path on its own)
  // and accumulate their components. The same draw gives the same x, so the sets' sums are exact.
  const portfolio = { neg: 0, pos: 0, band: 0 };
  for (let p = 0; p < paths; p++) {
    const flag = flags[p]!;
    if (flag === 0) continue;
    drawPath(p);
    if (flag & NEG) {
      portfolio.neg += loss[p]!;
      accumulate(sums.neg);
    }
    if (flag & POS) {
      portfolio.pos += loss[p]!;
      accumulate(sums.pos);
    }
    if (flag & BAND) {
      portfolio.band += loss[p]!;
      accumulate(sums.band);
    }
  }

  const result = (count: number, sum: number, means: Float64Array): PathSetResult => {
    for (let i = 0; i < means.length; i++) means[i]! /= count;
    return { count, portfolio: sum / count, means };
  };
  return {
    paths,
    tailCount: m,
    ev: result(paths, evTotal, sums.ev),
    cvarNeg: result(m, portfolio.neg, sums.neg),
    cvarPos: result(m, portfolio.pos, sums.pos),
    var: band ? result(band.count, portfolio.band, sums.band) : null,
  };
}

export interface PositionExposure {
  /** Index of the position's line in the scenario (its driver when the scenario has no lines). */
  readonly driver: number;
  /**
   * The position's scale on its line: v_i = quantity × price × multiplier × FX (money) for a linear
   * line, quantity × multiplier × FX for an option line (§11).
   */
  readonly exposure: number;
}

/**
 * Per position, (k+1) values as fractions of NLV: scale_i·B_lj·mean(G·f_j)/NLV and the residual
 * scale_i·mean(residual term)/NLV, B_l the line's β (β of its driver plus β of its FX driver, §10).
 * Over all positions they sum to set.portfolio/NLV (to rounding).
 */
export function positionComponents(
  scenario: Scenario,
  set: PathSetResult,
  positions: readonly PositionExposure[],
  nlv: number,
): Float64Array {
  const { k } = scenario;
  const width = k + 1;
  const beta = scenario.lines === undefined ? scenario.beta : lineBetas(scenario);
  const out = new Float64Array(positions.length * width);
  positions.forEach(({ driver, exposure }, i) => {
    for (let j = 0; j < k; j++) {
      out[i * width + j] = (exposure * beta[driver * k + j]! * set.means[driver * width + j]!) / nlv;
    }
    out[i * width + k] = (exposure * set.means[driver * width + k]!) / nlv;
  });
  return out;
}

/** B_l = β of the line's driver + β of its FX driver (§10), L×k; a missing leg contributes 0. */
export function lineBetas(scenario: Scenario): Float64Array {
  const { k, lines } = scenario;
  if (lines === undefined) return scenario.beta;
  const out = new Float64Array(lines.primary.length * k);
  for (let l = 0; l < lines.primary.length; l++) {
    const b = lineBeta(scenario.beta, k, lines.primary[l]!, lines.fx[l]!);
    out.set(b, l * k);
  }
  return out;
}

/**
 * The unconditional two-regime scenario (§4, §5): regime d with probability π_d, f ~ N(0, Σ^d·h/s),
 * else f ~ N(0, Σ^c·h/s); residual variances scale by h/s. The first `exposure.length` drivers of the
 * model are the ones simulated. A regime of probability 0 is left out.
 */
export function unconditionalScenario(
  model: FactorModel,
  exposure: Float64Array,
  horizonScale: number,
): Scenario {
  const { k } = model;
  const drivers = exposure.length;
  const regime = (probability: number, covariance: Float64Array): Regime => ({
    probability,
    mean: new Float64Array(k),
    root: psdRoot(
      covariance.map((c) => c * horizonScale),
      k,
    ),
  });
  const regimes: Regime[] = [];
  if (model.distressProbability > 0) regimes.push(regime(model.distressProbability, model.distress));
  if (model.distressProbability < 1) regimes.push(regime(1 - model.distressProbability, model.calm));
  return {
    k,
    regimes,
    beta: model.beta.slice(0, drivers * k),
    residualSd: model.residualVariance.slice(0, drivers).map((r) => sqrt(r * horizonScale)),
    exposure: Float64Array.from(exposure),
    pinned: null,
  };
}
