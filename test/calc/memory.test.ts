/**
 * Scale and memory: the reference simulation keeps O(paths + securities × projections), never an
 * array of paths × securities. Checked two ways: every array simulate() allocates is reported through
 * onAllocate, also for a run in a fresh process whose paths × securities array alone would take
 * 96 MB. At full size (100,000 × 3000 × 15) the same probe is the documented check:
 *   node --import tsx test/calc/support/memory-probe.ts 100000 3000 15
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { FactorModel } from '../../calc/estimation';
import { seedFromNumber } from '../../calc/random';
import { simulate, unconditionalScenario } from '../../calc/simulation';

const ROOT = path.resolve(__dirname, '../..');

test('every allocation is O(paths) or O(securities × projections)', () => {
  const [paths, drivers, k] = [300, 3000, 15];
  const calm = new Float64Array(k * k).map((_, i) => (i % (k + 1) === 0 ? 1e-4 : 3e-5));
  const model: FactorModel = {
    k,
    calm,
    distress: calm,
    distressProbability: 0.1,
    beta: new Float64Array(drivers * k).fill(0.1),
    residualVariance: new Float64Array(drivers).fill(1e-4),
  };
  const scenario = unconditionalScenario(model, new Float64Array(drivers).fill(1), 5);
  const allocations: { what: string; elements: number }[] = [];
  simulate(scenario, {
    paths,
    seed: seedFromNumber(3),
    tail: 0.05,
    varBand: true,
    onAllocate: (what, elements) => allocations.push({ what, elements }),
  });
  const bound = Math.max(paths, drivers * (k + 1));
  for (const { what, elements } of allocations) {
    expect({ what, ok: elements <= bound }).toEqual({ what, ok: true });
  }
  const total = allocations.reduce((s, a) => s + a.elements, 0);
  // Four accumulators of D×(k+1), three per-path arrays, and O(D + k) scratch.
  expect(total).toBeLessThanOrEqual(4 * drivers * (k + 1) + 3 * paths + 4 * drivers + 2 * k + 8);
  expect(total).toBeLessThan(paths * drivers);
});

// Peak RSS is a benchmark figure (bench/), not a test assertion: it depends on the allocator, the
// V8 heap sizing and the machine's load (a fresh CI clone saw a 200 MiB heap reservation). The
// probe still runs the full shape in a separate process and checks what the code allocates.
test('4000 paths × 3000 securities × 15 projections allocate nothing of paths × securities', () => {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, 'support/memory-probe.ts'), '4000', '3000', '15'],
    { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
  );
  const probe = JSON.parse(out) as { peakGrowthBytes: number; largestAllocation: number };
  expect(probe.largestAllocation).toBe(3000 * 16);
  expect(probe.largestAllocation).toBeLessThan(4000 * 3000);
});
