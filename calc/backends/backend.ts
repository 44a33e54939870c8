/**
 * A simulation backend: the reference `simulate` of `calc/simulation.ts` behind one asynchronous
 * interface (a thread pool or a GPU queue cannot answer synchronously), with the same inputs and
 * the same `SimulationResult`, so its result plugs into `prepareStressTest(...).finish` and
 * `prepareRiskAttribution(...).finish` unchanged.
 */
import type { TailSets } from '../kernels/tail-sets';
import type { Scenario, SimulationOptions, SimulationResult } from '../simulation';
import type { GpuAdapterInfo } from './webgpu-node';

export type BackendName = 'reference' | 'typed' | 'threads' | 'wasm' | 'gpujs';

export interface SimulationBackend {
  readonly name: BackendName;
  /** Details for the health check and benchmark (thread count, gpu.js mode). */
  readonly detail: string;
  /** The GPU the backend computes on (gpujs in webgpu mode); absent on the CPU. */
  readonly adapter?: GpuAdapterInfo;
  simulate(scenario: Scenario, options: SimulationOptions): Promise<SimulationResult>;
  /** Releases workers or GPU resources; the backend is unusable afterwards. */
  close(): Promise<void>;
}

/** Means of a set's sums: the reference's final division, in the same order. */
export function pathSetResult(
  count: number,
  sum: number,
  means: Float64Array,
): { count: number; portfolio: number; means: Float64Array } {
  for (let i = 0; i < means.length; i++) means[i]! /= count;
  return { count, portfolio: sum / count, means };
}

export function checkPaths(paths: number): void {
  if (!Number.isInteger(paths) || paths < 1 || paths > 0xffffffff) {
    throw new RangeError(`paths must be an integer in [1, 2^32), got ${paths}.`);
  }
}

/**
 * The result of a two-pass run: each tail set's portfolio total summed over its paths in ascending
 * order (the reference's order), then every set's means. `sums` are the per-driver component sums.
 */
export function twoPassResult(
  paths: number,
  loss: Float64Array,
  evTotal: number,
  sets: TailSets,
  sums: { ev: Float64Array; neg: Float64Array; pos: Float64Array; band: Float64Array },
): SimulationResult {
  let neg = 0;
  let pos = 0;
  let band = 0;
  for (let p = 0; p < paths; p++) {
    const flag = sets.flags[p]!;
    if (flag & 1) neg += loss[p]!;
    if (flag & 2) pos += loss[p]!;
    if (flag & 4) band += loss[p]!;
  }
  return {
    paths,
    tailCount: sets.m,
    ev: pathSetResult(paths, evTotal, sums.ev),
    cvarNeg: pathSetResult(sets.m, neg, sums.neg),
    cvarPos: pathSetResult(sets.m, pos, sums.pos),
    var: sets.band ? pathSetResult(sets.band.count, band, sums.band) : null,
  };
}
