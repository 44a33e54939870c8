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
  // Ranks in the (L, path index) order without sorting indices by a comparator (≈ 5× slower at
  // 100,000 paths): a native numeric sort of the values gives each set's boundary values, and one
  // scan in path order hands out the ranks of tied values by ascending index.
  note('rank order', paths);
  const sorted = Float64Array.from(loss).sort();
  const m = tailCount(tail, paths);
  note('set flags', paths);
  const flags = new Uint8Array(paths);
  markRanks(loss, sorted, 0, m, NEG, flags);
  markRanks(loss, sorted, paths - m, paths, POS, flags);
  const band = withBand ? varBand(tail, paths) : null;
  if (band) markRanks(loss, sorted, band.start, band.start + band.count, BAND, flags);
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

/** Number of values in ascending `sorted` strictly below v. */
function countBelow(sorted: Float64Array, v: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Sets `bit` on the paths whose rank in the order (L, path index) lies in [first, end): every path
 * strictly between the boundary values, and among paths tied on a boundary value, the ones whose
 * rank (values below, plus tied paths of lower index) falls inside.
 */
function markRanks(
  loss: Float64Array,
  sorted: Float64Array,
  first: number,
  end: number,
  bit: number,
  flags: Uint8Array,
): void {
  const low = sorted[first]!;
  const high = sorted[end - 1]!;
  let lowRank = countBelow(sorted, low);
  let highRank = countBelow(sorted, high);
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
