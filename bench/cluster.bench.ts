import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { formatDay } from '../calc/market-data';
import { connectDatabase } from '../engine/platform/database';
import { newId } from '../engine/platform/ids';
import { mergeSeries } from '../engine/market-data/price-store';
import { syntheticMarket } from '../test/calc/support/synthetic-market';
import { startTopology, type Topology } from '../test/support/topology';

/**
 * `npm run bench -- cluster [--quick]`: the scale-out topology of docker-compose.yml, run as processes
 * (test/support/topology.ts: the pinned Temporal server on PostgreSQL, migrations, N API and N worker
 * processes with the compose commands, nginx with the compose site), once with one API and one worker
 * and once with two of each. Through nginx it measures sustained workflow runs per second (a
 * three-step workflow, each run's client waiting with `wait_seconds`) and calculation requests per
 * second (the M stress test, 250 positions × 1 projection, 100,000 paths), and the CPU each kind of
 * process used. The one-replica topology is the baseline of the two-replica one: same machine, same
 * work, same run.
 */

const ticksPerSecond = 100; // USER_HZ on Linux

interface ProcStat {
  pid: number;
  parent: number;
  group: number;
  name: string;
  seconds: number;
}

async function procStats(): Promise<ProcStat[]> {
  const out: ProcStat[] = [];
  for (const entry of (await readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({
        pid: Number(entry),
        parent: Number(fields[1]),
        group: Number(fields[2]),
        name,
        // utime and stime, fields 14 and 15 of stat (counted from 3 after the name).
        seconds: (Number(fields[11]) + Number(fields[12])) / ticksPerSecond,
      });
    } catch {
      // ended while we looked
    }
  }
  return out;
}

/**
 * CPU seconds so far by role: each managed process is its own process group (api-1, worker-1,
 * temporal, nginx, …); PostgreSQL's processes are descendants of this process named `postgres`; the
 * rest of this process is the load generator.
 */
async function cpuByRole(topology: Topology): Promise<Map<string, number>> {
  const stats = await procStats();
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const roles = new Map<number, string>();
  for (const proc of [topology.temporal, topology.nginx, ...topology.apis, ...topology.workers]) {
    const role = proc.name.replace(/-\d+$/, '');
    if (proc.pid() > 0) roles.set(proc.pid(), role === 'temporal' ? 'Temporal server' : role);
  }
  const descends = (pid: number): boolean => {
    for (let at = pid, hops = 0; at > 1 && hops < 64; hops++) {
      if (at === process.pid) return true;
      at = byPid.get(at)?.parent ?? 0;
    }
    return false;
  };
  const out = new Map<string, number>();
  const add = (role: string, seconds: number) => out.set(role, (out.get(role) ?? 0) + seconds);
  for (const stat of stats) {
    const role = roles.get(stat.group);
    if (role !== undefined) add(role, stat.seconds);
    else if (stat.name === 'postgres' && descends(stat.pid)) add('PostgreSQL', stat.seconds);
    else if (stat.pid === process.pid) add('load generator (this process)', stat.seconds);
  }
  return out;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? NaN;
}

/** Runs `task` for 0..count-1, `concurrency` at a time. */
async function bounded(count: number, concurrency: number, task: (index: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(count, concurrency) }, async () => {
      while (next < count) {
        const index = next;
        next += 1;
        await task(index);
      }
    }),
  );
}

