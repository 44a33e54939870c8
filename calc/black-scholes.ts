/**
 * European options under Black–Scholes with r = q = 0 (methodology §11): price, delta, implied
 * volatility from a price, and the volatility surface's bilinear interpolation. Pure functions; the
 * repricing per path at the horizon builds on them.
 */
import { CalcInputError } from './input-error';

const { abs, exp, log, max, sqrt } = Math;

/**
 * erfc(x) to about 1e-15: the Maclaurin series of erf below |x| = 2 (at most one digit lost to
 * cancellation there), the continued fraction of erfc beyond (modified Lentz). Math has no erf, and a
 * deep out-of-the-money price needs the tail accurately, not 1 − erf.
 */
function erfc(x: number): number {
  const ax = abs(x);
  if (ax < 2) {
    let term = ax;
    let sum = ax;
    for (let n = 1; n < 60; n++) {
      term *= (-ax * ax) / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (abs(add) < 1e-17 * abs(sum)) break;
    }
    const erf = (2 / sqrt(Math.PI)) * sum;
    return x >= 0 ? 1 - erf : 1 + erf;
  }
  // erfc(x) = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …))))).
  const tiny = 1e-300;
  let f = ax;
  let c = ax;
  let d = 0;
  for (let n = 1; n < 500; n++) {
    const a = n / 2;
    d = ax + a * d;
    d = d === 0 ? tiny : 1 / d;
    c = ax + a / c;
    if (c === 0) c = tiny;
    const delta = c * d;
    f *= delta;
    if (abs(delta - 1) < 1e-16) break;
  }
  const tail = exp(-ax * ax) / sqrt(Math.PI) / f;
  return x >= 0 ? tail : 2 - tail;
}

/** Φ(x), the standard normal distribution function. */
export function normalCdf(x: number): number {
  return 0.5 * erfc(-x / Math.SQRT2);
}

export type OptionRight = 'C' | 'P';

/**
 * Black–Scholes price with r = q = 0. T ≤ 0 or σ = 0 give the intrinsic value (an option expiring
 * inside the horizon pays it; a zero volatility has no time value when the forward is the spot).
 */
export function blackScholes(
  right: OptionRight,
  spot: number,
  strike: number,
  years: number,
  vol: number,
): number {
  const intrinsic = right === 'C' ? max(spot - strike, 0) : max(strike - spot, 0);
  const total = vol * sqrt(max(years, 0));
  if (!(total > 0)) return intrinsic;
  const d1 = log(spot / strike) / total + total / 2;
  const d2 = d1 - total;
  return right === 'C'
    ? spot * normalCdf(d1) - strike * normalCdf(d2)
    : strike * normalCdf(-d2) - spot * normalCdf(-d1);
}

/** ∂price/∂spot: Φ(d1) for a call, Φ(d1) − 1 for a put; at T = 0 or σ = 0, 1/0 (½ at the money). */
export function blackScholesDelta(
  right: OptionRight,
  spot: number,
  strike: number,
  years: number,
  vol: number,
): number {
  const total = vol * sqrt(max(years, 0));
  const call =
    total > 0
      ? normalCdf(log(spot / strike) / total + total / 2)
      : spot > strike
        ? 1
        : spot < strike
          ? 0
          : 0.5;
  return right === 'C' ? call : call - 1;
}

/**
 * The σ with blackScholes(σ) = price, by bisection on a bracket (the price is increasing in σ), to
 * |price error| < 1e-10. A price outside (intrinsic, upper bound) has no implied volatility: null.
 */
export function impliedVolatility(
  right: OptionRight,
  spot: number,
  strike: number,
  years: number,
  price: number,
): number | null {
  const intrinsic = right === 'C' ? max(spot - strike, 0) : max(strike - spot, 0);
  const upper = right === 'C' ? spot : strike;
  if (!(years > 0) || !(price > intrinsic) || !(price < upper)) return null;
  let lo = 0;
  let hi = 1;
  while (blackScholes(right, spot, strike, years, hi) < price) {
    hi *= 2;
    if (hi > 1e6) return null;
  }
  for (let i = 0; i < 2000; i++) {
    const mid = (lo + hi) / 2;
    const error = blackScholes(right, spot, strike, years, mid) - price;
    if (abs(error) < 1e-10) return mid;
    if (error < 0) lo = mid;
    else hi = mid;
    if (hi - lo <= Number.EPSILON * hi) return mid;
  }
  return (lo + hi) / 2;
}

/** The spec's `volatility_surface` entry for one underlying. */
export interface VolatilitySurface {
  readonly symbol: string;
  /** Years, ascending. */
  readonly time_to_expiration: readonly number[];
  /** K/S, ascending. */
  readonly moneyness: readonly number[];
  /** One row per time to expiration, one column per moneyness. */
  readonly volatilities: readonly (readonly number[])[];
}

/** Checks a surface's shape (ascending axes, a full grid of positive volatilities). */
export function checkSurface(surface: VolatilitySurface, parameter: string): void {
  const ascending = (axis: readonly number[]) =>
    axis.length >= 1 && axis.every((x, i) => Number.isFinite(x) && (i === 0 || x > axis[i - 1]!));
  if (!ascending(surface.time_to_expiration)) {
    throw new CalcInputError(`${parameter}.time_to_expiration`, 'must be strictly ascending finite years.');
  }
  if (!ascending(surface.moneyness)) {
    throw new CalcInputError(`${parameter}.moneyness`, 'must be strictly ascending finite numbers.');
  }
  const rows = surface.volatilities;
  if (
    rows.length !== surface.time_to_expiration.length ||
    rows.some(
      (row) => row.length !== surface.moneyness.length || row.some((v) => !(Number.isFinite(v) && v >= 0)),
    )
  ) {
    throw new CalcInputError(
      `${parameter}.volatilities`,
      'must hold one row per time to expiration and one non-negative volatility per moneyness.',
    );
  }
}

/** Where x falls on an ascending axis: lower index and weight of the upper one, flat outside. */
function locate(axis: readonly number[], x: number): [number, number] {
  if (axis.length === 1 || x <= axis[0]!) return [0, 0];
  const last = axis.length - 1;
  if (x >= axis[last]!) return [last, 0];
  let i = 0;
  while (axis[i + 1]! < x) i++;
  return [i, (x - axis[i]!) / (axis[i + 1]! - axis[i]!)];
}

/** §11: bilinear in (time to expiration, moneyness K/S), flat beyond the grid's edges. */
export function surfaceVolatility(surface: VolatilitySurface, years: number, moneyness: number): number {
  const [i, u] = locate(surface.time_to_expiration, years);
  const [j, w] = locate(surface.moneyness, moneyness);
  const at = (a: number, b: number) => surface.volatilities[a]![b]!;
  const i1 = u > 0 ? i + 1 : i;
  const j1 = w > 0 ? j + 1 : j;
  return (1 - u) * ((1 - w) * at(i, j) + w * at(i, j1)) + u * ((1 - w) * at(i1, j) + w * at(i1, j1));
}
