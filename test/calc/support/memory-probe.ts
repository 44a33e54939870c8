/**
 * Runs one reference simulation of P paths × D securities × k projections in a fresh process and
 * prints how much its peak resident memory grew, for test/calc/memory.test.ts and as a documented
 * check at full size:
 *   node --import tsx test/calc/support/memory-probe.ts 100000 3000 15
 */
import type { FactorModel } from '../../../calc/estimation';
import { seedFromNumber } from '../../../calc/random';
import { simulate, unconditionalScenario } from '../../../calc/simulation';

const [paths, drivers, k] = process.argv.slice(2).map(Number) as [number, number, number];
const calm = new Float64Array(k * k);
for (let i = 0; i < k; i++) for (let j = 0; j < k; j++) calm[i * k + j] = (i === j ? 1 : 0.3) * 1e-4;
const model: FactorModel = {
  k,
  calm,
  distress: calm.map((c) => c * 4),
  distressProbability: 0.1,
  beta: Float64Array.from({ length: drivers * k }, (_, i) => ((i * 7919) % 17) / 10 - 0.5),
  residualVariance: new Float64Array(drivers).fill(2e-4),
};
const exposure = Float64Array.from({ length: drivers }, (_, d) => 1 + (d % 5));
const scenario = unconditionalScenario(model, exposure, 5);
const allocations: { what: string; elements: number }[] = [];
const before = process.memoryUsage().rss;
const started = performance.now();
const result = simulate(scenario, {
  paths,
  seed: seedFromNumber(1),
  tail: 0.05,
  varBand: true,
  onAllocate: (what, elements) => allocations.push({ what, elements }),
});
const seconds = (performance.now() - started) / 1000;
const peak = process.resourceUsage().maxRSS * 1024;
process.stdout.write(
  JSON.stringify({
    paths,
    drivers,
    k,
    seconds,
    rssBeforeBytes: before,
    peakRssBytes: peak,
    peakGrowthBytes: peak - before,
    largestAllocation: Math.max(...allocations.map((a) => a.elements)),
    cvarNeg: result.cvarNeg.portfolio,
  }) + '\n',
);
