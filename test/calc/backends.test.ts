/**
 * Simulation backends against the reference `simulate`: `typed` bit for bit; `threads` with the
 * reference's L, tail sets and portfolio figures bit for bit and component means within f64 rounding
 * of chunked sums, identical for any thread count (`wasm` and `gpujs`, with their own generator, are
 * checked in wasm-backend.test.ts and gpujs-kernels.test.ts). Also: results plug into `finish`, runs
 * are deterministic, memory stays O(paths + D×k).
 */
import { chooseBackend, createBackend } from '../../calc/backends/choose';
import type { SimulationBackend } from '../../calc/backends/backend';
import { simulateTyped } from '../../calc/backends/typed';
import { BLOCK_PATHS } from '../../calc/kernels/path-block';
import { findTailSets } from '../../calc/kernels/tail-sets';
import { prepareRiskAttribution } from '../../calc/risk-attribution';
import { seedFromNumber } from '../../calc/random';
import {
  type Scenario,
  type SimulationOptions,
  type SimulationResult,
  simulate,
} from '../../calc/simulation';
import { prepareStressTest, type StressTestRequest } from '../../calc/stress-test';
import { dayNumber, formatDay } from '../../calc/market-data';
import type { CalcSecurity } from '../../calc/calculation-request';
import { fixtureMarket } from './support/fixture-market';
import { fxMarket } from './support/fx-market';
import { bookScenario, scenario, worstRelative } from './support/scenarios';

const SETS = ['ev', 'cvarNeg', 'cvarPos', 'var'] as const;
const CASES: [string, Scenario, SimulationOptions][] = [
  ['k = 1, unconditional', scenario(1, 120, false), { paths: 5000, seed: seedFromNumber(11), tail: 0.05 }],
  [
    'k = 15, pinned (stress-conditioned), var band',
    scenario(15, 40, true),
    { paths: 3000, seed: seedFromNumber(12), tail: 0.1, varBand: true },
  ],
  [
    'k = 1, pinned, paths not a multiple of the block',
    scenario(1, 30, true),
    { paths: BLOCK_PATHS * 2 + 77, seed: seedFromNumber(13), tail: 0.01, varBand: true },
  ],
  ['k = 15, unconditional', scenario(15, 60, false), { paths: 2500, seed: seedFromNumber(14), tail: 0.05 }],
  [
    'book (FX, cash, options, means), k = 2, unconditional, var band',
    bookScenario(2, 30, false),
    { paths: BLOCK_PATHS * 2 + 77, seed: seedFromNumber(15), tail: 0.05, varBand: true },
  ],
  [
    'linear book (FX, cash, means), k = 3, pinned',
    bookScenario(3, 40, true, false),
    { paths: 3000, seed: seedFromNumber(17), tail: 0.05, varBand: true },
  ],
  [
    'book (FX, cash, options, means), k = 15, pinned',
    bookScenario(15, 25, true),
    { paths: 3000, seed: seedFromNumber(16), tail: 0.1 },
  ],
];

function expectBitwise(actual: SimulationResult, expected: SimulationResult): void {
  expect(actual.tailCount).toBe(expected.tailCount);
  for (const set of SETS) {
    expect(actual[set]?.count).toBe(expected[set]?.count);
    expect(actual[set]?.portfolio).toBe(expected[set]?.portfolio);
    expect(Array.from(actual[set]?.means ?? [])).toEqual(Array.from(expected[set]?.means ?? []));
  }
}

const references = CASES.map(([, s, o]) => simulate(s, o));

describe('typed reproduces the reference bit for bit', () => {
  test.each(CASES.map((c, i) => [c[0], i] as const))('%s', (_, i) => {
    const [, s, o] = CASES[i]!;
    expectBitwise(simulateTyped(s, o), references[i]!);
  });

  test('a different seed changes the numbers (the comparison can fail)', () => {
    const [, s, o] = CASES[0]!;
    const other = simulateTyped(s, { ...o, seed: seedFromNumber(99) });
    expect(other.ev.portfolio).not.toBe(references[0]!.ev.portfolio);
  });

  test('allocations stay O(paths + drivers × (k+1) + block × (k+4)), far below paths × drivers', () => {
    const [paths, drivers, k] = [3000, 2000, 15];
    const s = scenario(k, drivers, true);
    const allocations: { what: string; elements: number }[] = [];
    simulateTyped(s, {
      paths,
      seed: seedFromNumber(3),
      tail: 0.05,
      varBand: true,
      onAllocate: (what, elements) => allocations.push({ what, elements }),
    });
    const bound = Math.max(paths, drivers * (k + 1), BLOCK_PATHS * k);
    for (const { what, elements } of allocations)
      expect({ what, ok: elements <= bound }).toEqual({ what, ok: true });
    const total = allocations.reduce((sum, a) => sum + a.elements, 0);
    expect(total).toBeLessThanOrEqual(4 * drivers * (k + 1) + 5 * paths + BLOCK_PATHS * (k + 5));
    expect(total).toBeLessThan(paths * drivers);
  });
});