interface Client {
  request(method: string, url: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

/** Answers shed with 503 and Retry-After (load shedding, a draining replica) are retried, as a client should. */
let shed = 0;

function client(topology: Topology): Client {
  return {
    async request(method, url, body) {
      for (;;) {
        const response = await fetch(`${topology.baseUrl}/v2${url}`, {
          method,
          headers: {
            authorization: topology.account.bearer,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        const retryAfter = response.headers.get('retry-after');
        if (response.status === 503 && retryAfter !== null) {
          shed += 1;
          await new Promise((resolve) => setTimeout(resolve, Number(retryAfter) * 1000));
          continue;
        }
        return { status: response.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
      }
    },
  };
}

function expectStatus(what: string, got: { status: number; body: unknown }, status: number): void {
  if (got.status !== status)
    throw new Error(`${what}: expected ${status}, got ${got.status} ${JSON.stringify(got.body)}`);
}

/** The synthetic M market (250 stocks on one factor, 700 days) stored as `pas market import` would. */
async function storeMarket(topology: Topology) {
  const factors = [{ symbol: 'IND:F0', vol: 0.008 }];
  const stocks = Array.from({ length: 250 }, (_, i) => ({
    symbol: `S${i}`,
    beta: [0.6 + ((i * 7) % 11) / 10],
    residualVol: 0.01 + ((i * 3) % 7) / 1000,
  }));
  const market = syntheticMarket({
    days: 700,
    factors,
    correlation: 0.3,
    stocks,
    turbulence: [{ from: 300, to: 360, multiplier: 2.5 }],
  });
  const db = connectDatabase(topology.databaseUrl, 4);
  try {
    for (const symbol of [...factors.map((f) => f.symbol), ...stocks.map((s) => s.symbol)]) {
      const series = market.source.get(symbol)!;
      const dates: number[] = [];
      const values: number[] = [];
      series.values.forEach((value, i) => {
        if (Number.isNaN(value)) return;
        const day = series.dates[i]!;
        dates.push(typeof day === 'number' ? day : Number(day));
        values.push(value);
      });
      await mergeSeries(db, symbol, { dates, values }, 'bench');
    }
  } finally {
    await db.destroy();
  }
  return {
    date: typeof market.lastDate === 'number' ? formatDay(market.lastDate) : market.lastDate,
    securities: stocks.map((s, i) => ({
      id: `p${i}`,
      symbol: s.symbol,
      quantity: (i % 10 === 0 ? -1 : 1) * (10 + (i % 50)),
    })),
  };
}

interface Phase {
  count: number;
  /** Requests answered 503 with Retry-After (then retried) during the phase. */
  shed: number;
  seconds: number;
  latencies: number[];
  cpu: Map<string, number>;
}

async function measure(
  topology: Topology,
  count: number,
  concurrency: number,
  one: () => Promise<void>,
): Promise<Phase> {
  const latencies: number[] = [];
  const shedBefore = shed;
  const before = await cpuByRole(topology);
  const started = performance.now();
  await bounded(count, concurrency, async () => {
    const at = performance.now();
    await one();
    latencies.push(performance.now() - at);
  });
  const seconds = (performance.now() - started) / 1000;
  const after = await cpuByRole(topology);
  const cpu = new Map([...after].map(([role, s]) => [role, s - (before.get(role) ?? 0)]));
  return { count, seconds, latencies, cpu, shed: shed - shedBefore };
}

interface Round {
  replicas: number;
  workflow: Phase;
  calc: Phase;
}

async function round(replicas: number, quick: boolean): Promise<Round> {
  const started = performance.now();
  const topology = await startTopology({ replicas });
  console.log(
    `  ${replicas} API + ${replicas} worker processes up in ${((performance.now() - started) / 1000).toFixed(1)} s ` +
      `(Temporal ${topology.version} on PostgreSQL, nginx at ${topology.baseUrl})`,
  );
  try {
    const http = client(topology);
    const ids = [newId('worker'), newId('worker'), newId('worker')];
    const created = await http.request('POST', '/workflows', {
      name: 'Cluster bench',
      workers: [
        {
          id: ids[0],
          name: 'Start',
          type: 'STARTER',
          script: 'function main(a) { return { n: 1 }; }',
          next: [ids[1]],
        },
        {
          id: ids[1],
          name: 'Step',
          type: 'BASIC',
          script: 'function main(a) { return { n: a.inputs.n + 1 }; }',
          next: [ids[2]],
        },
        { id: ids[2], name: 'End', type: 'ENDER', script: 'function main(a) { return a.inputs; }' },
      ],
    });
    expectStatus('create the workflow', created, 200);
    const workflowId = (created.body as { workflow: { id: string } }).workflow.id;
    const runOnce = async () => {
      const run = await http.request('POST', `/workflows/${workflowId}/run`, { parameters: {} });
      expectStatus('run', run, 202);
      const id = (run.body as { workflow_execution: { id: string } }).workflow_execution.id;
      for (;;) {
        const seen = await http.request(
          'GET',
          `/workflows/${workflowId}/workflow_executions?workflow_execution_id=${id}&wait_seconds=30`,
        );
        expectStatus('wait for the run', seen, 200);
        const status = (seen.body as { workflow_execution: { run_status: string } }).workflow_execution
          .run_status;
        if (status === 'SUCCEEDED') return;
        if (status !== 'RUNNING') throw new Error(`run ${id} ended ${status}`);
      }
    };
    // Warm: isolates, Temporal's caches, prepared statements on every replica.
    await bounded(6, 3, runOnce);
    const workflow = await measure(topology, quick ? 40 : 150, 10, runOnce);

    const book = await storeMarket(topology);
    const calcOnce = async () => {
      const answer = await http.request('POST', '/calculations/stress_test', {
        securities: book.securities,
        date: book.date,
        projection: ['IND:F0'],
        shock: 'IND:F0',
        magnitude: -0.1,
        horizon: 20,
      });
      expectStatus('stress test', answer, 200);
    };
    await bounded(4, 2, calcOnce);
    const calc = await measure(topology, quick ? 12 : 40, 4, calcOnce);
    return { replicas, workflow, calc };
  } finally {
    await topology.stop();
  }
}

const perSecond = (phase: Phase) => phase.count / phase.seconds;
const ms = (value: number) => `${value.toFixed(0)} ms`;

function cpuLine(phase: Phase, unit: string): string {
  return [...phase.cpu]
    .filter(([, seconds]) => seconds > 0.005)
    .sort((a, b) => b[1] - a[1])
    .map(([role, seconds]) => `${role} ${((seconds * 1000) / phase.count).toFixed(0)}`)
    .join(', ')
    .concat(` (ms of CPU per ${unit})`);
}

export async function runClusterBench(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const quick = argv.includes('--quick');
  const startLoad = os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');
  const cpus = os.cpus();
  console.log('\n## cluster: the compose topology as processes, 1 and 2 API/worker processes\n');
  console.log(
    `Machine: ${cpus[0]?.model ?? 'unknown CPU'}, ${cpus.length} cores, ` +
      `${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, load average ` +
      `${os
        .loadavg()
        .map((v) => v.toFixed(2))
        .join(' ')}${quick ? ' (--quick)' : ''}`,
  );
  const rounds: Round[] = [];
  for (const replicas of [1, 2]) rounds.push(await round(replicas, quick));
  const [one, two] = rounds as [Round, Round];

  console.log('\n| processes | workflow runs/s | run p50 / p99 | stress tests/s | request p50 / p99 |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const r of rounds) {
    console.log(
      `| ${r.replicas} API + ${r.replicas} worker | ${perSecond(r.workflow).toFixed(1)} ` +
        `(${r.workflow.count} runs, 10 in flight) | ${ms(percentile(r.workflow.latencies, 50))} / ` +
        `${ms(percentile(r.workflow.latencies, 99))} | ${perSecond(r.calc).toFixed(2)} ` +
        `(${r.calc.count}, 4 in flight) | ${ms(percentile(r.calc.latencies, 50))} / ${ms(percentile(r.calc.latencies, 99))} |`,
    );
  }
  console.log(
    `| 2 vs 1 | ×${(perSecond(two.workflow) / perSecond(one.workflow)).toFixed(2)} | | ` +
      `×${(perSecond(two.calc) / perSecond(one.calc)).toFixed(2)} | |`,
  );
  console.log(
    `\nAnswers shed (503 with Retry-After, retried after it): ` +
      rounds
        .map((r) => `${r.replicas}+${r.replicas}: workflow ${r.workflow.shed}, stress test ${r.calc.shed}`)
        .join('; '),
  );
  console.log('\nCPU by process kind:');
  for (const r of rounds) {
    console.log(`- ${r.replicas}+${r.replicas}, workflow: ${cpuLine(r.workflow, 'run')}`);
    console.log(`- ${r.replicas}+${r.replicas}, stress test: ${cpuLine(r.calc, 'request')}`);
  }
  const cores = cpus.length;
  const busy = (phase: Phase) =>
    [...phase.cpu].filter(([role]) => !role.startsWith('load generator')).reduce((sum, [, s]) => sum + s, 0) /
    phase.seconds;
  const busyLine = (r: Round) =>
    `${r.replicas}+${r.replicas}: ${busy(r.workflow).toFixed(2)} cores during the workflow runs, ` +
    `${busy(r.calc).toFixed(2)} during the stress tests`;
  console.log(
    `\nWhat limits it: one machine of ${cores} cores carries every process of the topology and the ` +
      `load generator, so a second replica adds throughput only where the first left cores idle ` +
      `(on separate machines each replica brings its own). The service's processes kept busy ` +
      `(CPU seconds per wall second) ${busyLine(one)}; ${busyLine(two)}. A stress test's kernel ` +
      `already spreads over the cores of its process (worker threads), and a workflow run costs the ` +
      `CPU above in each process kind. Load average before the run: ${startLoad}; at the end (this run's own processes included): ${os
        .loadavg()
        .map((v) => v.toFixed(2))
        .join(' ')}.`,
  );
}
