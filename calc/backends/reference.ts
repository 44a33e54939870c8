/** The `reference` backend: the plain TypeScript `simulate`, the oracle every other backend is tested against. */
import { simulate } from '../simulation';
import type { SimulationBackend } from './backend';

export function referenceBackend(): SimulationBackend {
  return {
    name: 'reference',
    detail: 'plain TypeScript, 1 thread',
    simulate: (scenario, options) => Promise.resolve(simulate(scenario, options)),
    close: () => Promise.resolve(),
  };
}