describe('threads', () => {
  const pools = new Map<number, SimulationBackend>();
  beforeAll(async () => {
    for (const threads of [1, 2, 3]) pools.set(threads, await createBackend('threads', { threads }));
  });
  afterAll(async () => {
    for (const pool of pools.values()) await pool.close();
  });

  test.each(CASES.map((c, i) => [c[0], i] as const))(
    '%s: L, tail sets and portfolio figures exact; components within 1e-12; same bits for 1, 2, 3 threads',
    async (_, i) => {
      const [, s, o] = CASES[i]!;
      const expected = references[i]!;
      const results = await Promise.all([1, 2, 3].map((n) => pools.get(n)!.simulate(s, o)));
      for (const result of results.slice(1)) expectBitwise(result, results[0]!);
      const actual = results[0]!;
      expect(actual.tailCount).toBe(expected.tailCount);
      for (const set of SETS) {
        expect(actual[set]?.portfolio).toBe(expected[set]?.portfolio);
        expect(actual[set]?.count).toBe(expected[set]?.count);
        if (expected[set]) expect(worstRelative(actual[set]!.means, expected[set].means)).toBeLessThan(1e-12);
      }
      // Running again gives the same bits.
      expectBitwise(await pools.get(2)!.simulate(s, o), actual);
    },
  );
});

describe('backends plug into finish()', () => {
  const { source, date, securities } = fixtureMarket();
  const projection = ['IND:SPX', 'IND:F2'];
  let backends: SimulationBackend[];
  beforeAll(async () => {
    backends = [await createBackend('typed', { threads: 1 }), await createBackend('threads', { threads: 2 })];
  });
  afterAll(async () => {
    for (const backend of backends) await backend.close();
  });

  test('stress test (held shocked stock, pinned): identical output through finish()', async () => {
    const request: StressTestRequest = {
      securities,
      date,
      projection,
      shock: 'BBB',
      magnitude: -0.15,
      horizon: 20,
      confidence: '90%',
    };
    const prepared = prepareStressTest(request, source, { paths: 6000 });
    expect(prepared.scenario.pinned).not.toBeNull();
    const expected = prepared.finish(simulate(prepared.scenario, prepared.simulation));
    const typed = prepared.finish(await backends[0]!.simulate(prepared.scenario, prepared.simulation));
    expect(typed).toEqual(expected);
    const threads = prepared.finish(await backends[1]!.simulate(prepared.scenario, prepared.simulation));
    threads.results.forEach((row, r) => {
      row.cvar_neg.forEach((v, j) => {
        const ref = expected.results[r]!.cvar_neg[j]!.value;
        expect(Math.abs(v.value - ref)).toBeLessThanOrEqual(1e-12 * Math.max(1e-6, Math.abs(ref)));
      });
    });
  });

  test('risk attribution cvar: identical output through finish()', async () => {
    const prepared = prepareRiskAttribution(
      { securities, date, projection, risk_measure: 'cvar', confidence: '95%' },
      source,
      { paths: 6000 },
    );
    if (prepared.kind !== 'simulation') throw new Error('cvar must simulate');
    const expected = prepared.finish(simulate(prepared.scenario, prepared.simulation));
    expect(prepared.finish(await backends[0]!.simulate(prepared.scenario, prepared.simulation))).toEqual(
      expected,
    );
  });
});

