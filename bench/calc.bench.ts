/**
 * Calculation benchmark (issue 5): the stress test and the risk attribution (cvar) on every
 * simulation backend beside the reference, in the same run, for (M) 250 securities × 1 projection ×
 * 100,000 paths and (L) 3000 × 15 × 100,000 on a synthetic market, and (MX) the M book with 20 % of
 * its positions options and 30 % in EUR (issue 11: lines, Black–Scholes per path, FX drivers). Each figure times
 * `finish(await backend.simulate(...))`; the estimation (`prepare*`) is the same for every backend
 * and is timed once. Peak RSS growth is sampled from a helper thread, since the reference and typed
 * backends block the main thread for the whole run.
 *
 * Then the same calculations through the API (bench/calc-api.ts: M and L over HTTP to a running
 * service, with the service's Server-Timing stages, and the analytics of §16–§19 at L);
 * `--api-only` runs just those, `--no-api` leaves them out.
 *
 * `npm run bench -- --quick` runs one repetition per case and skips the L reference;
 * `--size=M` or `--size=L` and `--backends=reference,typed` narrow the run; `--no-numpy` leaves out the
 * numpy peer (bench/numpy-peer.py, run in a child process from a project-local virtualenv with a pinned
 * numpy, created on first use), which runs the same linear scenarios with its own generator.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { BackendName, SimulationBackend } from '../calc/backends/backend';
import { chooseBackend, createBackend } from '../calc/backends/choose';
import type { CalcSecurity } from '../calc/calculation-request';
import { formatDay } from '../calc/market-data';
import { prepareRiskAttribution } from '../calc/risk-attribution';
import type { Scenario, SimulationOptions, SimulationResult } from '../calc/simulation';
import { prepareStressTest } from '../calc/stress-test';
import { syntheticMarket } from '../test/calc/support/synthetic-market';
import { pythonVenv } from '../test/support/python-venv';
import { runCalcOverApi } from './calc-api';

/** The numpy peer's interpreter: a project-local virtualenv with this numpy (pinned). */
const NUMPY = 'numpy==2.3.5';

interface NumpyPeer {
  readonly label: string;
  run(scenario: Scenario, simulation: SimulationOptions, runs: number): Promise<NumpyRun>;
}

interface NumpyRun {
  numpy: string;
  blas: string;
  python: string;
  times_ms: number[];
  checks: { ev_total: number; ev_expected: number; cvar_neg_total: number; cvar_neg_expected: number };
}

/**
 * bench/numpy-peer.py in a child process, or why there is none: a virtualenv needs Python 3.11+
 * and PyPI (or a pip cache) the first time.
 */
