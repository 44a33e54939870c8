/**
 * Forecasts and drift (methodology §13): validation that names the field, the mean shift a forecast
 * puts on its symbol's residual, drift centring every driver on its EWMA mean invariant (checked
 * against weighted means computed from the prices), and the stress test's conditioning with drift.
 */
import { prepareRiskAttribution, runRiskAttribution } from '../../calc/risk-attribution';
import { seedFromNumber } from '../../calc/random';
import { PathGenerator } from '../../calc/simulation';
import { prepareStressTest, runStressTest } from '../../calc/stress-test';
import { fxMarket, lastLogReturns } from './support/fx-market';
import { naiveModel, naiveWeights } from './support/naive-estimates';

const { source, date, row } = fxMarket();
const projection = ['IND:SPX', 'IND:F2'];
const securities = [
  { id: 'a', symbol: 'AAA', quantity: 10 },
  { id: 'b', symbol: 'BBB', quantity: -4 },
];
const returnsOf = (symbol: string) => lastLogReturns(source.get(symbol)!, row, 1260);
const price = (symbol: string) => source.get(symbol)!.values[row]!;
/** Σw·r/Σw with the volatility half-life's weights (2 months). */
function ewmaMean(r: number[]): number {
  const w = naiveWeights(r.length, 2, 1);
  let sum = 0;
  let weight = 0;
  r.forEach((x, t) => {
    sum += w[t]! * x;
    weight += w[t]!;
  });
  return sum / weight;
}
const forecast = { symbol: 'AAA', years: 0.5, targets: [90, 110, 130], probabilities: [0.25, 0.5, 0.25] };

describe('validation (both endpoints), a 400 naming the field', () => {
  const stress = (extra: object) => () =>
    runStressTest({ securities, date, projection, magnitude: -0.05, ...extra }, source, { paths: 50 });
  const risk = (extra: object) => () =>
    runRiskAttribution({ securities, date, projection, risk_measure: 'cvar', ...extra }, source, {
      paths: 50,
    });
  test.each([
    ['forecasts', 'not an array'],
    ['forecasts[0].symbol', [{ ...forecast, symbol: '' }]],
    ['forecasts[0].years', [{ ...forecast, years: 0 }]],
    ['forecasts[0].years', [{ ...forecast, years: -1 }]],
    ['forecasts[0].targets', [{ ...forecast, targets: [] }]],
    ['forecasts[0].targets', [{ ...forecast, targets: [90, -1, 130] }]],
    ['forecasts[0].probabilities', [{ ...forecast, probabilities: [0.5, 0.5] }]],
    ['forecasts[0].probabilities', [{ ...forecast, probabilities: [-0.25, 1, 0.25] }]],
    ['forecasts[0].probabilities', [{ ...forecast, probabilities: [0.25, 0.5, 0.25 + 2e-9] }]],
    ['forecasts[1].years', [forecast, { ...forecast, years: null }]],
  ])('%s: %j', (parameter, forecasts) => {
    expect(stress({ forecasts })).toThrow(expect.objectContaining({ parameter }));
    expect(risk({ forecasts })).toThrow(expect.objectContaining({ parameter }));
  });
  test('drift must be a boolean; probabilities may miss 1 by 1e-9', () => {
    expect(stress({ drift: 'yes' })).toThrow(expect.objectContaining({ parameter: 'drift' }));
    expect(risk({ drift: 1 })).toThrow(expect.objectContaining({ parameter: 'drift' }));
    const close = [{ ...forecast, probabilities: [0.25, 0.5, 0.25 + 5e-10] }];
    expect(stress({ forecasts: close, drift: true })).not.toThrow();
    expect(risk({ forecasts: close, drift: false })).not.toThrow();
  });
});

