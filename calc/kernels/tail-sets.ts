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
  note('rank order', paths);
  const order = new Uint32Array(paths);
  for (let p = 0; p < paths; p++) order[p] = p;
  order.sort((a, b) => loss[a]! - loss[b]! || a - b);
  const m = tailCount(tail, paths);
  note('set flags', paths);
  const flags = new Uint8Array(paths);
  for (let i = 0; i < m; i++) {
    flags[order[i]!]! |= NEG;
    flags[order[paths - 1 - i]!]! |= POS;
  }
  const band = withBand ? varBand(tail, paths) : null;
  if (band) for (let i = band.start; i < band.start + band.count; i++) flags[order[i]!]! |= BAND;
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
