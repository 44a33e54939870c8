/**
 * Exactness of the decomposition: every ev, cvar_neg, cvar_pos and mctr array sums, over all
 * securities and projections, to the portfolio figure (computed from the pass-1 portfolio P&L) to
 * 1e-9 relative. This also proves pass 2 regenerated exactly the paths pass 1 ranked.
 */
import { prepareRiskAttribution, runRiskAttribution } from '../../calc/risk-attribution';
import fc from 'fast-check';
import { psdRoot } from '../../calc/linear-algebra';
import { seedFromNumber } from '../../calc/random';
import { positionComponents, type Scenario, simulate, tailCount, varBand } from '../../calc/simulation';
import { prepareStressTest, runStressTest, type StressTestRequest } from '../../calc/stress-test';
import type { ProjectionValue } from '../../calc/calculation-request';
import { fixtureMarket } from './support/fixture-market';

const { source, date, securities } = fixtureMarket();
const projection = ['IND:SPX', 'IND:F2'];
const paths = 20_000;

const sumOf = (rows: { values: ProjectionValue[] }[]) =>
  rows.reduce((total, row) => total + row.values.reduce((s, v) => s + v.value, 0), 0);
const expectRelative = (actual: number, expected: number) =>
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(1e-9 * Math.abs(expected));

describe('stress test arrays sum to the portfolio figures', () => {
  test.each([
    ['a projection', 'IND:SPX', -0.1, 5],
    ['a held stock with gaps', 'BBB', -0.15, 20],
    ['a security not held', 'EEE', 0.05, null],
  ])('shock on %s', (_, shock, magnitude, horizon) => {
    const request: StressTestRequest = {
      securities,
      date,
      projection,
      shock,
      magnitude,
      horizon,
      confidence: '90%',
    };
    const prepared = prepareStressTest(request, source, { paths });
    const sim = simulate(prepared.scenario, prepared.simulation);
    const result = prepared.finish(sim);
    expect(result.unmapped_tickers).toEqual(['LATE', 'NOPE']);
    expect(result.results.map((r) => r.id)).toEqual(['a-long', 'b', 'a-short', 'c-short', 'spx', 'd']);
    for (const r of result.results) {
      expect(r.ev.map((v) => v.projection)).toEqual(['IND:SPX', 'IND:F2', 'residual']);
    }
    expect(sim.cvarNeg.count).toBe(tailCount(0.1, paths));
    expect(sim.cvarPos.count).toBe(2000);
    expectRelative(sumOf(result.results.map((r) => ({ values: r.ev }))), sim.ev.portfolio / prepared.nlv);
    expectRelative(
      sumOf(result.results.map((r) => ({ values: r.cvar_neg }))),
      sim.cvarNeg.portfolio / prepared.nlv,
    );
    expectRelative(
      sumOf(result.results.map((r) => ({ values: r.cvar_pos }))),
      sim.cvarPos.portfolio / prepared.nlv,
    );
    expect(sim.cvarNeg.portfolio).toBeLessThan(sim.ev.portfolio);
    expect(sim.ev.portfolio).toBeLessThan(sim.cvarPos.portfolio);
    // The held shocked security moves by exactly the shock on every path.
    if (shock === 'BBB') {
      const b = result.results.find((r) => r.id === 'b')!;
      for (const values of [b.ev, b.cvar_neg, b.cvar_pos]) {
        expectRelative(
          values.reduce((s, v) => s + v.value, 0),
          (50 * 80 * magnitude) / prepared.nlv,
        );
      }
    }
  });

  test('the runStressTest wrapper gives the same object as prepare → simulate → finish', () => {
    const request: StressTestRequest = { securities, date, projection, magnitude: -0.05 };
    const prepared = prepareStressTest(request, source, { paths: 2000 });
    expect(runStressTest(request, source, { paths: 2000 })).toEqual(
      prepared.finish(simulate(prepared.scenario, prepared.simulation)),
    );
  });
});

