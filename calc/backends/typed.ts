/**
 * The `typed` backend: the reference two-pass Monte Carlo on the blocked typed-array kernel of
 * `calc/kernels/path-block.ts`, single-threaded. It reproduces `simulate` bit for bit (same Philox
 * stream, same operations, same order of every f64 sum; see the kernel's header).
 */
import { BLOCK_PATHS, newSetSums, PathBlockKernel } from '../kernels/path-block';
import { lineCount } from '../kernels/line-pricing';
import { findTailSets } from '../kernels/tail-sets';
import type { Scenario, SimulationOptions, SimulationResult } from '../simulation';
import { checkPaths, type SimulationBackend, twoPassResult } from './backend';

export function simulateTyped(scenario: Scenario, options: SimulationOptions): SimulationResult {
  const { paths } = options;
  checkPaths(paths);
  const note = options.onAllocate ?? (() => {});
  const { k } = scenario;
  const drivers = lineCount(scenario);
  const width = k + 1;
  const block = Math.min(BLOCK_PATHS, paths);
  // The kernel's scratch: f (block × k), residual normals (4 × block), L (block), factor normals (k).
  note('block factors', block * k);
  note('block residual normals', 4 * block);
  note('block P&L', block);
  const kernel = new PathBlockKernel(scenario, options.seed, block);
  for (const set of ['ev', 'cvar_neg', 'cvar_pos']) note(`${set} sums`, drivers * width);
  note('var sums', options.varBand ? drivers * width : 0);
  const sums = newSetSums(drivers, width, options.varBand === true);

  // Pass 1: every path's L and the ev sums, block by block in ascending path order.
  note('portfolio P&L per path', paths);
  const loss = new Float64Array(paths);
  let evTotal = 0;
  for (let first = 0; first < paths; first += block) {
    const count = Math.min(block, paths - first);
    kernel.run(first, count, null, null, sums);
    for (let i = 0; i < count; i++) {
      loss[first + i] = kernel.loss[i]!;
      evTotal += kernel.loss[i]!;
    }
  }

  const sets = findTailSets(loss, options.tail, options.varBand === true, note);
  // Pass 2: the tail paths only, ascending, so each set's sums see the reference's order.
  const { ids, masks } = sets;
  for (let first = 0; first < ids.length; first += block) {
    const count = Math.min(block, ids.length - first);
    kernel.run(first, count, ids, masks.subarray(first, first + count), sums);
  }
  return twoPassResult(paths, loss, evTotal, sets, sums);
}

export function typedBackend(): SimulationBackend {
  return {
    name: 'typed',
    detail: `typed arrays, ${BLOCK_PATHS}-path blocks, 1 thread`,
    simulate: (scenario, options) => Promise.resolve(simulateTyped(scenario, options)),
    close: () => Promise.resolve(),
  };
}
