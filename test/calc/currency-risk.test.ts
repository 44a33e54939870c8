/**
 * Base currency and FX risk (methodology §9, §10) against closed forms on a synthetic market with
 * known FX pairs: cash is exactly its FX driver, a foreign position's log-return is x_i + x_fx with
 * its vol from the two drivers, triangulation through USD, fx_rate overrides, and the NLV rules.
 */
import type { ReferenceSource } from '../../calc/instruments';
import type { CalcSecurity } from '../../calc/calculation-request';
import { prepareRiskAttribution, runRiskAttribution } from '../../calc/risk-attribution';
import { seedFromNumber } from '../../calc/random';
import { LinePricer } from '../../calc/kernels/line-pricing';
import { PathGenerator, simulate } from '../../calc/simulation';
import { runStressTest } from '../../calc/stress-test';
import { derivedSeries, fxMarket, lastLogReturns } from './support/fx-market';
import { naiveModel, naiveVariance, naiveWeights } from './support/naive-estimates';

const { source, date, row } = fxMarket();
const projection = ['IND:SPX', 'IND:F2'];
const price = (symbol: string) => source.get(symbol)!.values[row]!;
const WINDOW = 1260;
const returnsOf = (symbol: string) => lastLogReturns(source.get(symbol)!, row, WINDOW);
const sumOf = (values: { value: number }[]) => values.reduce((s, v) => s + v.value, 0);

describe('cash in a foreign currency carries exactly its FX driver’s risk', () => {
  const cash: CalcSecurity[] = [{ id: 'p', symbol: 'CASH:EUR', quantity: 1000 }];
  const pair: CalcSecurity[] = [{ id: 'p', symbol: 'FX:EURUSD', quantity: 1000 }];
  const options = { paths: 4000, seed: 5 };

  test.each(['vol', 'var', 'cvar'] as const)(
    'risk attribution %s: same numbers as holding FX:EURUSD',
    (m) => {
      const a = runRiskAttribution({ securities: cash, date, projection, risk_measure: m }, source, options);
      const b = runRiskAttribution({ securities: pair, date, projection, risk_measure: m }, source, options);
      expect(a).toEqual(b);
      expect(a.unmapped_tickers).toEqual([]);
      expect(sumOf(a.results[0]!.mctr)).not.toBe(0);
    },
  );

  test.each(['IND:SPX', 'FX:EURUSD'])('stress test shocking %s: same numbers', (shock) => {
    const run = (securities: CalcSecurity[]) =>
      runStressTest({ securities, date, projection, shock, magnitude: -0.05 }, source, options);
    expect(run(cash)).toEqual(run(pair));
  });

  test('vol (one regime) = the FX series’ EWMA volatility × √252, from the prices', () => {
    const result = runRiskAttribution({ securities: cash, date, projection }, source, { distress: false });
    const sigma = Math.sqrt(naiveVariance(returnsOf('FX:EURUSD'), naiveWeights(WINDOW, 2, 1)));
    expect(sumOf(result.results[0]!.mctr)).toBeCloseTo(sigma * Math.sqrt(252), 12);
  });

  test('shocking the FX pair moves the cash by exactly the shock', () => {
    const result = runStressTest(
      { securities: cash, date, projection, shock: 'FX:EURUSD', magnitude: -0.05, confidence: '90%' },
      source,
      { paths: 2000 },
    );
    for (const set of ['ev', 'cvar_neg', 'cvar_pos'] as const) {
      expect(sumOf(result.results[0]![set])).toBeCloseTo(-0.05, 12);
    }
  });

  test('cash in the base currency has no risk and counts in the NLV', () => {
    const result = runRiskAttribution(
      {
        securities: [...cash, { id: 'usd', symbol: 'CASH:USD', quantity: 5000 }],
        date,
        projection,
        risk_measure: 'cvar',
      },
      source,
      { paths: 2000 },
    );
    expect(result.results[1]!.mctr.every((v) => v.value === 0)).toBe(true);
    const alone = runRiskAttribution({ securities: cash, date, projection }, source, { distress: false });
    const diluted = runRiskAttribution(
      { securities: [...cash, { id: 'usd', symbol: 'CASH:USD', quantity: 5000 }], date, projection },
      source,
      { distress: false },
    );
    const v = 1000 * price('FX:EURUSD');
    expect(sumOf(diluted.results[0]!.mctr)).toBeCloseTo((sumOf(alone.results[0]!.mctr) * v) / (v + 5000), 12);
  });
});

