/**
 * The `gpujs` backend's GPU-shaped kernels (one thread per path, the generator on the device), run
 * here in gpu.js's cpu and webasm modes, and compiled for webgpu on Dawn's Null adapter (which
 * validates every shader and computes nothing; no GPU is needed and none is assumed):
 * - the generator draws the wasm kernel's words bit for bit and its normals to f32 rounding;
 * - every figure equals the `wasm` backend's within the tolerance derived in docs/calculations.md
 *   (the same paths, the same formulas, f32 rounding apart), through `finish()` too;
 * - the same seed gives the same bits, chunking does not change the figures beyond f32 rounding.
 */
import { GPU } from 'gpu.js';
import type { SimulationBackend } from '../../calc/backends/backend';
import { createBackend } from '../../calc/backends/choose';
import {
  chunkRows,
  drawOn,
  gpujsBackend,
  gpujsBackendOn,
  type GpuMode,
  SEGMENT,
} from '../../calc/backends/gpujs';
import { OPTION_FIELDS } from '../../calc/kernels/line-pricing';
import { describeAdapter, detectWebGpu, vulkanSearchPath } from '../../calc/backends/webgpu-node';
import { kernelNormal, kernelWord, WasmKernel } from '../../calc/kernels/wasm-kernel';
import { dayNumber, formatDay } from '../../calc/market-data';
import type { CalcSecurity } from '../../calc/calculation-request';
import { seedFromNumber } from '../../calc/random';
import { prepareRiskAttribution } from '../../calc/risk-attribution';
import type { Scenario, SimulationOptions, SimulationResult } from '../../calc/simulation';
import { prepareStressTest } from '../../calc/stress-test';
import { fxMarket } from './support/fx-market';
import { bookScenario, normalsScenario, scenario, worstRelative } from './support/scenarios';

/**
 * With PAS_TEST_WEBGPU=lavapipe (set by gpujs-lavapipe.test.ts, which also points VK_ICD_FILENAMES
 * and LD_LIBRARY_PATH at the project's lavapipe) this file runs again in webgpu mode, executing the
 * WGSL on Mesa's Vulkan-on-the-CPU: the same checks against wasm, on a real (software) adapter.
 */
const ON_LAVAPIPE = process.env.PAS_TEST_WEBGPU === 'lavapipe';
const MODES: GpuMode[] = ON_LAVAPIPE ? ['webgpu'] : ['cpu', 'webasm'];
/** The mode of the tests below that run in one mode only (chunking, finish()). */
const ONE_MODE: GpuMode = ON_LAVAPIPE ? 'webgpu' : 'webasm';

if (ON_LAVAPIPE) {
  beforeAll(async () => {
    // Dawn's navigator.gpu on the lavapipe the environment points at; every gpu.js instance below uses it.
    const status = await detectWebGpu(vulkanSearchPath(process.env.LD_LIBRARY_PATH));
    if (!status.ok) throw new Error(`lavapipe did not answer: ${status.reason}`);
    console.log(`webgpu adapter: ${describeAdapter(status.adapter)}`);
  });
}
const SETS = ['ev', 'cvarNeg', 'cvarPos', 'var'] as const;

