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
 * `--size=M` (or a list, `--size=M,L`) and `--backends=reference,typed` narrow the run, `--no-analytics`
 * leaves out the analytics through the API; `--no-numpy` leaves out the
 * peers (bench/numpy-peer.py and bench/numba-peer.py, run in child processes from a project-local
 * virtualenv with pinned numpy, numba and scipy, created on first use). Both do the `wasm` kernel's work
 * on the same linear scenarios: float32, its counter-based generator, pass 2 over the tail paths only,
 * 2 threads. The wasm kernel runs 3 (L) or 5 (M) times even with `--quick`, and the run ends with the
 * issue-20 table: the kernel's speed against the numba peer's, same run, beside the targets.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { BackendName, SimulationBackend } from '../calc/backends/backend';
import { chooseBackend, createBackend } from '../calc/backends/choose';
import type { Scenario, SimulationOptions } from '../calc/simulation';
import { pythonVenv } from '../test/support/python-venv';
import { runCalcOverApi } from './calc-api';
import { PATHS, prepare, SIZES } from './calc-books';

/**
 * The peers' interpreter: one project-local virtualenv with these (pinned). numba's `np.dot` needs
 * scipy's BLAS bindings.
 */
const NUMPY = 'numpy==2.3.5';
const NUMBA = 'numba==0.68.1';
const SCIPY = 'scipy==1.16.3';

interface Peer {
  readonly label: string;
  run(scenario: Scenario, simulation: SimulationOptions, runs: number): Promise<PeerRun>;
}

interface PeerRun {
  numpy: string;
  numba?: string;
  blas: string;
  python: string;
  threads: string;
  redraws: string;
  times_ms: number[];
  /** Process CPU time per run (all threads). */
  cpu_ms: number[];
  checks: { ev_total: number; ev_expected: number; cvar_neg_total: number; cvar_neg_expected: number };
}

/**
 * The peers (bench/numpy-peer.py and bench/numba-peer.py) in child processes, or why there are none:
 * a virtualenv needs Python 3.11+ and PyPI (or a pip cache) the first time. Both do the work of the
 * `wasm` kernel: float32, the kernel's counter-based generator addressed by (path, dimension), pass 2
 * over the tail paths only, 2 threads.
 */