describe('risk attribution mctr arrays sum to the portfolio figures', () => {
  test.each(['cvar', 'var'] as const)('%s', (riskMeasure) => {
    const request = { securities, date, projection, risk_measure: riskMeasure, horizon: 20 };
    const prepared = prepareRiskAttribution(request, source, { paths });
    if (prepared.kind !== 'simulation') throw new Error('expected a simulation');
    const sim = simulate(prepared.scenario, prepared.simulation);
    const result = prepared.finish(sim);
    expect(result.unmapped_tickers).toEqual(['LATE', 'NOPE']);
    const set = prepared.pick(sim);
    expect(set.count).toBe(
      riskMeasure === 'var' ? 2 * Math.floor(0.005 * paths) + 1 : tailCount(0.05, paths),
    );
    expectRelative(sumOf(result.results.map((r) => ({ values: r.mctr }))), set.portfolio / prepared.nlv);
    expect(runRiskAttribution(request, source, { paths })).toEqual(result);
  });

  test('var: the band of 2·floor(0.005·P)+1 ranks is centred on the VaR rank and kept inside the paths', () => {
    expect(varBand(0.05, 100_000)).toEqual({ start: 4999 - 500, count: 1001 });
    expect(varBand(0.01, 1000)).toEqual({ start: 4, count: 11 });
    expect(varBand(0.001, 1000)).toEqual({ start: 0, count: 11 });
    expect(varBand(0.05, 100)).toEqual({ start: 4, count: 1 });
  });

  test('vol', () => {
    const request = { securities, date, projection, risk_measure: 'vol' as const, sampling: 5 as const };
    const prepared = prepareRiskAttribution(request, source);
    if (prepared.kind !== 'analytic') throw new Error('expected analytic');
    expectRelative(sumOf(prepared.result.results.map((r) => ({ values: r.mctr }))), prepared.portfolio);
    expect(prepared.portfolio).toBeGreaterThan(0);
    expect(runRiskAttribution(request, source)).toEqual(prepared.result);
  });
});

describe('decomposition invariant (property)', () => {
  test("any scenario: components of every set sum to the set's portfolio figure", () => {
    const real = (min: number, max: number) => fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(
          fc.record({
            exposure: real(-5, 5),
            residualSd: real(0, 0.1),
            beta: fc.array(real(-2, 2), { minLength: 4, maxLength: 4 }),
          }),
          {
            minLength: 1,
            maxLength: 6,
          },
        ),
        fc.array(real(-0.1, 0.1), { minLength: 16, maxLength: 16 }),
        fc.option(real(-0.3, 0.3), { nil: undefined }),
        fc.constantFrom(0.01, 0.05, 0.158655),
        fc.integer({ min: 0, max: 1000 }),
        (k, drivers, factorRoot, pinnedShock, tail, seed) => {
          const root = Float64Array.from({ length: k * k }, (_, i) => factorRoot[i]!);
          const covariance = new Float64Array(k * k);
          for (let i = 0; i < k; i++)
            for (let j = 0; j < k; j++)
              for (let l = 0; l < k; l++) covariance[i * k + j]! += root[i * k + l]! * root[j * k + l]!;
          const scenario: Scenario = {
            k,
            regimes: [
              {
                probability: 0.2,
                mean: new Float64Array(k).fill(-0.01),
                root: psdRoot(
                  covariance.map((c) => 4 * c),
                  k,
                ),
              },
              { probability: 0.8, mean: new Float64Array(k), root },
            ],
            beta: Float64Array.from(drivers.flatMap((d) => d.beta.slice(0, k))),
            residualSd: Float64Array.from(drivers, (d) => d.residualSd),
            exposure: Float64Array.from(drivers, (d) => d.exposure),
            pinned: pinnedShock === undefined ? null : { driver: 0, logReturn: pinnedShock },
          };
          const positions = drivers.flatMap((d, i) => [
            { driver: i, exposure: d.exposure / 2 },
            { driver: i, exposure: d.exposure / 2 },
          ]);
          const nlv = 3;
          const sim = simulate(scenario, { paths: 400, seed: seedFromNumber(seed), tail, varBand: true });
          for (const set of [sim.ev, sim.cvarNeg, sim.cvarPos, sim.var!]) {
            const values = positionComponents(scenario, set, positions, nlv);
            let total = 0;
            let magnitude = 0;
            for (const v of values) {
              total += v;
              magnitude += Math.abs(v);
            }
            expect(Math.abs(total - set.portfolio / nlv)).toBeLessThanOrEqual(
              1e-12 * (Math.abs(set.portfolio / nlv) + magnitude) + 1e-300,
            );
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