async function numpyPeer(): Promise<NumpyPeer | string> {
  let bin: string;
  try {
    bin = await pythonVenv('numpy-peer', [NUMPY], { preferPython: ['python3.13', 'python3.12'] });
  } catch (error) {
    return `not measured (no numpy: ${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
  }
  const script = path.join(__dirname, 'numpy-peer.py');
  return {
    label: NUMPY,
    run: (scenario, simulation, runs) =>
      new Promise<NumpyRun>((resolve, reject) => {
        const child = spawn(path.join(bin, 'python'), [script], { stdio: ['pipe', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (data: Buffer) => (out += data.toString('utf8')));
        child.on('error', reject);
        child.on('close', (code) => {
          if (code !== 0) return reject(new Error(`numpy peer exited with ${code}`));
          resolve(JSON.parse(out) as NumpyRun);
        });
        const numbers = (a: ArrayLike<number>) => Array.from(a);
        child.stdin.end(
          JSON.stringify({
            k: scenario.k,
            regimes: scenario.regimes.map((r) => ({
              probability: r.probability,
              mean: numbers(r.mean),
              root: numbers(r.root),
            })),
            beta: numbers(scenario.beta),
            residualSd: numbers(scenario.residualSd),
            exposure: numbers(scenario.exposure),
            residualMean: scenario.residualMean ? numbers(scenario.residualMean) : null,
            pinned: scenario.pinned,
            paths: simulation.paths,
            tail: simulation.tail,
            seed: 42,
            runs,
          }),
        );
      }),
  };
}

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
function syntheticBook(size: Size) {
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
  return { market, securities, projection };
}

/** The stress test and cvar risk attribution of the synthetic book, estimated once. */
function prepare(size: Size): { calcs: Prepared[]; seconds: number } {
  const { market, securities, projection } = syntheticBook(size);
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
    `\nCalculation benchmark: ${PATHS} paths; machine: ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${threads} cores, ` +
      `${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB, Node ${process.version}, load average (1/5/15 min) ${load()}`,
  );
  const peer = argv.includes('--no-numpy') ? 'not measured (--no-numpy)' : await numpyPeer();
  console.log(
    typeof peer === 'string'
      ? `numpy peer: ${peer}`
      : `numpy peer: bench/numpy-peer.py with ${peer.label} in a child process (same scenario, own generator)`,
  );
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
  const apiOnly = argv.includes('--api-only') || argv.includes('--analytics-only');
  const sampler = rssSampler();
  console.log(
    '| size | calculation | backend | runs | p50 ms | p99 ms | peak RSS growth MiB | p50 vs reference |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  try {
    for (const size of apiOnly ? [] : sizes) {
      const { calcs, seconds } = prepare(size);
      console.log(
        `| ${size.label} | (estimation, once: ${seconds.toFixed(2)} s for ${size.securities} × ${size.projections}) | | | | | | |`,
      );
      for (const calc of calcs) {
        let referenceP50: number | null = null;
        let referenceL: { ev: number; cvarNeg: number } | null = null;
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
            const result = await backend.simulate(calc.scenario, calc.simulation);
            calc.finish(result);
            if (backend.name === 'reference') {
              referenceL = { ev: result.ev.portfolio, cvarNeg: result.cvarNeg.portfolio };
            }
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
        if (typeof peer !== 'string') {
          if (calc.scenario.lines !== undefined) {
            console.log(
              `| ${size.label} | ${calc.name} | numpy peer | | not measured (option and FX lines are not in the peer) | | | |`,
            );
            continue;
          }
          const runs = quick || size.label === 'L' ? 1 : 5;
          const measured = await peer.run(calc.scenario, calc.simulation, runs + (runs > 1 ? 1 : 0));
          // The first of several runs is the warm-up, as for the backends.
          const times = (runs > 1 ? measured.times_ms.slice(1) : measured.times_ms).sort((a, b) => a - b);
          const p50 = percentile(times, 50);
          const ratio = referenceP50 === null ? 'n/a' : `${(referenceP50 / p50).toFixed(2)}×`;
          const { checks } = measured;
          console.log(
            `| ${size.label} | ${calc.name} | numpy peer (numpy ${measured.numpy}, ${measured.blas || 'BLAS unknown'}, Python ${measured.python}) | ${runs} | ${p50.toFixed(0)} | ${percentile(times, 99).toFixed(0)} | (own process) | ${ratio} |`,
          );
          console.log(
            `|  |  | (numpy peer: mean L ${checks.ev_expected.toFixed(2)}, tail-mean L ${checks.cvar_neg_expected.toFixed(2)}, its components summing to ${checks.ev_total.toFixed(2)} and ${checks.cvar_neg_total.toFixed(2)}; reference: ${referenceL === null ? 'not run' : `${referenceL.ev.toFixed(2)} and ${referenceL.cvarNeg.toFixed(2)}`}) | | | | | |`,
          );
        }
      }
    }
    // Issues 20 and 22: the calculations through the API, on the backend the probe chose.
    if (!argv.includes('--no-api')) {
      const chosen = await createBackend(probe.backend.name, { threads });
      try {
        await runCalcOverApi(chosen, {
          runs: quick ? 3 : 5,
          sizes: sizes.map((s) => s.label).filter((s): s is 'M' | 'L' => s === 'M' || s === 'L'),
        });
      } finally {
        await chosen.close();
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