describe('a foreign position moves with x_i + x_fx (§10)', () => {
  const securities: CalcSecurity[] = [{ id: 'a', symbol: 'AAA', quantity: 10, currency: 'EUR' }];

  test('vol (one regime) = √(σ_a² + σ_fx² + 2β_aᵀΣβ_fx) from an independent estimate', () => {
    const nlv = 1e5;
    const result = runRiskAttribution({ securities, date, projection, nlv }, source, { distress: false });
    const naive = naiveModel(projection.map(returnsOf), [returnsOf('AAA'), returnsOf('FX:EURUSD')], 2, 6, 1);
    const [ba, bf] = naive.betas as [number[], number[]];
    let cross = 0;
    for (let i = 0; i < 2; i++)
      for (let j = 0; j < 2; j++) cross += ba[i]! * naive.factorCovariance[i]![j]! * bf[j]!;
    const variance = naive.securityVol[0]! ** 2 + naive.securityVol[1]! ** 2 + 2 * cross;
    const v = 10 * price('AAA') * price('FX:EURUSD');
    expect(sumOf(result.results[0]!.mctr)).toBeCloseTo((v / nlv) * Math.sqrt(variance * 252), 10);
    // The residual part is v²(r_a + r_fx)·252/(σ_p·NLV²).
    const vol = sumOf(result.results[0]!.mctr);
    const residual =
      (v * v * (naive.residualVariance[0]! + naive.residualVariance[1]!) * 252) / (vol * nlv * nlv);
    expect(result.results[0]!.mctr[2]!.value).toBeCloseTo(residual, 10);
  });

  test('per path, L = v·expm1(x_a + x_fx); every set’s components sum to its portfolio figure', () => {
    const book: CalcSecurity[] = [
      ...securities,
      { id: 'b', symbol: 'BBB', quantity: -20 },
      { id: 'jpy', symbol: 'CASH:JPY', quantity: 2e5 },
      { id: 'b-jpy', symbol: 'BBB', quantity: 3, currency: 'JPY', fx_rate: 0.007 },
    ];
    const prepared = prepareRiskAttribution(
      { securities: book, date, projection, risk_measure: 'var' },
      source,
      { paths: 3000 },
    );
    if (prepared.kind !== 'simulation') throw new Error('var simulates');
    const { scenario, nlv } = prepared;
    const lines = scenario.lines!;
    const facts = prepared.facts;
    const value = (id: string) => facts.find((f) => f.id === id)!.exposure;
    expect(value('a')).toBeCloseTo(10 * price('AAA') * price('FX:EURUSD'), 9);
    expect(value('jpy')).toBeCloseTo(2e5 / price('FX:USDJPY'), 9);
    expect(value('b-jpy')).toBeCloseTo(3 * price('BBB') * 0.007, 9);
    const generator = new PathGenerator(scenario, seedFromNumber(3));
    const pricer = new LinePricer(lines);
    for (let p = 0; p < 200; p++) {
      generator.draw(p);
      const x = (d: number) => (d < 0 ? 0 : generator.x[d]!);
      let expected = 0;
      for (let l = 0; l < lines.primary.length; l++) {
        expected += lines.exposure[l]! * Math.expm1(x(lines.primary[l]!) + x(lines.fx[l]!));
      }
      expect(pricer.price(generator.x, generator.e)).toBeCloseTo(expected, 8);
    }
    const full = simulate(scenario, prepared.simulation);
    const ev = prepared.finish({ ...full, var: full.ev });
    const evTotal = ev.results.reduce((s, r) => s + sumOf(r.mctr), 0);
    expect(evTotal).toBeCloseTo(full.ev.portfolio / nlv, 12);
    const shaped = prepared.finish(full);
    const total = shaped.results.reduce((s, r) => s + sumOf(r.mctr), 0);
    expect(total).toBeCloseTo(full.var!.portfolio / nlv, 12);
  });
});

