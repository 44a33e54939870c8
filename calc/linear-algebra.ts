/**
 * Small dense symmetric linear algebra for the k×k factor matrices (k ≤ 15). Matrices are row-major
 * Float64Arrays. Everything goes through one deterministic Jacobi eigen-decomposition: it is exact
 * enough (backward stable), handles singular and indefinite matrices the same way, and gives both the
 * pseudo-inverse used for betas and the square root used to sample factors.
 */

export interface SymmetricEigen {
  /** Eigenvalues, in the order the rotations leave them (not sorted). */
  values: Float64Array;
  /** n×n row-major; column j is the unit eigenvector of values[j]. */
  vectors: Float64Array;
}

const MAX_SWEEPS = 100;

/** Cyclic Jacobi rotations until the off-diagonal part is negligible against the diagonal. */
export function symmetricEigen(matrix: Float64Array, n: number): SymmetricEigen {
  const a = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) a[i * n + j] = 0.5 * (matrix[i * n + j]! + matrix[j * n + i]!);
  }
  const v = new Float64Array(n * n);
  for (let i = 0; i < n; i++) v[i * n + i] = 1;

  for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
    let off = 0;
    let diag = 0;
    for (let i = 0; i < n; i++) {
      diag += a[i * n + i]! * a[i * n + i]!;
      for (let j = i + 1; j < n; j++) off += a[i * n + j]! * a[i * n + j]!;
    }
    if (off === 0 || off <= 1e-32 * diag) break;
    for (let p = 0; p < n - 1; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = a[p * n + q]!;
        if (apq === 0) continue;
        const theta = (a[q * n + q]! - a[p * n + p]!) / (2 * apq);
        // The smaller root of t² + 2tθ − 1 = 0 keeps the rotation angle ≤ π/4 (stable).
        const t = (theta >= 0 ? 1 : -1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = a[k * n + p]!;
          const akq = a[k * n + q]!;
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = a[p * n + k]!;
          const aqk = a[q * n + k]!;
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = v[k * n + p]!;
          const vkq = v[k * n + q]!;
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  const values = new Float64Array(n);
  for (let i = 0; i < n; i++) values[i] = a[i * n + i]!;
  return { values, vectors: v };
}

/**
 * A with A·Aᵀ = the positive part of `cov` (negative eigenvalues, which pairwise estimates over
 * missing data can produce, are clipped to zero). Used to draw f = mean + A·z.
 */
export function psdRoot(cov: Float64Array, n: number): Float64Array {
  const { values, vectors } = symmetricEigen(cov, n);
  const root = new Float64Array(n * n);
  for (let j = 0; j < n; j++) {
    const scale = Math.sqrt(Math.max(values[j]!, 0));
    for (let i = 0; i < n; i++) root[i * n + j] = vectors[i * n + j]! * scale;
  }
  return root;
}

/** V·diag(max(λ, 0))·Vᵀ: the nearest positive semi-definite matrix in the Frobenius norm. */
export function clipToPsd(matrix: Float64Array, n: number): { matrix: Float64Array; clipped: boolean } {
  const { values, vectors } = symmetricEigen(matrix, n);
  if (values.every((value) => value >= 0)) return { matrix: Float64Array.from(matrix), clipped: false };
  const out = new Float64Array(n * n);
  for (let j = 0; j < n; j++) {
    const lambda = Math.max(values[j]!, 0);
    if (lambda === 0) continue;
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < n; c++) out[r * n + c]! += vectors[r * n + j]! * lambda * vectors[c * n + j]!;
    }
  }
  return { matrix: out, clipped: true };
}

/**
 * Moore-Penrose pseudo-inverse of a symmetric matrix, keeping only eigenvalues above
 * `relativeTolerance` × the largest one. On a well-conditioned matrix it is the inverse.
 */
export function symmetricPseudoInverse(
  matrix: Float64Array,
  n: number,
  relativeTolerance: number,
): Float64Array {
  const { values, vectors } = symmetricEigen(matrix, n);
  let largest = 0;
  for (const value of values) largest = Math.max(largest, value);
  const cutoff = relativeTolerance * largest;
  const out = new Float64Array(n * n);
  for (let j = 0; j < n; j++) {
    const lambda = values[j]!;
    if (!(lambda > cutoff)) continue;
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < n; c++) out[r * n + c]! += (vectors[r * n + j]! * vectors[c * n + j]!) / lambda;
    }
  }
  return out;
}

/** yᵀ·M·y for a row-major n×n M. */
export function quadraticForm(m: Float64Array, y: ArrayLike<number>, n: number): number {
  let total = 0;
  for (let i = 0; i < n; i++) {
    let row = 0;
    for (let j = 0; j < n; j++) row += m[i * n + j]! * y[j]!;
    total += y[i]! * row;
  }
  return total;
}

/** M·y for a row-major n×n M. */
export function matrixVector(m: Float64Array, y: ArrayLike<number>, n: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let row = 0;
    for (let j = 0; j < n; j++) row += m[i * n + j]! * y[j]!;
    out[i] = row;
  }
  return out;
}
