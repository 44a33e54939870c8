/**
 * Calculation benchmark (issue 5): the stress test and the risk attribution (cvar) on every
 * simulation backend beside the reference, in the same run, for (M) 250 securities × 1 projection ×
 * 100,000 paths and (L) 3000 × 15 × 100,000 on a synthetic market, and (MX) the M book with 20 % of
 * its positions options and 30 % in EUR (issue 11: lines, Black–Scholes per path, FX drivers). Each figure times
 * `finish(await backend.simulate(...))`; the estimation (`prepare*`) is the same for every backend
 * and is timed once. Peak RSS growth is sampled from a helper thread, since the reference and typed
 * backends block the main thread for the whole run.
 *
 * `npm run bench -- --quick` runs one repetition per case and skips the L reference;
 * `--size=M` or `--size=L` and `--backends=reference,typed` narrow the run (add `numpy` to the list
 * to keep the numpy peer). The numpy peer (bench/numpy-peer.py, issue 12) runs the same two-pass
 * decomposition in a child `python3` when numpy imports there, on the linear books (M, L).
 */
import { spawn, spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { BackendName, SimulationBackend } from '../calc/backends/backend';
import { chooseBackend, createBackend } from '../calc/backends/choose';
import type { CalcSecurity } from '../calc/portfolio-model';
import { formatDay } from '../calc/market-data';
import { prepareRiskAttribution } from '../calc/risk-attribution';
import type { Scenario, SimulationOptions, SimulationResult } from '../calc/simulation';
import { prepareStressTest } from '../calc/stress-test';
import { syntheticMarket } from '../test/calc/support/synthetic-market';

const MiB = 1024 * 1024;
const PATHS = 100_000;

interface Size {
  readonly label: string;
  readonly securities: number;
  readonly projections: number;
  /** 20 % options and 30 % foreign (EUR) positions. */
  readonly mixed?: boolean;
}
const SIZES: Size[] = [
  { label: 'M', securities: 250, projections: 1 },
  { label: 'MX', securities: 250, projections: 1, mixed: true },
  { label: 'L', securities: 3000, projections: 15 },
];

interface Prepared {
  readonly name: string;
  readonly scenario: Scenario;
  readonly simulation: SimulationOptions;
  readonly finish: (result: SimulationResult) => unknown;
}

/** A synthetic market and a long/short book of `securities` stocks on `projections` factors. */
function prepare(size: Size): { calcs: Prepared[]; seconds: number } {
  const factors = Array.from({ length: size.projections }, (_, j) => ({
    symbol: `IND:F${j}`,
    vol: 0.008 + 0.0005 * j,
  }));
  const stocks = Array.from({ length: size.securities }, (_, i) => ({
    symbol: `S${i}`,
    beta: factors.map((_, j) => (j === 0 ? 0.6 + ((i * 7) % 11) / 10 : (((i + j) * 13) % 9) / 20 - 0.2)),
    residualVol: 0.01 + ((i * 3) % 7) / 1000,
  }));
  const market = syntheticMarket({
    days: 700,
    factors,
    correlation: 0.3,
    stocks: [
      ...stocks,
      { symbol: 'FX:EURUSD', beta: factors.map((_, j) => (j === 0 ? 0.1 : 0)), residualVol: 0.005 },
    ],
    turbulence: [{ from: 300, to: 360, multiplier: 2.5 }],
  });
  const expiry = formatDay(market.days[market.days.length - 1]! + 90);
  const securities: CalcSecurity[] = stocks.map((s, i) => {
    const quantity = (i % 10 === 0 ? -1 : 1) * (10 + (i % 50));
    if (!size.mixed) return { id: `p${i}`, symbol: s.symbol, quantity };
    const values = market.source.get(s.symbol)!.values;
    const strike = Math.round(values[values.length - 1]!);
    // Every 5th position an option (calls and puts, 20 %); 3 in 10 positions in EUR (30 %).
    if (i % 5 === 2)
      return { id: `p${i}`, symbol: `${s.symbol} ${expiry} ${i % 2 ? 'C' : 'P'}${strike}`, quantity };
    return {
      id: `p${i}`,
      symbol: s.symbol,
      quantity,
      ...([0, 1, 3].includes(i % 10) ? { currency: 'EUR' } : {}),
    };
  });
  const projection = factors.map((f) => f.symbol);
  const started = performance.now();
  const stress = prepareStressTest(
    { securities, date: market.lastDate, projection, shock: 'IND:F0', magnitude: -0.1, horizon: 20 },
    market.source,
    { paths: PATHS },
  );
  const risk = prepareRiskAttribution(
    { securities, date: market.lastDate, projection, risk_measure: 'cvar', confidence: '95%' },
    market.source,
    { paths: PATHS },
  );
  if (risk.kind !== 'simulation') throw new Error('cvar risk attribution must simulate');
  const seconds = (performance.now() - started) / 1000;
  return {
    calcs: [
      { name: 'stress_test', ...stress },
      { name: 'risk_attribution cvar', ...risk },
    ],
    seconds,
  };
}

/** Samples process RSS every 5 ms from a helper thread into a shared slot (MiB). */
function rssSampler(): { reset: () => number; peak: () => number; stop: () => Promise<number> } {
  const shared = new Float64Array(new SharedArrayBuffer(16));
  const worker = new Worker(
    `const { workerData } = require('node:worker_threads');
     const slot = new Float64Array(workerData);
     setInterval(() => { const rss = process.memoryUsage.rss(); if (rss > slot[0]) slot[0] = rss; }, 5);`,
    { eval: true, workerData: shared.buffer },
  );
  worker.unref();
  return {
    /** Starts a new window; returns the RSS now. */
    reset: () => {
      const now = process.memoryUsage.rss();
      shared[0] = now;
      return now;
    },
    peak: () => Math.max(shared[0]!, process.memoryUsage.rss()),
    stop: () => worker.terminate(),
  };
}

/** Whether `python3` on PATH imports numpy; its version or why not. */
function numpyAvailable(): { version: string } | { missing: string } {
  const probe = spawnSync('python3', ['-c', 'import numpy; print(numpy.__version__)'], { encoding: 'utf8' });
  if (probe.error) return { missing: 'python3 not found' };
  if (probe.status !== 0) return { missing: 'numpy not installed' };
  return { version: probe.stdout.trim() };
}

/**
 * Runs bench/numpy-peer.py in a child python3 on a linear scenario: the same two-pass tail
 * decomposition in numpy (chunked, BLAS products). Returns its per-run milliseconds.
 */
async function numpyPeer(scenario: Scenario, simulation: SimulationOptions, runs: number): Promise<number[]> {
  const input = JSON.stringify({
    k: scenario.k,
    regimes: scenario.regimes.map((r) => ({
      probability: r.probability,
      mean: Array.from(r.mean),
      root: Array.from(r.root),
    })),
    beta: Array.from(scenario.beta),
    residualSd: Array.from(scenario.residualSd),
    exposure: Array.from(scenario.exposure),
    pinned: scenario.pinned,
    paths: simulation.paths,
    tail: simulation.tail,
    runs,
  });
  const child = spawn('python3', [path.join(__dirname, 'numpy-peer.py')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stdin.end(input);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`numpy peer exited with ${code}`);
  return (JSON.parse(out) as { ms: number[] }).ms;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export async function runCalcBench(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const quick = argv.includes('--quick');
  const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const sizes = SIZES.filter((s) => (flag('size') ?? s.label) === s.label);
  const only = flag('backends')?.split(',');
  const threads = os.availableParallelism();
  const load = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ');
  console.log(
    `\nCalculation benchmark: ${PATHS} paths on ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${threads} cores, ` +
      `load average (1/5/15 min) ${load()}`,
  );
  const numpy = only === undefined || only.includes('numpy') ? numpyAvailable() : null;
  const probe = await chooseBackend({ threads, clock: () => performance.now() });
  const timings = Object.entries(probe.timings)
    .map(([name, t]) => `${name} ${typeof t === 'number' ? `${t.toFixed(1)} ms` : t}`)
    .join(', ');
  console.log(
    `Start-up probe chose: ${probe.backend.name} (${probe.backend.detail}); probe times: ${timings}`,
  );
  await probe.backend.close();

  const names: BackendName[] = ['reference', 'typed', 'threads', 'wasm', 'gpujs'];
  const backends: SimulationBackend[] = [];
  for (const name of names.filter((n) => only?.includes(n) ?? true))
    backends.push(await createBackend(name, { threads }));
  const sampler = rssSampler();
  console.log(
    '| size | calculation | backend | runs | p50 ms | p99 ms | peak RSS growth MiB | p50 vs reference |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  try {
    for (const size of sizes) {
      const { calcs, seconds } = prepare(size);
      console.log(
        `| ${size.label} | (estimation, once: ${seconds.toFixed(2)} s for ${size.securities} × ${size.projections}) | | | | | | |`,
      );
      for (const calc of calcs) {
        let referenceP50: number | null = null;
        for (const backend of backends) {
          const reference = backend.name === 'reference';
          if (reference && quick && size.label === 'L') continue;
          // An L run takes about a minute: the reference and gpujs once, the others 3 times without a
          // warm-up. M: 5 runs after a warm-up.
          const large = size.label === 'L';
          const runs = quick || (large && (reference || backend.name === 'gpujs')) ? 1 : large ? 3 : 5;
          if (runs > 1 && !large) await backend.simulate(calc.scenario, calc.simulation);
          const times: number[] = [];
          let growth = 0;
          for (let run = 0; run < runs; run++) {
            const before = sampler.reset();
            const started = performance.now();
            calc.finish(await backend.simulate(calc.scenario, calc.simulation));
            times.push(performance.now() - started);
            growth = Math.max(growth, sampler.peak() - before);
          }
          times.sort((a, b) => a - b);
          const p50 = percentile(times, 50);
          if (reference) referenceP50 = p50;
          const ratio =
            referenceP50 === null ? 'n/a' : reference ? 'baseline' : `${(referenceP50 / p50).toFixed(2)}×`;
          console.log(
            `| ${size.label} | ${calc.name} | ${backend.name} (${backend.detail}) | ${runs} | ${p50.toFixed(0)} | ${percentile(times, 99).toFixed(0)} | ${(growth / MiB).toFixed(0)} | ${ratio} |`,
          );
        }
        // The numpy peer covers the linear books (M, L); MX has options and FX lines it does not model.
        if (numpy !== null && calc.scenario.lines === undefined) {
          if ('missing' in numpy) {
            console.log(
              `| ${size.label} | ${calc.name} | numpy peer: not measured (${numpy.missing}) | | | | | |`,
            );
          } else {
            const runs = quick || size.label === 'L' ? 1 : 3;
            const times = (await numpyPeer(calc.scenario, calc.simulation, runs)).sort((a, b) => a - b);
            const p50 = percentile(times, 50);
            const ratio = referenceP50 === null ? 'n/a' : `${(referenceP50 / p50).toFixed(2)}×`;
            console.log(
              `| ${size.label} | ${calc.name} | numpy peer (numpy ${numpy.version}, python3 child process, same decomposition) | ${runs} | ${p50.toFixed(0)} | ${percentile(times, 99).toFixed(0)} | n/a | ${ratio} |`,
            );
          }
        }
      }
    }
  } finally {
    await sampler.stop();
    for (const backend of backends) await backend.close();
  }
  console.log(
    'Targets on 2 cores (issue 12): M p50 ≤ 100 ms, L p50 ≤ 2 s, MX p50 ≤ 200 ms, L peak RSS growth ≤ 256 MiB.',
  );
  console.log(
    `Load average at the end (1/5/15 min): ${load()}. gpu.js GPU path: not measured (no GPU here).`,
  );
}
