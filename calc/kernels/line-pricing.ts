/**
 * Repricing per path of what a book holds (methodology §6, §9–§11), shared by the reference and every
 * CPU kernel so they price the same way bit for bit. A *line* is one priced combination: a driver
 * (the security, or an option's underlying; −1 for cash), an FX driver (CCY→base; −1 in the base
 * currency) and, for an option, its Black–Scholes terms. Positions sharing a line share its draw.
 *
 * In base currency a line's log-return is x_l = x_a + x_fx and its residual e_l = e_a + e_fx (§10).
 * Linear: unit P&L = expm1(x_l), G = expm1(x_l)/x_l (1 at 0), residual term G·e_l. Option (§11):
 * unit P&L = e^{x_fx}·BS(S·e^{x_a}, K, T_h, σ) − P0 per unit of q·m·fx, G = unit/x_l and residual term
 * G·e_l (x_l = 0: G = 0 and the whole P&L on the residual). In both cases Σ_j B_lj·G·f_j + residual term
 * = unit P&L, so the components sum exactly to the P&L.
 */
import { blackScholes } from '../black-scholes';

// Bound once: under jest's vm sandbox every global lookup in a hot loop costs ~25×.
const { exp, expm1 } = Math;

/** Per option line: right (0 linear, 1 call, 2 put), spot S, strike K, years at the horizon T_h, σ, P0. */
export const OPTION_FIELDS = 6;
export const LINEAR = 0;
export const CALL = 1;
export const PUT = 2;

export interface ScenarioLines {
  /** The line's driver (a security, an option's underlying), or −1 (cash). */
  readonly primary: Int32Array;
  /** The line's FX driver (CCY→base), or −1 for the base currency. */
  readonly fx: Int32Array;
  /** Σ of its positions' scales: money v for a linear line, q·m·fx for an option line. */
  readonly exposure: Float64Array;
  /** L × OPTION_FIELDS, right 0 for a linear line; null when no line is an option. */
  readonly option: Float64Array | null;
}

/** Number of result rows of a scenario: its lines, or its drivers when it has none. */
export function lineCount(scenario: {
  readonly exposure: Float64Array;
  readonly lines?: ScenarioLines;
}): number {
  return scenario.lines === undefined ? scenario.exposure.length : scenario.lines.primary.length;
}

/** β of a line: β of its driver plus β of its FX driver (either may be −1). */
export function lineBeta(beta: Float64Array, k: number, primary: number, fx: number): Float64Array {
  const out = new Float64Array(k);
  for (let j = 0; j < k; j++) {
    let b = primary >= 0 ? beta[primary * k + j]! : 0;
    if (fx >= 0) b += beta[fx * k + j]!;
    out[j] = b;
  }
  return out;
}

/** Prices every line of a path from its drivers' x and e, and adds its terms to accumulators. */
export class LinePricer {
  /** G_l of the last path priced. */
  readonly g: Float64Array;
  /** Residual term of the last path priced. */
  readonly r: Float64Array;

  constructor(
    private readonly lines: ScenarioLines,
    alloc: (what: string, n: number) => Float64Array = (_, n) => new Float64Array(n),
  ) {
    this.g = alloc('G per line', lines.primary.length);
    this.r = alloc('residual term per line', lines.primary.length);
  }

  /** Fills g and r from the drivers' x and e of one path; returns the path's portfolio P&L L. */
  price(x: ArrayLike<number>, e: ArrayLike<number>): number {
    const { exposure } = this.lines;
    let total = 0;
    for (let l = 0; l < exposure.length; l++) total += exposure[l]! * this.priceLine(l, x, e, 0);
    return total;
  }

  /**
   * Line l on one path whose drivers' x and e start at `at` in `x` and `e`: returns its unit P&L and
   * sets g[l] and r[l]. The blocked kernel calls this per (line, path) with the same arithmetic.
   */
  priceLine(l: number, x: ArrayLike<number>, e: ArrayLike<number>, at: number): number {
    const { primary, fx, option } = this.lines;
    const { g, r } = this;
    const a = primary[l]!;
    const b = fx[l]!;
    let xl = a >= 0 ? x[at + a]! : 0;
    let el = a >= 0 ? e[at + a]! : 0;
    if (b >= 0) {
      xl += x[at + b]!;
      el += e[at + b]!;
    }
    const right = option === null ? LINEAR : option[l * OPTION_FIELDS]!;
    if (right === LINEAR) {
      const move = expm1(xl);
      const gl = xl === 0 ? 1 : move / xl;
      g[l] = gl;
      r[l] = gl * el;
      return move;
    }
    const o = l * OPTION_FIELDS;
    const later = blackScholes(
      right === CALL ? 'C' : 'P',
      option![o + 1]! * exp(x[at + a]!),
      option![o + 2]!,
      option![o + 3]!,
      option![o + 4]!,
    );
    const unit = (b >= 0 ? exp(x[at + b]!) : 1) * later - option![o + 5]!;
    if (xl === 0) {
      g[l] = 0;
      r[l] = unit;
    } else {
      const gl = unit / xl;
      g[l] = gl;
      r[l] = gl * el;
    }
    return unit;
  }

  /** target[l(k+1) + j] += G_l·f_j (j < k), target[l(k+1) + k] += residual term, for the last path priced. */
  accumulate(target: Float64Array, f: ArrayLike<number>, k: number): void {
    const { g, r } = this;
    const width = k + 1;
    for (let l = 0; l < g.length; l++) {
      const at = l * width;
      const gl = g[l]!;
      for (let j = 0; j < k; j++) target[at + j]! += gl * f[j]!;
      target[at + k]! += r[l]!;
    }
  }
}