describe.each(MODES)('generator in gpu.js %s mode', (mode) => {
  let gpu: GPU;
  beforeAll(() => {
    gpu = new GPU({ mode });
  });
  afterAll(async () => {
    await gpu.destroy();
  });

  test.each([
    [0, 7],
    [5, 2],
    [-1, 11],
    [3000, 123456789],
  ])(
    'dimension %i, seed %i: the wasm kernel words bit for bit, normals within 2 f32 ulps',
    async (dim, n) => {
      const seed = seedFromNumber(n);
      const paths = 4096;
      const { codes, normals } = await drawOn(gpu, mode, seed, paths, dim);
      let zeros = 0;
      for (let p = 0; p < paths; p++) {
        const word = kernelWord(seed, p, dim >>> 0);
        expect(codes[p]).toBe(word >>> 8);
        const z = kernelNormal(word);
        expect(Math.abs(normals[p]! - z)).toBeLessThanOrEqual(2 * 2 ** -23 * Math.max(1, Math.abs(z)));
        if (normals[p] === 0) zeros++;
      }
      expect(zeros).toBe(0);
    },
  );

  test.each([
    [65_000, 4],
    [2 ** 31 - 1000, 9],
    [2 ** 32 - 2048, 3000],
  ])(
    'path ids from %i (across 2^16, 2^31 and up to 2^32 − 1), dimension %i: the wasm kernel words bit for bit',
    async (first, dim) => {
      const seed = seedFromNumber(first);
      const paths = 2048;
      const { codes } = await drawOn(gpu, mode, seed, paths, dim, first);
      for (let i = 0; i < paths; i++) expect(codes[i]).toBe(kernelWord(seed, (first + i) >>> 0, dim) >>> 8);
    },
  );

  test('the normals are the ones the wasm kernel itself draws (a one-factor book: L = expm1(0.01·z))', async () => {
    const seed = seedFromNumber(4);
    const scale = 0.01;
    const { loss } = new WasmKernel(normalsScenario(scale), seed).pass1(0, 2048);
    const { normals } = await drawOn(gpu, mode, seed, 2048, 0);
    loss.forEach((l, p) => expect(Math.abs(Math.log1p(l) / scale - normals[p]!)).toBeLessThan(1e-4));
  });
});

const CASES: [string, Scenario, SimulationOptions][] = [
  ['k = 1, unconditional', scenario(1, 120, false), { paths: 3000, seed: seedFromNumber(11), tail: 0.05 }],
  [
    'k = 15, pinned (stress-conditioned), var band',
    scenario(15, 40, true),
    { paths: 2000, seed: seedFromNumber(12), tail: 0.1, varBand: true },
  ],
  [
    'book (FX, cash, options, means), k = 2, var band, paths not a multiple of the segment',
    bookScenario(2, 30, false),
    { paths: 4 * SEGMENT + 77, seed: seedFromNumber(15), tail: 0.05, varBand: true },
  ],
  [
    'linear book (FX, cash, means), k = 3, pinned',
    bookScenario(3, 40, true, false),
    { paths: 2500, seed: seedFromNumber(17), tail: 0.05, varBand: true },
  ],
  [
    'book (FX, cash, options, means), k = 15, pinned',
    bookScenario(15, 25, true),
    { paths: 2000, seed: seedFromNumber(16), tail: 0.1 },
  ],
];

/** The cases with a quarter of the paths, for gpu.js's cpu mode (slow under jest's sandbox). */
const CPU_CASES = CASES.map(([name, s, o]) => [name, s, { ...o, paths: Math.ceil(o.paths / 4) }] as const);

/**
 * The stated tolerance (docs/calculations.md, "The GPU's answers"): the same tail sets; portfolio
 * figures within 1e-6 relative; component means within 1e-5 of the set's largest, except an option
 * line's, within 2e-3 (its split unit/x divides a P&L that does not vanish at x = 0 by a small x).
 */
function expectWithinTolerance(
  actual: SimulationResult,
  expected: SimulationResult,
  scenario: Scenario,
): void {
  const width = scenario.k + 1;
  const terms = scenario.lines?.option ?? null;
  const isOption = (i: number) => terms !== null && terms[Math.floor(i / width) * OPTION_FIELDS] !== 0;
  expect(actual.tailCount).toBe(expected.tailCount);
  for (const set of SETS) {
    if (!expected[set]) {
      expect(actual[set]).toBeNull();
      continue;
    }
    expect(actual[set]!.count).toBe(expected[set].count);
    const { portfolio } = expected[set];
    expect(Math.abs(actual[set]!.portfolio - portfolio)).toBeLessThanOrEqual(1e-6 * Math.abs(portfolio));
    const { means } = expected[set];
    expect(worstRelative(actual[set]!.means, means, (i) => !isOption(i))).toBeLessThan(1e-5);
    expect(worstRelative(actual[set]!.means, means, isOption)).toBeLessThan(2e-3);
  }
}

