/**
 * The methodology's estimates computed the slow, obvious way, written independently of calc/: weights
 * as 2^(−age/H), plain double loops over observations, the dense factor covariance and a Gaussian
 * elimination solve. The exactness tests compare calc/ against these to 1e-10.
 */

export function naiveWeights(length: number, halfLifeMonths: number, sampling: number): number[] {
  const h = (halfLifeMonths * 21) / sampling;
  return Array.from({ length }, (_, t) => (halfLifeMonths === 0 ? 1 : 2 ** (-(length - 1 - t) / h)));
}

export function naiveVariance(r: ArrayLike<number>, w: number[]): number {
  let num = 0;
  let den = 0;
  for (let t = 0; t < r.length; t++) {
    if (Number.isNaN(r[t])) continue;
    num += w[t]! * r[t]! ** 2;
    den += w[t]!;
  }
  return num / den;
}

export function naiveCorrelation(a: ArrayLike<number>, b: ArrayLike<number>, w: number[]): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let t = 0; t < a.length; t++) {
    if (Number.isNaN(a[t]) || Number.isNaN(b[t])) continue;
    ab += w[t]! * a[t]! * b[t]!;
    aa += w[t]! * a[t]! ** 2;
    bb += w[t]! * b[t]! ** 2;
  }
  return ab / Math.sqrt(aa * bb);
}

/** Solves A·x = b by Gaussian elimination with partial pivoting. */
export function solve(matrix: number[][], rhs: number[]): number[] {
  const n = rhs.length;
  const a = matrix.map((row, i) => [...row, rhs[i]!]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(a[r]![col]!) > Math.abs(a[pivot]![col]!)) pivot = r;
    [a[col], a[pivot]] = [a[pivot]!, a[col]!];
    for (let r = col + 1; r < n; r++) {
      const factor = a[r]![col]! / a[col]![col]!;
      for (let c = col; c <= n; c++) a[r]![c]! -= factor * a[col]![c]!;
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) {
    let sum = a[r]![n]!;
    for (let c = r + 1; c < n; c++) sum -= a[r]![c]! * x[c]!;
    x[r] = sum / a[r]![r]!;
  }
  return x;
}

export interface NaiveModel {
  factorVol: number[];
  factorCorrelation: number[][];
  factorCovariance: number[][];
  betas: number[][];
  residualVariance: number[];
  securityVol: number[];
}

/** σ, ρ, Σ_ff = ρσσ, β = Σ_ff⁻¹Σ_fi, r = max(σ² − βᵀΣ_ffβ, 0), all by direct loops. */
export function naiveModel(
  factors: ArrayLike<number>[],
  securities: ArrayLike<number>[],
  volatilityHalfLife: number,
  correlationHalfLife: number,
  sampling: number,
): NaiveModel {
  const length = factors[0]!.length;
  const wv = naiveWeights(length, volatilityHalfLife, sampling);
  const wc = naiveWeights(length, correlationHalfLife, sampling);
  const factorVol = factors.map((f) => Math.sqrt(naiveVariance(f, wv)));
  const factorCorrelation = factors.map((a, i) =>
    factors.map((b, j) => (i === j ? 1 : naiveCorrelation(a, b, wc))),
  );
  const factorCovariance = factorCorrelation.map((row, i) =>
    row.map((rho, j) => rho * factorVol[i]! * factorVol[j]!),
  );
  const securityVol = securities.map((r) => Math.sqrt(naiveVariance(r, wv)));
  const betas = securities.map((r, s) => {
    const cross = factors.map((f, j) => naiveCorrelation(f, r, wc) * factorVol[j]! * securityVol[s]!);
    return solve(factorCovariance, cross);
  });
  const residualVariance = betas.map((beta, s) => {
    let explained = 0;
    for (let i = 0; i < beta.length; i++) {
      for (let j = 0; j < beta.length; j++) explained += beta[i]! * factorCovariance[i]![j]! * beta[j]!;
    }
    return Math.max(securityVol[s]! ** 2 - explained, 0);
  });
  return { factorVol, factorCorrelation, factorCovariance, betas, residualVariance, securityVol };
}