async function pythonPeers(): Promise<{ numpy: Peer; numba: Peer } | string> {
  let bin: string;
  try {
    bin = await pythonVenv('numpy-peer', [NUMPY, NUMBA, SCIPY], {
      preferPython: ['python3.13', 'python3.12'],
    });
  } catch (error) {
    return `not measured (no numpy/numba: ${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
  }
  const peer = (label: string, file: string): Peer => ({
    label,
    run: (scenario, simulation, runs) =>
      new Promise<PeerRun>((resolve, reject) => {
        const child = spawn(path.join(bin, 'python'), [path.join(__dirname, file)], {
          stdio: ['pipe', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.on('data', (data: Buffer) => (out += data.toString('utf8')));
        child.on('error', reject);
        child.on('close', (code) => {
          if (code !== 0) return reject(new Error(`${file} exited with ${code}`));
          resolve(JSON.parse(out) as PeerRun);
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
  });
  return { numpy: peer(NUMPY, 'numpy-peer.py'), numba: peer(`${NUMBA}, ${NUMPY}`, 'numba-peer.py') };
}

const MiB = 1024 * 1024;
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
  const sizes = SIZES.filter((s) => (flag('size')?.split(',') ?? [s.label]).includes(s.label));
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
  const peers = argv.includes('--no-numpy') ? 'not measured (--no-numpy)' : await pythonPeers();
  console.log(
    typeof peers === 'string'
      ? `numpy and numba peers: ${peers}`
      : `Peers: bench/numpy-peer.py (${peers.numpy.label}) and bench/numba-peer.py (${peers.numba.label}), each in a ` +
          "child process, same scenario: float32, the wasm kernel's counter-based generator addressed by (path, " +
          'dimension), pass 2 over the tail paths only, 2 threads (the ratio column is their p50 over ours: above 1× we are faster)',
  );
  /** Kernel vs numba peer, per case, for the target table at the end. */
  const versus: { case: string; wasm: number; numba: number; wasmCpu: number; numbaCpu: number }[] = [];
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
  const printVersus = () => {
    if (versus.length === 0) return;
    console.log(
      '\nIssue 20, the kernel vs a numba peer of the same work, same run (target ≥ 1.0× its speed, moonshot ≥ 1.5×):',
    );
    console.log(
      '| case | wasm p50 ms | numba peer p50 ms | wasm speed vs numba | target 1.0× | moonshot 1.5× | CPU p50 ms, wasm / numba (all threads; on a loaded machine the steadier ratio) |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const v of versus) {
      const speed = v.numba / v.wasm;
      console.log(
        `| ${v.case} | ${v.wasm.toFixed(0)} | ${v.numba.toFixed(0)} | ${speed.toFixed(2)}× | ${speed >= 1 ? 'met' : `missed by ${((1 / speed - 1) * 100).toFixed(0)} % of time`} | ${speed >= 1.5 ? 'met' : 'not met'} | ${v.wasmCpu.toFixed(0)} / ${v.numbaCpu.toFixed(0)} (${(v.numbaCpu / v.wasmCpu).toFixed(2)}×) |`,
      );
    }
  };
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
        let wasmP50: number | null = null;
        let wasmCpu = NaN;
        let wasmL: { ev: number; cvarNeg: number } | null = null;
        for (const backend of backends) {
          const reference = backend.name === 'reference';
          if (reference && quick && size.label === 'L') continue;
          // An L run takes about a minute: the reference and gpujs once, the others 3 times without a
          // warm-up. M: 5 runs after a warm-up.
          const large = size.label === 'L';
          // The wasm kernel runs at least 3 times even with --quick: its p50 is set beside the peers'.
          const runs =
            backend.name === 'wasm'
              ? large
                ? 3
                : 5
              : quick || (large && (reference || backend.name === 'gpujs'))
                ? 1
                : large
                  ? 3
                  : 5;
          if (runs > 1 && !large) await backend.simulate(calc.scenario, calc.simulation);
          const times: number[] = [];
          const cpuTimes: number[] = [];
          let growth = 0;
          for (let run = 0; run < runs; run++) {
            const before = sampler.reset();
            const started = performance.now();
            const cpuBefore = process.cpuUsage();
            const result = await backend.simulate(calc.scenario, calc.simulation);
            calc.finish(result);
            if (backend.name === 'reference') {
              referenceL = { ev: result.ev.portfolio, cvarNeg: result.cvarNeg.portfolio };
            }
            if (backend.name === 'wasm')
              wasmL = { ev: result.ev.portfolio, cvarNeg: result.cvarNeg.portfolio };
            times.push(performance.now() - started);
            const cpu = process.cpuUsage(cpuBefore);
            cpuTimes.push((cpu.user + cpu.system) / 1000);
            growth = Math.max(growth, sampler.peak() - before);
          }
          times.sort((a, b) => a - b);
          const p50 = percentile(times, 50);
          if (reference) referenceP50 = p50;
          if (backend.name === 'wasm') {
            wasmP50 = p50;
            wasmCpu = percentile(
              cpuTimes.sort((a, b) => a - b),
              50,
            );
          }
          const ratio =
            referenceP50 === null ? 'n/a' : reference ? 'baseline' : `${(referenceP50 / p50).toFixed(2)}×`;
          console.log(
            `| ${size.label} | ${calc.name} | ${backend.name} (${backend.detail}) | ${runs} | ${p50.toFixed(0)} | ${percentile(times, 99).toFixed(0)} | ${(growth / MiB).toFixed(0)} | ${ratio} |`,
          );
        }
        if (typeof peers !== 'string') {
          if (calc.scenario.lines !== undefined) {
            console.log(
              `| ${size.label} | ${calc.name} | numpy and numba peers | | not measured (option and FX lines are not in the peers) | | | |`,
            );
            continue;
          }
          for (const [name, peer] of [
            ['numpy', peers.numpy],
            ['numba', peers.numba],
          ] as const) {
            // numpy at L takes about 20 s a run: once with --quick. numba compiles before its timed runs.
            const runs = name === 'numpy' && (quick || size.label === 'L') ? 1 : size.label === 'L' ? 3 : 5;
            const warm = name === 'numpy' && runs > 1 ? 1 : 0;
            const measured = await peer.run(calc.scenario, calc.simulation, runs + warm);
            const times = measured.times_ms.slice(warm).sort((a, b) => a - b);
            const p50 = percentile(times, 50);
            const ratio = wasmP50 === null ? 'wasm not run' : `wasm ${(p50 / wasmP50).toFixed(2)}× its speed`;
            if (name === 'numba' && wasmP50 !== null) {
              const cpu = measured.cpu_ms.slice(warm).sort((a, b) => a - b);
              versus.push({
                case: `${size.label} ${calc.name}`,
                wasm: wasmP50,
                numba: p50,
                wasmCpu,
                numbaCpu: percentile(cpu, 50),
              });
            }
            const { checks } = measured;
            const version =
              name === 'numba'
                ? `numba ${measured.numba}, numpy ${measured.numpy}`
                : `numpy ${measured.numpy}`;
            console.log(
              `| ${size.label} | ${calc.name} | ${name} peer (${version}, ${measured.blas || 'scipy BLAS'}, Python ${measured.python}; ${measured.threads}; ${measured.redraws}) | ${runs} | ${p50.toFixed(0)} | ${percentile(times, 99).toFixed(0)} | (own process) | ${ratio} |`,
            );
            console.log(
              `|  |  | (${name} peer: mean L ${checks.ev_expected.toFixed(2)}, tail-mean L ${checks.cvar_neg_expected.toFixed(2)}, its components summing to ${checks.ev_total.toFixed(2)} and ${checks.cvar_neg_total.toFixed(2)}; same scenario in our backends, own seed: wasm ${wasmL === null ? 'not run' : `${wasmL.ev.toFixed(5)} and ${wasmL.cvarNeg.toFixed(5)}`}, reference ${referenceL === null ? 'not run' : `${referenceL.ev.toFixed(5)} and ${referenceL.cvarNeg.toFixed(5)}`}) | | | | | |`,
            );
          }
        }
      }
    }
    printVersus();
    // Issues 20 and 22: the calculations through the API, on the backend the probe chose.
    if (!argv.includes('--no-api') && !argv.includes('--no-analytics')) {
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
