/**
 * The tail sets of the reference (`calc/simulation.ts`), shared by every backend so that all of them
 * rank paths the same way: by (L, path index), each set holding exactly m = ceil(tail·P) paths, plus
 * the optional VaR band. Returns the set bits per path (NEG, POS, BAND of `path-block.ts`).
 */
import { tailCount, varBand } from '../simulation';
import { BAND, NEG, POS } from './path-block';

export interface TailSets {
  readonly m: number;
  readonly band: { readonly start: number; readonly count: number } | null;
  /** Set bits per path, P entries. */
  readonly flags: Uint8Array;
  /** Ascending ids of the paths in any set, and their bits: what pass 2 regenerates. */
  readonly ids: Uint32Array;
  readonly masks: Uint8Array;
}

export function findTailSets(
  loss: Float64Array,
  tail: number,
  withBand: boolean,
  note: (what: string, elements: number) => void = () => {},
): TailSets {
  const paths = loss.length;
  // Ranks in the (L, path index) order without sorting indices by a comparator: the boundary
  // values of each set are order statistics of the values (found by selection on a copy, O(P);
  // a full numeric sort when a value is NaN), and one scan in path order hands out the ranks of
  // tied values by ascending index.
  note('rank order', paths);
  const values = Float64Array.from(loss);
  const m = tailCount(tail, paths);
  note('set flags', paths);
  const flags = new Uint8Array(paths);
  const band = withBand ? varBand(tail, paths) : null;
  const ranks = [0, m - 1, paths - m, paths - 1];
  if (band) ranks.push(band.start, band.start + band.count - 1);
  const at = orderStatistics(values, ranks);
  markRanks(loss, at, 0, m, NEG, flags);
  markRanks(loss, at, paths - m, paths, POS, flags);
  if (band) markRanks(loss, at, band.start, band.start + band.count, BAND, flags);
  let selected = 0;
  for (let p = 0; p < paths; p++) if (flags[p] !== 0) selected++;
  note('tail path ids', selected);
  note('tail path masks', selected);
  const ids = new Uint32Array(selected);
  const masks = new Uint8Array(selected);
  for (let p = 0, n = 0; p < paths; p++) {
    if (flags[p] === 0) continue;
    ids[n] = p;
    masks[n++] = flags[p]!;
  }
  return { m, band, flags, ids, masks };
}

/**
 * The values of ascending rank `ranks` (indices into the sorted order, as Float64Array's numeric
 * sort puts them), by quickselect on `values`, which it reorders. A NaN sorts last there; with one
 * present the values are sorted instead.
 */
export function orderStatistics(values: Float64Array, ranks: number[]): Map<number, number> {
  const out = new Map<number, number>();
  if (values.some(Number.isNaN)) {
    values.sort();
    for (const r of ranks) out.set(r, values[r]!);
    return out;
  }
  // Ascending ranks, each selected within the part above the previous one.
  let lo = 0;
  for (const r of [...new Set(ranks)].sort((a, b) => a - b)) {
    select(values, r, lo, values.length - 1);
    out.set(r, values[r]!);
    lo = r;
  }
  return out;
}

/** Reorders a[lo..hi] so that a[k] holds the value of rank k there (Hoare partition, median of 3). */
function select(a: Float64Array, k: number, lo: number, hi: number): void {
  while (hi > lo) {
    const mid = (lo + hi) >>> 1;
    // Median of three as the pivot.
    let x = a[lo]!;
    let y = a[mid]!;
    const z = a[hi]!;
    if (y < x) [x, y] = [y, x];
    const pivot = z < x ? x : z > y ? y : z;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return;
  }
}

/** Number of values strictly below v. */
function countBelow(values: Float64Array, v: number): number {
  let n = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! < v) n++;
  return n;
}

/**
 * Sets `bit` on the paths whose rank in the order (L, path index) lies in [first, end): every path
 * strictly between the boundary values, and among paths tied on a boundary value, the ones whose
 * rank (values below, plus tied paths of lower index) falls inside.
 */
function markRanks(
  loss: Float64Array,
  at: Map<number, number>,
  first: number,
  end: number,
  bit: number,
  flags: Uint8Array,
): void {
  const low = at.get(first)!;
  const high = at.get(end - 1)!;
  let lowRank = countBelow(loss, low);
  let highRank = countBelow(loss, high);
  for (let p = 0; p < loss.length; p++) {
    const v = loss[p]!;
    if (!(v >= low && v <= high)) continue;
    if (v === low) {
      const rank = lowRank++;
      if (rank >= first && rank < end) flags[p]! |= bit;
    } else if (v === high) {
      if (highRank++ < end) flags[p]! |= bit;
    } else {
      flags[p]! |= bit;
    }
  }
}
