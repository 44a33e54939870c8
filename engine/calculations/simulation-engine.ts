import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { SimulationBackend } from '../../calc';
import { chooseBackend, createBackend } from '../../calc/backends/choose';
import type { BackendName } from '../../calc/backends/backend';
import { vulkanDriverManifests, vulkanSearchPath } from '../../calc/backends/webgpu-node';
import type { CalcBackendSetting } from '../platform/config';
import type { Database } from '../platform/database';

/**
 * The simulation backend a process runs its calculations on, and how it was picked. The API and
 * worker processes each hold one for their lifetime; the health check and logs report it.
 */
export interface SimulationEngine {
  readonly backend: SimulationBackend;
  /**
   * `probe`: CALC_BACKEND=auto timed the candidates (in this process or, recorded in the database,
   * in the installation's first process); `configured`: CALC_BACKEND named it.
   */
  readonly chosenBy: 'probe' | 'configured';
  /** The probe's best-of-two milliseconds per candidate (or why it was skipped); empty when configured. */
  readonly probe: Readonly<Record<string, number | string>>;
  /** When the installation's probe chose the backend (ISO 8601); null when configured or unrecorded. */
  readonly chosenAt: string | null;
}

/** What the health check shows of it. */
export function describeSimulationEngine(engine: SimulationEngine) {
  return {
    name: engine.backend.name,
    detail: engine.backend.detail,
    ...(engine.backend.adapter ? { gpu_adapter: engine.backend.adapter } : {}),
    chosen_by: engine.chosenBy,
    ...(engine.chosenAt === null ? {} : { chosen_at: engine.chosenAt }),
    probe_ms: Object.fromEntries(
      Object.entries(engine.probe).map(([name, value]) => [
        name,
        typeof value === 'number' ? Math.round(value * 100) / 100 : value,
      ]),
    ),
  };
}

/** Arbitrary constant naming the advisory lock under which one process probes for the installation. */
const PROBE_LOCK_KEY = 728_204_116;

interface RecordedChoice {
  name: BackendName;
  probe_ms: Record<string, number | string>;
  chosen_at: Date;
}

/**
 * Starts the backend CALC_BACKEND asks for. A named backend that fails to start stops start-up: the
 * operator asked for it.
 *
 * `auto` (§5: one installation, one backend). With a database, the probe runs once per installation:
 * the first process to start (API or worker, any replica) takes an advisory lock, times the
 * candidates and records the winner in `calculation_backend`; every other process waits on the lock,
 * then starts the recorded backend without probing. Without one process-local probes, API `typed`
 * and worker `threads` could answer the same request differently. If the recorded backend cannot
 * start here (gpu.js missing on one host) start-up fails rather than silently computing with another
 * one; the operator sets CALC_BACKEND or deletes the row to probe again.
 *
 * Without a database (tests, the in-process app) the probe is this process's own. The probe is a
 * fixed 200-security, 8192-path case, about a second on 2 cores, and keeps the fastest of typed,
 * threads, wasm and gpujs.
 */
export async function startSimulationEngine(
  settings: { calcBackend: CalcBackendSetting; calcThreads: number },
  db: Database | null = null,
): Promise<SimulationEngine> {
  // The Vulkan loader (WebGPU's way to the GPU) may be on LD_LIBRARY_PATH, as on GPU hosts that
  // bring their own; calc/ reads no environment, so the folders are passed in.
  const vulkanDirs = vulkanSearchPath(process.env.LD_LIBRARY_PATH);
  if (settings.calcBackend !== 'auto') {
    const backend = await createBackend(settings.calcBackend, { threads: settings.calcThreads, vulkanDirs });
    return { backend, chosenBy: 'configured', probe: {}, chosenAt: null };
  }
  const vulkanDrivers = vulkanDriverManifests(process.env, os.homedir());
  const probe = () =>
    chooseBackend({
      threads: settings.calcThreads,
      clock: () => performance.now(),
      vulkanDirs,
      vulkanDrivers,
    });
  if (db === null) {
    const { backend, timings } = await probe();
    return { backend, chosenBy: 'probe', probe: timings, chosenAt: null };
  }
  return db.transaction(async (trx) => {
    // Transaction-scoped: released at commit, or if this process dies mid-probe.
    await trx.raw('SELECT pg_advisory_xact_lock(?)', [PROBE_LOCK_KEY]);
    const recorded = (await trx('calculation_backend').where('id', 1).first()) as RecordedChoice | undefined;
    if (recorded) {
      let backend: SimulationBackend;
      try {
        backend = await createBackend(recorded.name, { threads: settings.calcThreads, vulkanDirs });
      } catch (error) {
        throw new Error(
          `The installation computes with the ${recorded.name} backend (probed ${recorded.chosen_at.toISOString()}), ` +
            `which cannot start in this process: ${error instanceof Error ? error.message : String(error)}. ` +
            'Set CALC_BACKEND on every process, or delete the calculation_backend row to probe again.',
          { cause: error },
        );
      }
      return {
        backend,
        chosenBy: 'probe' as const,
        probe: recorded.probe_ms,
        chosenAt: recorded.chosen_at.toISOString(),
      };
    }
    const { backend, timings } = await probe();
    const [row] = (await trx('calculation_backend')
      .insert({ id: 1, name: backend.name, probe_ms: JSON.stringify(timings) })
      .returning(['chosen_at'])) as Array<{ chosen_at: Date }>;
    return { backend, chosenBy: 'probe' as const, probe: timings, chosenAt: row!.chosen_at.toISOString() };
  });
}