describe('triangulation through USD and inverse quotes (§9)', () => {
  // The same rates quoted directly: JPY→EUR = 1/(USDJPY·EURUSD), USD→EUR = 1/EURUSD.
  const direct = new Map(source);
  direct.set(
    'FX:JPYEUR',
    derivedSeries([source.get('FX:USDJPY')!, source.get('FX:EURUSD')!], (uj, eu) => 1 / (uj * eu)),
  );
  direct.set(
    'FX:USDEUR',
    derivedSeries([source.get('FX:EURUSD')!], (eu) => 1 / eu),
  );
  const securities: CalcSecurity[] = [
    { id: 'jpy', symbol: 'CASH:JPY', quantity: 1e6 },
    // Without a currency (and no master) a position is in the base currency (§9): say USD.
    { id: 'a', symbol: 'AAA', quantity: 50, currency: 'USD' },
    { id: 'b', symbol: 'BBB', quantity: 20, currency: 'EUR' },
  ];
  const request = { securities, date, projection, base_currency: 'EUR' };

  test.each(['vol', 'cvar'] as const)('%s in EUR: through USD = quoted directly', (risk_measure) => {
    const options = { paths: 3000, seed: 9 };
    const a = runRiskAttribution({ ...request, risk_measure }, source, options);
    const b = runRiskAttribution({ ...request, risk_measure }, direct, options);
    expect(a.unmapped_tickers).toEqual([]);
    a.results.forEach((r, i) =>
      r.mctr.forEach((v, j) => expect(v.value).toBeCloseTo(b.results[i]!.mctr[j]!.value, 10)),
    );
    // The EUR position is domestic in EUR: BBB's own risk only.
    expect(a.results[2]!.mctr.some((v) => v.value !== 0)).toBe(true);
  });

  test('values in EUR: the JPY cash at 1/(USDJPY·EURUSD), the USD stock at 1/EURUSD', () => {
    const prepared = prepareRiskAttribution(request, source);
    const [jpy, a, b] = prepared.facts;
    expect(jpy!.exposure).toBeCloseTo(1e6 / (price('FX:USDJPY') * price('FX:EURUSD')), 9);
    expect(a!.exposure).toBeCloseTo((50 * price('AAA')) / price('FX:EURUSD'), 9);
    expect(b!.exposure).toBe(20 * price('BBB'));
    expect([jpy!.currency, a!.currency, b!.currency]).toEqual(['JPY', 'USD', 'EUR']);
  });

  test('base-currency change: EUR cash loses its risk in EUR, the USD stock gains FX:USDEUR', () => {
    const book: CalcSecurity[] = [
      { id: 'a', symbol: 'AAA', quantity: 10, currency: 'USD' },
      { id: 'eur', symbol: 'CASH:EUR', quantity: 1000 },
    ];
    const inEur = runRiskAttribution({ securities: book, date, projection, base_currency: 'EUR' }, source, {
      distress: false,
    });
    expect(inEur.results[1]!.mctr.every((v) => v.value === 0)).toBe(true);
    const naive = naiveModel(projection.map(returnsOf), [returnsOf('AAA'), returnsOf('FX:EURUSD')], 2, 6, 1);
    const [ba, bf] = naive.betas as [number[], number[]];
    let cross = 0;
    for (let i = 0; i < 2; i++)
      for (let j = 0; j < 2; j++) cross -= ba[i]! * naive.factorCovariance[i]![j]! * bf[j]!;
    const variance = naive.securityVol[0]! ** 2 + naive.securityVol[1]! ** 2 + 2 * cross;
    const va = (10 * price('AAA')) / price('FX:EURUSD');
    const nlv = va + 1000;
    expect(sumOf(inEur.results[0]!.mctr)).toBeCloseTo((va / nlv) * Math.sqrt(variance * 252), 10);
  });

  test('no route at all: the position is unmapped and still counts in the NLV when it has an fx_rate', () => {
    const book: CalcSecurity[] = [
      { id: 'a', symbol: 'AAA', quantity: 10 },
      { id: 'chf', symbol: 'CASH:CHF', quantity: 1000 },
      { id: 'chf2', symbol: 'BBB', quantity: 1, currency: 'CHF', fx_rate: 1.1 },
    ];
    const prepared = prepareRiskAttribution({ securities: book, date, projection }, source);
    if (prepared.kind !== 'analytic') throw new Error('vol is analytic');
    expect(prepared.result.unmapped_tickers).toEqual(['CASH:CHF', 'BBB']);
    expect(prepared.result.results.map((r) => r.id)).toEqual(['a']);
  });
});

