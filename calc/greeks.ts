/**
 * Black–Scholes Greeks with r = q = 0 (methodology §18), in the units the `sensitivity` endpoint
 * reports: Δ per unit of the underlying, Γ per unit², vega per volatility point (0.01) and θ per
 * calendar day. T ≤ 0 or σ = 0 leave no time value: Γ, vega and θ are then 0 and Δ is the intrinsic
 * one of `blackScholesDelta`.
 */
import { blackScholesDelta, type OptionRight } from './black-scholes';

const { exp, log, sqrt, max, PI } = Math;

/** One volatility point: vega is the price change for σ + 0.01. */
export const VOLATILITY_POINT = 0.01;
/** θ is per calendar day, as T counts calendar days / 365 (§11). */
export const CALENDAR_DAYS_PER_YEAR = 365;

export type SensitivityType = 'delta' | 'gamma' | 'vega' | 'theta';
export const SENSITIVITY_TYPES: readonly SensitivityType[] = ['delta', 'gamma', 'vega', 'theta'];

export interface Greeks {
  readonly delta: number;
  readonly gamma: number;
  readonly vega: number;
  readonly theta: number;
}

const density = (x: number) => exp(-0.5 * x * x) / sqrt(2 * PI);

/** Δ, Γ, vega (per 0.01 of σ) and θ (per calendar day) of one European option on one unit. */
export function blackScholesGreeks(
  right: OptionRight,
  spot: number,
  strike: number,
  years: number,
  vol: number,
): Greeks {
  const delta = blackScholesDelta(right, spot, strike, years, vol);
  const root = sqrt(max(years, 0));
  const total = vol * root;
  if (!(total > 0)) return { delta, gamma: 0, vega: 0, theta: 0 };
  const d1 = log(spot / strike) / total + total / 2;
  const phi = density(d1);
  return {
    delta,
    // Equal for calls and puts: with r = q = 0 a call less a put is the forward S − K.
    gamma: phi / (spot * total),
    vega: spot * phi * root * VOLATILITY_POINT,
    // ∂V/∂t = −∂V/∂T = −S·φ(d1)·σ/(2√T), per year; one calendar day is 1/365 of it.
    theta: -(spot * phi * vol) / (2 * root) / CALENDAR_DAYS_PER_YEAR,
  };
}
