import { dynamicRange, searchHorizon } from '../../calc/stress-test';

describe('dynamic range and horizon search', () => {
  test('dynamic range is [expm1(−2σ√(h/s)), expm1(2σ√(h/s))]', () => {
    expect(dynamicRange(0.01, 25, 1)).toEqual([Math.expm1(-0.1), Math.expm1(0.1)]);
    expect(dynamicRange(0.02, 25, 5)).toEqual([
      Math.expm1(-0.04 * Math.sqrt(5)),
      Math.expm1(0.04 * Math.sqrt(5)),
    ]);
  });

  test.each([
    // 2·0.01·√h ≥ −ln(0.9) = 0.10536 ⇔ h ≥ 27.75
    [0.01, -0.1, 1, 28],
    // s = 5: 2·0.01·√(h/5) ≥ 0.10536 ⇔ h/5 ≥ 27.75 ⇔ h = 140
    [0.01, -0.1, 5, 140],
    // +10%: 2·0.01·√h ≥ ln(1.1) = 0.09531 ⇔ h ≥ 22.71
    [0.01, 0.1, 1, 23],
    // already inside at the smallest horizon (5 days)
    [0.01, -0.02, 1, 5],
    [0.01, 0, 5, 5],
    // never inside: capped at 1260
    [0.01, -0.99, 1, 1260],
  ])('σ %p, magnitude %p, sampling %p → %p days', (sigma, magnitude, sampling, horizon) => {
    const h = searchHorizon(sigma, magnitude, sampling);
    expect(h).toBe(horizon);
    if (h < 1260) {
      const [lo, hi] = dynamicRange(sigma, h, sampling);
      expect(lo <= magnitude && magnitude <= hi).toBe(true);
    }
    if (h > 5) {
      const [lo, hi] = dynamicRange(sigma, h - sampling, sampling);
      expect(lo <= magnitude && magnitude <= hi).toBe(false);
    }
  });
});