describe('a forecast shifts its symbol’s mean by μ·(h/252)/years, μ = Σ p·ln(target/P0)', () => {
  const mu = forecast.probabilities.reduce(
    (s, p, i) => s + p * Math.log(forecast.targets[i]! / price('AAA')),
    0,
  );

  test.each([5, 20])(
    'risk attribution, horizon %i: every path’s x_AAA moves by exactly the shift',
    (horizon) => {
      const prepare = (extra: object) => {
        const prepared = prepareRiskAttribution(
          { securities, date, projection, risk_measure: 'cvar', horizon, ...extra },
          source,
          { paths: 100 },
        );
        if (prepared.kind !== 'simulation') throw new Error('cvar simulates');
        return prepared.scenario;
      };
      const plain = prepare({});
      const viewed = prepare({ forecasts: [forecast] });
      const shift = (mu * (horizon / 252)) / forecast.years;
      expect(viewed.residualMean![0]).toBeCloseTo(shift, 14);
      expect(viewed.residualMean![1]).toBe(0);
      const a = new PathGenerator(plain, seedFromNumber(1));
      const b = new PathGenerator(viewed, seedFromNumber(1));
      for (let p = 0; p < 50; p++) {
        a.draw(p);
        b.draw(p);
        expect(b.x[0]! - a.x[0]!).toBeCloseTo(shift, 14);
        expect(b.e[0]! - a.e[0]!).toBeCloseTo(shift, 14);
        expect(b.x[1]).toBe(a.x[1]);
      }
    },
  );

  test('a bullish view raises the stress test’s ev of the position; an unheld symbol changes nothing', () => {
    const run = (extra: object) =>
      runStressTest({ securities, date, projection, magnitude: -0.05, ...extra }, source, {
        paths: 4000,
        seed: 3,
      });
    const plain = run({});
    const bull = run({ forecasts: [{ ...forecast, targets: [price('AAA') * 1.5], probabilities: [1] }] });
    const ev = (r: typeof plain, i: number) => r.results[i]!.ev.reduce((s, v) => s + v.value, 0);
    // Same seed, same paths: each x_AAA is shifted by δ, so ev moves by exactly (e^δ − 1)·mean(v·e^x)/NLV.
    const delta = (Math.log(1.5) * (5 / 252)) / forecast.years;
    const v = 10 * price('AAA');
    const nlv = v - 4 * price('BBB');
    expect(ev(bull, 0) - ev(plain, 0)).toBeCloseTo(Math.expm1(delta) * (v / nlv + ev(plain, 0)), 12);
    expect(ev(bull, 0)).toBeGreaterThan(ev(plain, 0));
    expect(ev(bull, 1)).toBe(ev(plain, 1));
    expect(run({ forecasts: [{ ...forecast, symbol: 'CCC' }] })).toEqual(plain);
  });
});

describe('drift: every driver centred on its EWMA mean invariant × h/s', () => {
  const naive = naiveModel(projection.map(returnsOf), [returnsOf('AAA'), returnsOf('BBB')], 2, 6, 1);
  const factorMean = projection.map((s) => ewmaMean(returnsOf(s)));
  const driverMean = ['AAA', 'BBB'].map((s) => ewmaMean(returnsOf(s)));

  test('risk attribution: factor means shift f, residual means shift e, E[x_d] = μ_d·h/s', () => {
    const horizon = 20;
    const prepared = prepareRiskAttribution(
      { securities, date, projection, risk_measure: 'var', horizon, drift: true },
      source,
      { paths: 100 },
    );
    if (prepared.kind !== 'simulation') throw new Error('var simulates');
    const { scenario } = prepared;
    for (const regime of scenario.regimes) {
      regime.mean.forEach((m, j) => expect(m).toBeCloseTo(factorMean[j]! * horizon, 13));
    }
    [0, 1].forEach((d) => {
      const beta = naive.betas[d]!;
      const systematic = beta[0]! * factorMean[0]! + beta[1]! * factorMean[1]!;
      expect(scenario.residualMean![d]).toBeCloseTo((driverMean[d]! - systematic) * horizon, 10);
      expect(systematic * horizon + scenario.residualMean![d]!).toBeCloseTo(driverMean[d]! * horizon, 10);
    });
  });

  test('vol is a dispersion: drift leaves it unchanged; cvar moves', () => {
    const run = (risk_measure: 'vol' | 'cvar', drift: boolean) =>
      runRiskAttribution({ securities, date, projection, risk_measure, drift }, source, {
        paths: 3000,
        seed: 8,
      });
    expect(run('vol', true)).toEqual(run('vol', false));
    expect(run('cvar', true)).not.toEqual(run('cvar', false));
  });

  test('stress test: E[f | x_s = c] = μ_f·τ + Σβ(c − μ_s·τ)/σ_s² (one projection, one regime)', () => {
    const one = ['IND:SPX'];
    const single = naiveModel([returnsOf('IND:SPX')], [returnsOf('AAA')], 2, 6, 1);
    const magnitude = -0.06;
    const horizon = 20;
    const run = (drift: boolean) =>
      prepareStressTest(
        { securities, date, projection: one, shock: 'AAA', magnitude, horizon, drift },
        source,
        { paths: 500, distress: false },
      );
    const prepared = run(true);
    const c = Math.log1p(magnitude);
    const beta = single.betas[0]![0]!;
    const covariance = beta * single.factorCovariance[0]![0]!;
    const variance = single.securityVol[0]! ** 2;
    const muF = ewmaMean(returnsOf('IND:SPX')) * horizon;
    const muA = ewmaMean(returnsOf('AAA')) * horizon;
    const expected = muF + (covariance * (c - muA)) / variance;
    const mean = prepared.scenario.regimes[0]!.mean[0]!;
    expect(mean).toBeCloseTo(expected, 10);
    const zeroCentred = run(false).scenario.regimes[0]!.mean[0]!;
    expect(zeroCentred).toBeCloseTo((covariance * c) / variance, 10);
    expect(mean).not.toBeCloseTo(zeroCentred, 6);
  });
});
