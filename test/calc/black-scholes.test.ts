/**
 * The option pricing helpers of §11 (r = q = 0) against closed forms and limits. The repricing of
 * option positions per path is not wired into the model yet; these are its building blocks.
 */
import fc from 'fast-check';
import {
  blackScholes,
  blackScholesDelta,
  checkSurface,
  impliedVolatility,
  normalCdf,
  surfaceVolatility,
  type VolatilitySurface,
} from '../../calc/black-scholes';
import { normalCdf as referenceCdf } from './support/normal-distribution';

test('Φ agrees with the test suite’s independent Φ (AS241-refined) to 1e-15, tails relative', () => {
  for (let x = -8; x <= 8; x += 0.01) {
    const expected = referenceCdf(x);
    expect(Math.abs(normalCdf(x) - expected)).toBeLessThanOrEqual(2e-15 + 1e-12 * expected);
  }
  expect(normalCdf(0)).toBe(0.5);
});

describe('Black–Scholes with r = q = 0', () => {
  test('the textbook value: S = K = 100, T = 1, σ = 0.2 → 7.965567455405804 (call = put at the money)', () => {
    // 100·(2Φ(0.1) − 1), Φ(0.1) = 0.539827837277029.
    expect(blackScholes('C', 100, 100, 1, 0.2)).toBeCloseTo(7.965567455405804, 12);
    expect(blackScholes('P', 100, 100, 1, 0.2)).toBeCloseTo(7.965567455405804, 12);
  });

  test('zero volatility and expiry give the intrinsic value; deep in and out of the money the limits', () => {
    expect(blackScholes('C', 120, 100, 1, 0)).toBe(20);
    expect(blackScholes('P', 120, 100, 0, 0.3)).toBe(0);
    expect(blackScholes('P', 80, 100, -0.1, 0.3)).toBe(20);
    expect(blackScholes('C', 1000, 100, 0.5, 0.2)).toBeCloseTo(900, 10);
    expect(blackScholes('C', 10, 100, 0.5, 0.2)).toBeLessThan(1e-20);
    expect(blackScholesDelta('C', 1000, 100, 0.5, 0.2)).toBeCloseTo(1, 12);
    expect(blackScholesDelta('P', 1000, 100, 0.5, 0.2)).toBeCloseTo(0, 12);
  });

  test('put–call parity C − P = S − K, and delta is the slope', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1, max: 1000, noNaN: true }),
        fc.double({ min: 1, max: 1000, noNaN: true }),
        fc.double({ min: 0.01, max: 5, noNaN: true }),
        fc.double({ min: 0.01, max: 2, noNaN: true }),
        (s, k, t, v) => {
          const parity = blackScholes('C', s, k, t, v) - blackScholes('P', s, k, t, v);
          expect(Math.abs(parity - (s - k))).toBeLessThan(1e-9 * Math.max(s, k));
          // A step small enough that the central difference's h² error stays far below the tolerance
          // even where gamma is steep (short expiries, low volatility, near the money).
          const h = 1e-6 * s;
          const slope = (blackScholes('C', s + h, k, t, v) - blackScholes('C', s - h, k, t, v)) / (2 * h);
          expect(Math.abs(slope - blackScholesDelta('C', s, k, t, v))).toBeLessThan(1e-5);
          expect(blackScholesDelta('C', s, k, t, v) - blackScholesDelta('P', s, k, t, v)).toBeCloseTo(1, 14);
        },
      ),
    );
  });

  test('implied volatility reproduces the price to 1e-10 by bracketing; impossible prices have none', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 50, max: 200, noNaN: true }),
        fc.double({ min: 0.05, max: 3, noNaN: true }),
        fc.double({ min: 0.05, max: 1.5, noNaN: true }),
        fc.constantFrom<'C' | 'P'>('C', 'P'),
        (k, t, v, right) => {
          const price = blackScholes(right, 100, k, t, v);
          const intrinsic = right === 'C' ? Math.max(100 - k, 0) : Math.max(k - 100, 0);
          fc.pre(price - intrinsic > 1e-6);
          const implied = impliedVolatility(right, 100, k, t, price)!;
          expect(Math.abs(blackScholes(right, 100, k, t, implied) - price)).toBeLessThan(1e-10);
        },
      ),
    );
    expect(impliedVolatility('C', 100, 90, 1, 9.5)).toBeNull(); // below intrinsic
    expect(impliedVolatility('C', 100, 90, 1, 100)).toBeNull(); // at the call's upper bound
    expect(impliedVolatility('P', 100, 90, 0, 1)).toBeNull(); // expired
  });
});

describe('volatility surface', () => {
  const surface: VolatilitySurface = {
    symbol: 'AAPL',
    time_to_expiration: [0.25, 1],
    moneyness: [0.9, 1, 1.1],
    volatilities: [
      [0.3, 0.25, 0.22],
      [0.28, 0.24, 0.21],
    ],
  };
  test('exact on the grid, bilinear inside, flat outside', () => {
    expect(surfaceVolatility(surface, 0.25, 1)).toBe(0.25);
    expect(surfaceVolatility(surface, 1, 1.1)).toBe(0.21);
    expect(surfaceVolatility(surface, 0.625, 0.95)).toBeCloseTo((0.3 + 0.25 + 0.28 + 0.24) / 4, 15);
    expect(surfaceVolatility(surface, 0.1, 0.5)).toBe(0.3);
    expect(surfaceVolatility(surface, 5, 2)).toBe(0.21);
    expect(surfaceVolatility(surface, 5, 1.05)).toBeCloseTo((0.24 + 0.21) / 2, 15);
  });
  test('malformed surfaces name the field', () => {
    expect(() => checkSurface({ ...surface, moneyness: [1, 0.9, 1.1] }, 'volatility_surface[0]')).toThrow(
      expect.objectContaining({ parameter: 'volatility_surface[0].moneyness' }),
    );
    expect(() =>
      checkSurface({ ...surface, volatilities: [[0.3, 0.25, 0.22]] }, 'volatility_surface[0]'),
    ).toThrow(expect.objectContaining({ parameter: 'volatility_surface[0].volatilities' }));
    expect(() => checkSurface(surface, 'volatility_surface[0]')).not.toThrow();
  });
});