function expectBitwise(actual: SimulationResult, expected: SimulationResult): void {
  for (const set of SETS) {
    expect(actual[set]?.portfolio).toBe(expected[set]?.portfolio);
    expect(Array.from(actual[set]?.means ?? [])).toEqual(Array.from(expected[set]?.means ?? []));
  }
}

let wasm: SimulationBackend;
const expected = new Map<number, SimulationResult>();
beforeAll(async () => {
  wasm = await createBackend('wasm', { threads: 1 });
  for (const [i, [, s, o]] of [...CASES, ...CPU_CASES].entries()) expected.set(i, await wasm.simulate(s, o));
});
afterAll(async () => {
  await wasm.close();
});

describe.each(MODES)('gpujs kernels in gpu.js %s mode against wasm', (mode) => {
  let gpu: SimulationBackend;
  beforeAll(async () => {
    gpu = await gpujsBackend({ mode });
  });
  afterAll(async () => {
    await gpu.close();
  });

  test('names its mode and shape (what the health check shows)', () => {
    expect(gpu.name).toBe('gpujs');
    if (mode === 'webgpu') {
      // On lavapipe: the adapter named, and the warning that it is the CPU.
      expect(gpu.detail).toMatch(
        /^gpu\.js webgpu on mesa software \(llvmpipe.*software adapter \(the CPU\), not a GPU/,
      );
      expect(gpu.adapter?.description).toMatch(/llvmpipe/);
      return;
    }
    expect(gpu.detail).toBe(`gpu.js ${mode}, one thread per path, generator on the device`);
    expect(gpu.adapter).toBeUndefined();
  });

  test.each(CASES.map((c, i) => [c[0], i] as const))('%s', async (name, i) => {
    const [, s, o] = mode === 'cpu' ? CPU_CASES[i]! : CASES[i]!;
    const actual = await gpu.simulate(s, o);
    expectWithinTolerance(actual, expected.get(mode === 'cpu' ? CASES.length + i : i)!, s);
    // The same seed, the same bits; another seed, other numbers (the comparison can fail).
    expectBitwise(await gpu.simulate(s, o), actual);
    const other = await gpu.simulate(s, { ...o, seed: seedFromNumber(99) });
    expect(other.ev.portfolio).not.toBe(actual.ev.portfolio);
    expect(name).toBeTruthy();
  });
});

describe(`chunking and reuse in gpu.js ${ONE_MODE} mode`, () => {
  test('chunk rows: whole segments within the memory given, at most a power of two of segments', () => {
    expect(chunkRows(100_000, 3000, 128 * 2 ** 20)).toBe(11008);
    expect(chunkRows(1000, 3000, 128 * 2 ** 20)).toBe(1024);
    expect(chunkRows(10, 3000, 1)).toBe(SEGMENT);
  });

  test('pass 1 in ten chunks and pass 2 on the tail paths in chunks of its own give the figures of one chunk and of wasm', async () => {
    // Wide tails (20 %: 2 × 500 tail paths of 2500, and the VaR band) so that pass 2 chunks too.
    const [, s, base] = CASES[3]!;
    const o: SimulationOptions = { ...base, tail: 0.2 };
    const lines = s.lines!.primary.length;
    const whole = await gpujsBackend({ mode: ONE_MODE });
    // One segment per chunk.
    const chunked = await gpujsBackend({ mode: ONE_MODE, chunkBytes: SEGMENT * lines * 4 });
    try {
      const launched: { pass: 1 | 2; count: number; rows: number }[] = [];
      const b = await chunked.simulate(s, {
        ...o,
        onChunk: (pass, count, rows) => launched.push({ pass, count, rows }),
      });
      const pass1 = launched.filter((c) => c.pass === 1);
      const pass2 = launched.filter((c) => c.pass === 2);
      expect(pass1.map((c) => c.rows)).toEqual(Array(Math.ceil(o.paths / SEGMENT)).fill(SEGMENT));
      expect(pass1.reduce((n, c) => n + c.count, 0)).toBe(o.paths);
      // Pass 2 draws the tail paths again by id: both tails (disjoint at 20 %), the band's within.
      const m = Math.ceil(o.tail * o.paths);
      const tailPaths = pass2.reduce((n, c) => n + c.count, 0);
      expect(tailPaths).toBeGreaterThanOrEqual(2 * m);
      expect(tailPaths).toBeLessThanOrEqual(2 * m + b.var!.count);
      expect(pass2.length).toBe(Math.ceil(tailPaths / SEGMENT));
      expect(pass2.length).toBeGreaterThanOrEqual(3);
      expectWithinTolerance(b, await whole.simulate(s, o), s);
      expectWithinTolerance(b, await wasm.simulate(s, o), s);
    } finally {
      await whole.close();
      await chunked.close();
    }
  });

  test('70,000 paths: ids past 2^16 in pass 1 and among the tail paths of pass 2 match wasm', async () => {
    const [, s, base] = CASES[0]!;
    const o: SimulationOptions = { ...base, paths: 70_000 };
    const gpu = await gpujsBackend({ mode: ONE_MODE });
    try {
      const launched: number[] = [];
      const actual = await gpu.simulate(s, {
        ...o,
        onChunk: (pass, count) => pass === 2 && launched.push(count),
      });
      expect(launched.reduce((n, c) => n + c, 0)).toBeGreaterThanOrEqual(2 * Math.ceil(o.tail * o.paths));
      expectWithinTolerance(actual, await wasm.simulate(s, o), s);
    } finally {
      await gpu.close();
    }
  });

  test('one backend across calls of different shapes (k, lines, paths) answers each bit for bit as a fresh one', async () => {
    // Each shape compiles its own kernels and buffers; coming back to a shape reuses them. A buffer
    // or pipeline left over from another shape would change the bits.
    const order = [0, 4, 2, 0, 1, 4, 0];
    const shapes = order.map((i) => CASES[i]!);
    shapes[3] = [shapes[3]![0], shapes[3]![1], { ...shapes[3]![2], paths: 700 }];
    const reused = await gpujsBackend({ mode: ONE_MODE });
    const answers: SimulationResult[] = [];
    try {
      for (const [, s, o] of shapes) answers.push(await reused.simulate(s, o));
    } finally {
      await reused.close();
    }
    // Each of the first five shapes (all different) as a fresh backend answers it.
    for (const [j, [, s, o]] of shapes.slice(0, 5).entries()) {
      const fresh = await gpujsBackend({ mode: ONE_MODE });
      try {
        expectBitwise(answers[j]!, await fresh.simulate(s, o));
      } finally {
        await fresh.close();
      }
      if (j !== 3) expectWithinTolerance(answers[j]!, expected.get(order[j]!)!, s);
    }
    // A shape met again, after others, gives its first bits again.
    expectBitwise(answers[5]!, answers[1]!);
    expectBitwise(answers[6]!, answers[0]!);
  });
});

test('through finish(): a stress test shocking an FX pair and a cvar attribution with options match wasm', async () => {
  const fx = fxMarket();
  const expiry = formatDay(dayNumber(fx.date) + 120);
  const spot = fx.source.get('AAA')!.values[fx.row]!;
  const book: CalcSecurity[] = [
    { id: 'a', symbol: 'AAA', quantity: 10, currency: 'EUR' },
    { id: 'b', symbol: 'BBB', quantity: -7 },
    { id: 'eur', symbol: 'CASH:EUR', quantity: 2000 },
    { id: 'call', symbol: `AAA ${expiry} C${Math.round(spot)}`, quantity: 2 },
    { id: 'put', symbol: `BBB ${expiry} P50`, quantity: -1, currency: 'JPY', market_price: 3 },
  ];
  const common = { securities: book, date: fx.date, projection: ['IND:SPX', 'IND:F2'], drift: true };
  const stress = prepareStressTest(
    { ...common, shock: 'FX:EURUSD', magnitude: -0.04, horizon: 20 },
    fx.source,
    { paths: 4000 },
  );
  const risk = prepareRiskAttribution({ ...common, risk_measure: 'cvar' }, fx.source, { paths: 4000 });
  if (risk.kind !== 'simulation') throw new Error('cvar simulates');
  const gpu = await gpujsBackend({ mode: ONE_MODE });
  try {
    const ws = stress.finish(await wasm.simulate(stress.scenario, stress.simulation));
    const gs = stress.finish(await gpu.simulate(stress.scenario, stress.simulation));
    const wr = risk.finish(await wasm.simulate(risk.scenario, risk.simulation));
    const gr = risk.finish(await gpu.simulate(risk.scenario, risk.simulation));
    for (const set of ['ev', 'cvar_neg', 'cvar_pos'] as const) {
      const scale = Math.max(...ws.results.flatMap((x) => x[set].map((v) => Math.abs(v.value))));
      ws.results.forEach((row, i) =>
        row[set].forEach((v, j) =>
          expect(Math.abs(gs.results[i]![set][j]!.value - v.value)).toBeLessThanOrEqual(1e-4 * scale),
        ),
      );
    }
    const scale = Math.max(...wr.results.flatMap((x) => x.mctr.map((v) => Math.abs(v.value))));
    wr.results.forEach((row, i) =>
      row.mctr.forEach((v, j) =>
        expect(Math.abs(gr.results[i]!.mctr[j]!.value - v.value)).toBeLessThanOrEqual(1e-4 * scale),
      ),
    );
  } finally {
    await gpu.close();
  }
});

// On lavapipe the WGSL runs for real above; the Null adapter's check belongs to the ordinary run.
(ON_LAVAPIPE ? describe.skip : describe)(
  "webgpu: every kernel's WGSL compiles and validates (Dawn's Null adapter)",
  () => {
    test('a book with options, FX, means and a pinned driver at k = 15 runs through every kernel in webgpu mode', async () => {
      const dawn = (await import('webgpu')) as unknown as {
        create(flags: string[]): unknown;
        globals: Record<string, unknown>;
      };
      Object.assign(globalThis, dawn.globals);
      Object.defineProperty(globalThis, 'navigator', {
        value: { gpu: dawn.create(['backend=null']) },
        configurable: true,
      });
      try {
        expect(await GPU.isWebGPUAvailable()).toBe(true);
        const gpu = new GPU({ mode: 'webgpu' });
        const errors: unknown[] = [];
        const warn = jest.spyOn(console, 'error').mockImplementation((...args) => void errors.push(args));
        const backend = gpujsBackendOn(gpu, 'webgpu', undefined, 1 << 20);
        try {
          const [, s, o] = CASES[4]!;
          // The Null adapter computes nothing, so only that every shader builds and runs is checked.
          await backend.simulate(s, { ...o, paths: 600 });
          await drawOn(gpu, 'webgpu', o.seed, 64, 3);
          const modes = (gpu as unknown as { kernels: { kernel?: object }[] }).kernels.map(
            (k) => (k.kernel ?? k).constructor.name,
          );
          expect(modes.length).toBeGreaterThanOrEqual(8);
          expect(new Set(modes)).toEqual(new Set(['WebGPUKernel']));
          expect(errors).toEqual([]);
        } finally {
          warn.mockRestore();
          await backend.close();
        }
      } finally {
        delete (globalThis as { navigator?: unknown }).navigator;
      }
    });
  },
);
