import { performance } from 'node:perf_hooks';
import type { SimulationBackend } from '../../calc';
import { chooseBackend, createBackend } from '../../calc/backends/choose';
import type { CalcBackendSetting } from '../config';

/**
 * The simulation backend a process runs its calculations on, and how it was picked. The API and
 * worker processes each hold one for their lifetime; the health check and logs report it.
 */
export interface SimulationEngine {
  readonly backend: SimulationBackend;
  /** `probe`: CALC_BACKEND=auto timed the candidates; `configured`: CALC_BACKEND named it. */
  readonly chosenBy: 'probe' | 'configured';
  /** The probe's best-of-two milliseconds per candidate (or why it was skipped); empty when configured. */
  readonly probe: Readonly<Record<string, number | string>>;
}

/** What the health check shows of it. */
export function describeSimulationEngine(engine: SimulationEngine) {
  return {
    name: engine.backend.name,
    detail: engine.backend.detail,
    chosen_by: engine.chosenBy,
    probe_ms: Object.fromEntries(
      Object.entries(engine.probe).map(([name, value]) => [
        name,
        typeof value === 'number' ? Math.round(value * 100) / 100 : value,
      ]),
    ),
  };
}

/**
 * Starts the backend CALC_BACKEND asks for. `auto` runs the start-up probe (a fixed 200-security,
 * 8192-path case, about a second on 2 cores) and keeps the fastest of typed, threads and gpujs; the
 * others are closed. A named backend that fails to start stops start-up: the operator asked for it.
 */
export async function startSimulationEngine(settings: {
  calcBackend: CalcBackendSetting;
  calcThreads: number;
}): Promise<SimulationEngine> {
  if (settings.calcBackend === 'auto') {
    const { backend, timings } = await chooseBackend({
      threads: settings.calcThreads,
      clock: () => performance.now(),
    });
    return { backend, chosenBy: 'probe', probe: timings };
  }
  const backend = await createBackend(settings.calcBackend, { threads: settings.calcThreads });
  return { backend, chosenBy: 'configured', probe: {} };
}
