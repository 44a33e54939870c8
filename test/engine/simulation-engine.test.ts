import {
  describeSimulationEngine,
  startSimulationEngine,
  type SimulationEngine,
} from '../../engine/calculations/simulation-engine';
import type { Database } from '../../engine/platform/database';
import { createTestDatabase } from '../support/test-database';

/** §5: one installation computes with one backend, whichever process (API, worker) starts first. */
describe('the installation’s simulation backend, shared through PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  const started: SimulationEngine[] = [];
  beforeEach(async () => {
    database = await createTestDatabase();
    db = database.db;
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((engine) => engine.backend.close()));
    await database.drop();
  });
  const start = async (calcBackend: 'auto' | 'reference' | 'typed') => {
    const engine = await startSimulationEngine({ calcBackend, calcThreads: 2 }, db);
    started.push(engine);
    return engine;
  };

  test('two processes starting together probe once and compute with the same backend', async () => {
    const [api, worker] = await Promise.all([start('auto'), start('auto')]);
    expect(worker.backend.name).toBe(api.backend.name);
    expect(['typed', 'threads', 'wasm', 'gpujs']).toContain(api.backend.name);
    expect(worker.probe).toEqual(api.probe);
    expect(worker.chosenAt).toBe(api.chosenAt);
    const rows = await db('calculation_backend').select('name', 'probe_ms');
    expect(rows).toEqual([{ name: api.backend.name, probe_ms: api.probe }]);
    // The health check reports the choice and when it was made.
    expect(describeSimulationEngine(worker)).toMatchObject({
      name: api.backend.name,
      chosen_by: 'probe',
      chosen_at: api.chosenAt,
    });
  });

  test('a later process starts the recorded backend without probing', async () => {
    const chosenAt = new Date('2026-11-01T12:00:00Z');
    await db('calculation_backend').insert({
      id: 1,
      name: 'reference',
      probe_ms: JSON.stringify({ reference: 1, typed: 'failed: recorded for the test' }),
      chosen_at: chosenAt,
    });
    const engine = await start('auto');
    expect(engine.backend.name).toBe('reference');
    expect(engine).toMatchObject({
      chosenBy: 'probe',
      chosenAt: chosenAt.toISOString(),
      probe: { reference: 1, typed: 'failed: recorded for the test' },
    });
  });

  test('CALC_BACKEND naming a backend overrides, and records nothing', async () => {
    const engine = await start('typed');
    expect(engine).toMatchObject({ chosenBy: 'configured', chosenAt: null, probe: {} });
    expect(describeSimulationEngine(engine)).not.toHaveProperty('chosen_at');
    expect(await db('calculation_backend').count({ n: '*' })).toEqual([{ n: 0 }]);
  });
});