describe('NLV (§9)', () => {
  const master: Record<string, Record<string, string>> = { BBB: { instrument_type: 'FUTURE' } };
  const withMaster: ReferenceSource = { get: (s) => source.get(s), attributes: (s) => master[s] };
  const book: CalcSecurity[] = [
    { id: 'a', symbol: 'AAA', quantity: 10 },
    { id: 'fut', symbol: 'BBB', quantity: 5 },
    { id: 'eur', symbol: 'CASH:EUR', quantity: 1000 },
  ];

  test('computed: cash-settled positions count, margin-traded ones count 0', () => {
    const prepared = prepareRiskAttribution({ securities: book, date, projection }, withMaster, {
      distress: false,
    });
    if (prepared.kind !== 'analytic') throw new Error('vol is analytic');
    const nlv = 10 * price('AAA') + 1000 * price('FX:EURUSD');
    const facts = new Map(prepared.facts.map((f) => [f.id, f]));
    expect(facts.get('fut')!.exposure).toBe(5 * price('BBB'));
    // The future is still risk: its exposure is v, only its NLV share is 0.
    const sigma = Math.sqrt(naiveVariance(returnsOf('AAA'), naiveWeights(WINDOW, 2, 1)));
    expect(prepared.result.results[0]!.mctr.length).toBe(3);
    const oneStock = runRiskAttribution({ securities: [book[0]!], date, projection, nlv }, withMaster, {
      distress: false,
    });
    expect(sumOf(oneStock.results[0]!.mctr)).toBeCloseTo(
      ((10 * price('AAA')) / nlv) * sigma * Math.sqrt(252),
      10,
    );
  });

  test('supplied: taken as is; results scale by computed/supplied', () => {
    const options = { paths: 2000, seed: 4 };
    const computed = runRiskAttribution(
      { securities: book, date, projection, risk_measure: 'cvar' },
      withMaster,
      options,
    );
    const nlv = 10 * price('AAA') + 1000 * price('FX:EURUSD');
    const supplied = runRiskAttribution(
      { securities: book, date, projection, risk_measure: 'cvar', nlv: 3 * nlv },
      withMaster,
      options,
    );
    computed.results.forEach((r, i) =>
      r.mctr.forEach((v, j) => expect(supplied.results[i]!.mctr[j]!.value * 3).toBeCloseTo(v.value, 12)),
    );
  });
});

test('a book of base-currency stocks needs no lines (the blocked per-driver kernels run it)', () => {
  const prepare = (securities: CalcSecurity[]) => {
    const prepared = prepareRiskAttribution({ securities, date, projection, risk_measure: 'cvar' }, source, {
      paths: 10,
    });
    if (prepared.kind !== 'simulation') throw new Error('cvar simulates');
    return prepared.scenario;
  };
  const stocks: CalcSecurity[] = [
    { id: 'a', symbol: 'AAA', quantity: 10 },
    { id: 'b', symbol: 'BBB', quantity: -3 },
  ];
  expect(prepare(stocks).lines).toBeUndefined();
  expect(prepare([...stocks, { id: 'c', symbol: 'CASH:USD', quantity: 5 }]).lines).toBeDefined();
  expect(prepare([{ ...stocks[0]!, currency: 'EUR' }]).lines).toBeDefined();
});