describe('every backend computes a book with every instrument through finish()', () => {
  const fx = fxMarket();
  const expiry = formatDay(dayNumber(fx.date) + 120);
  const spot = fx.source.get('AAA')!.values[fx.row]!;
  const book: CalcSecurity[] = [
    { id: 'a', symbol: 'AAA', quantity: 10, currency: 'EUR' },
    { id: 'b', symbol: 'BBB', quantity: -7 },
    { id: 'eur', symbol: 'CASH:EUR', quantity: 2000 },
    { id: 'jpy', symbol: 'CASH:JPY', quantity: 1e5 },
    { id: 'call', symbol: `AAA ${expiry} C${Math.round(spot)}`, quantity: 2 },
    { id: 'put', symbol: `BBB ${expiry} P50`, quantity: -1, currency: 'JPY', market_price: 3 },
  ];
  const common = {
    securities: book,
    date: fx.date,
    projection: ['IND:SPX', 'IND:F2'],
    drift: true,
    forecasts: [{ symbol: 'BBB', years: 1, targets: [40, 60], probabilities: [0.5, 0.5] }],
    volatility_surface: [
      {
        symbol: 'AAA',
        time_to_expiration: [0.1, 1],
        moneyness: [0.8, 1.2],
        volatilities: [
          [0.3, 0.2],
          [0.35, 0.25],
        ],
      },
    ],
  };
  let backends: SimulationBackend[];
  beforeAll(async () => {
    backends = [await createBackend('typed', { threads: 1 }), await createBackend('threads', { threads: 2 })];
  });
  afterAll(async () => {
    for (const backend of backends) await backend.close();
  });
  const close = (actual: number, expected: number, scale: number, tolerance: number) =>
    expect(Math.abs(actual - expected)).toBeLessThanOrEqual(tolerance * scale);
  const TOLERANCE: Record<string, number> = { typed: 0, threads: 1e-12 };

  test('stress test shocking the FX pair (pinned) and risk attribution cvar', async () => {
    const stress = prepareStressTest(
      { ...common, shock: 'FX:EURUSD', magnitude: -0.04, horizon: 20 },
      fx.source,
      { paths: 5000 },
    );
    expect(stress.scenario.lines?.option).not.toBeNull();
    const risk = prepareRiskAttribution({ ...common, risk_measure: 'cvar' }, fx.source, { paths: 5000 });
    if (risk.kind !== 'simulation') throw new Error('cvar simulates');
    const expectedStress = stress.finish(simulate(stress.scenario, stress.simulation));
    const expectedRisk = risk.finish(simulate(risk.scenario, risk.simulation));
    expect(expectedStress.results.map((r) => r.id)).toEqual(book.map((b) => b.id));
    for (const backend of backends) {
      const tolerance = TOLERANCE[backend.name]!;
      const s = stress.finish(await backend.simulate(stress.scenario, stress.simulation));
      const r = risk.finish(await backend.simulate(risk.scenario, risk.simulation));
      if (tolerance === 0) {
        expect(s).toEqual(expectedStress);
        expect(r).toEqual(expectedRisk);
        continue;
      }
      for (const set of ['ev', 'cvar_neg', 'cvar_pos'] as const) {
        const scale = Math.max(
          ...expectedStress.results.flatMap((x) => x[set].map((v) => Math.abs(v.value))),
        );
        expectedStress.results.forEach((row, i) =>
          row[set].forEach((v, j) => close(s.results[i]![set][j]!.value, v.value, scale, tolerance)),
        );
      }
      const scale = Math.max(...expectedRisk.results.flatMap((x) => x.mctr.map((v) => Math.abs(v.value))));
      expectedRisk.results.forEach((row, i) =>
        row.mctr.forEach((v, j) => close(r.results[i]!.mctr[j]!.value, v.value, scale, tolerance)),
      );
    }
  });
});

test('chooseBackend times the candidates and names the one it keeps', async () => {
  const { backend, timings } = await chooseBackend({
    candidates: ['typed', 'threads'],
    threads: 2,
    clock: () => performance.now(),
  });
  try {
    expect(['typed', 'threads']).toContain(backend.name);
    expect(typeof timings.typed).toBe('number');
    expect(typeof timings.threads).toBe('number');
    const chosen = timings[backend.name] as number;
    for (const t of Object.values(timings)) if (typeof t === 'number') expect(chosen).toBeLessThanOrEqual(t);
  } finally {
    await backend.close();
  }
});

test('findTailSets ranks by (L, path index) exactly as a comparator sort does, ties and −0 included', () => {
  const slow = (loss: Float64Array, tail: number) => {
    const paths = loss.length;
    const order = Array.from({ length: paths }, (_, p) => p).sort((a, b) => loss[a]! - loss[b]! || a - b);
    const m = Math.min(paths, Math.max(1, Math.ceil(tail * paths - 1e-9)));
    const flags = new Uint8Array(paths);
    for (let i = 0; i < m; i++) {
      flags[order[i]!]! |= 1;
      flags[order[paths - 1 - i]!]! |= 2;
    }
    const half = Math.floor(0.005 * paths);
    const count = Math.min(2 * half + 1, paths);
    const start = Math.min(Math.max(m - 1 - half, 0), paths - count);
    for (let i = start; i < start + count; i++) flags[order[i]!]! |= 4;
    return flags;
  };
  let state = 12345;
  const next = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32;
  for (let trial = 0; trial < 200; trial++) {
    const n = 1 + Math.floor(next() * 2500);
    const levels = [2, 5, 50, 1e9][trial % 4]!;
    const loss = Float64Array.from(
      { length: n },
      () => Math.floor(next() * levels) * (next() < 0.1 ? -0 : 1),
    );
    const tail = [0.01, 0.05, 0.5, 0.9, 1][trial % 5]!;
    expect({ trial, flags: Array.from(findTailSets(loss, tail, true).flags) }).toEqual({
      trial,
      flags: Array.from(slow(loss, tail)),
    });
  }
});
