/**
 * A simulation backend: the reference `simulate` of `calc/simulation.ts` behind one asynchronous
 * interface (a thread pool or a GPU queue cannot answer synchronously), with the same inputs and
 * the same `SimulationResult`, so its result plugs into `prepareStressTest(...).finish` and
 * `prepareRiskAttribution(...).finish` unchanged.
 */
import type { Scenario, SimulationOptions, SimulationResult } from '../simulation';

export type BackendName = 'reference' | 'typed' | 'threads' | 'gpujs';

export interface SimulationBackend {
  readonly name: BackendName;
  /** Details for the health check and benchmark (thread count, gpu.js mode). */
  readonly detail: string;
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
