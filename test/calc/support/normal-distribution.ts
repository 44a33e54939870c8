import { inverseNormalCdf } from '../../../calc/random';

export const normalPdf = (z: number): number => Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
export const normalQuantile = inverseNormalCdf;

/**
 * Φ(x) to ~1e-15: the Numerical Recipes erfc fit (|error| < 1.2e-7) refined by Newton steps on
 * Φ⁻¹, which AS241 gives to 1e-16.
 */
export function normalCdf(x: number): number {
  const u = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * u);
  const poly =
    -1.26551223 +
    t *
      (1.00002368 +
        t *
          (0.37409196 +
            t *
              (0.09678418 +
                t *
                  (-0.18628806 +
                    t *
                      (0.27886807 +
                        t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  const erfc = t * Math.exp(-u * u + poly);
  let p = x >= 0 ? 1 - erfc / 2 : erfc / 2;
  for (let i = 0; i < 4; i++) p -= (normalQuantile(p) - x) * normalPdf(normalQuantile(p));
  return p;
}

/**
 * Lower tail of N(0, s²) at probability α: threshold q, tail mean (ES), tail variance, and the
 * asymptotic variance of the estimator "mean of the αP smallest of P draws":
 * [Var(L | tail) + (1 − α)(ES − q)²] / (αP).
 */
export function gaussianTail(s: number, alpha: number, paths: number) {
  const z = normalQuantile(alpha);
  const lambda = normalPdf(z) / alpha;
  const q = s * z;
  const es = -s * lambda;
  const tailVariance = s * s * (1 - z * lambda - lambda * lambda);
  const estimatorVariance = (tailVariance + (1 - alpha) * (es - q) ** 2) / (alpha * paths);
  return { q, es, tailVariance, estimatorVariance };
}
