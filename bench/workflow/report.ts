/**
 * The workflow bench's printed tables: what ran where, latency one run at a time, sustained runs per
 * second with the CPU per run, where a run's time goes, and issue 33's targets beside today's figures.
 */
import os from 'node:os';
import { TEMPORAL_CLI_VERSION } from '../../ops/embedded/temporal-dev-server';
import { percentile } from '../measure';
import type { LatencyResults, LoadResults } from './measure-runs';
import { type BenchOptions, IN_FLIGHT, type Sizes } from './options';
import type { BenchServices } from './start-services';

const fmt = (ms: number) => ms.toFixed(1);
export const loadavg = () =>
  os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');
const percentiles = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
};
const ratio = (value: number, base: number, digits = 1) => `×${(value / base).toFixed(digits)}`;

function printSegments(segments: Map<string, number[]>): void {
  console.log('| segment | p50 ms | p99 ms |');
  console.log('|---|---|---|');
  for (const [label, values] of segments) {
    const { p50, p99 } = percentiles(values);
    console.log(`| ${label} | ${fmt(p50)} | ${fmt(p99)} |`);
  }
}

/** What ran where: machine, services, client. */
export function reportSetup(options: BenchOptions, services: BenchServices, loadAtStart: string): void {
  const cpus = os.cpus();
  console.log(
    `\nWorkflow runs: STARTER → BASIC → ENDER (one tiny isolated-vm script each) through the API, ` +
      `beside a bare Temporal workflow of 3 no-op activities`,
  );
  console.log(
    `Machine: ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${os.platform()} ${os.release()}, ` +
      `Node ${process.version}; load average ${loadAtStart} at start, ${loadavg()} at the end`,
  );
  console.log(
    `Services: embedded PostgreSQL, Temporal dev server (temporal CLI ${TEMPORAL_CLI_VERSION}, ` +
      `${options.temporalInMemory ? 'in memory' : 'SQLite file'}) ` +
      `started in ${services.servicesSeconds.toFixed(1)} s; both Temporal Workers (createTemporalWorker and the ` +
      `bare one) in ${services.host.where}, ready in ${services.workersSeconds.toFixed(1)} s`,
  );
  console.log(
    `Client: fetch over HTTP to the Fastify app on ${services.baseUrl} with an API key; polls every ${options.pollMs} ms; ` +
      `${options.sizes.warmUpRuns} warm-up runs each${options.quick ? '; --quick' : ''}`,
  );
}

export function reportLatency(sizes: Sizes, latency: LatencyResults): void {
  const { serviceLatency, waitLatency, bareLatency, segments, latencySeconds } = latency;
  const bareResult = percentiles(bareLatency.map((x) => x.resultMs));
  const fairBare = percentiles(latency.fairBare.map((x) => x.resultMs));
  const row = (label: string, values: number[], vsBare: string) => {
    const { p50, p99 } = percentiles(values);
    console.log(`| ${label} | ${fmt(p50)} | ${fmt(p99)} | ${vsBare} |`);
  };
  console.log(
    `\nLatency, one run at a time: ${sizes.latencyRuns} runs of each case below, interleaved ` +
      `(${latencySeconds.toFixed(1)} s)`,
  );
  console.log('| case | p50 ms | p99 ms | p50 vs bare |');
  console.log('|---|---|---|---|');
  console.log("| **issue 20: both clocks at Temporal's completion** | | | |");
  row(
    'bare, 3 local activities: client.workflow.start() answered',
    latency.fairBare.map((x) => x.startedMs),
    '',
  );
  row(
    'bare, 3 local activities: handle.result() resolved',
    latency.fairBare.map((x) => x.resultMs),
    'baseline',
  );
  row(
    `bare, started eagerly in its worker's process (${latency.fairEagerBare.filter((x) => x.eagerly).length} of ${latency.fairEagerBare.length} eagerly): start answered`,
    latency.fairEagerBare.map((x) => x.startedMs),
    '',
  );
  row(
    "bare, started eagerly in its worker's process: handle.result() resolved",
    latency.fairEagerBare.map((x) => x.resultMs),
    ratio(percentiles(latency.fairEagerBare.map((x) => x.resultMs)).p50, fairBare.p50, 2),
  );
  row(
    'service: POST /run answered 202',
    latency.fairService.map((x) => x.startedMs),
    '',
  );
  row(
    "service: handle.result() on the run's wfex_… workflow resolved",
    latency.fairService.map((x) => x.resultMs),
    ratio(percentiles(latency.fairService.map((x) => x.resultMs)).p50, fairBare.p50, 2),
  );
  row(
    "service: the same, vs the bare workflow started eagerly in its worker's process",
    latency.fairService.map((x) => x.resultMs),
    ratio(
      percentiles(latency.fairService.map((x) => x.resultMs)).p50,
      percentiles(latency.fairEagerBare.map((x) => x.resultMs)).p50,
      2,
    ),
  );
  console.log(
    "| **issue-6 figures (kept): bare of 3 regular activities; service clocks at the database or the client's poll** | | | |",
  );
  row(
    'bare: client.workflow.start() answered',
    bareLatency.map((x) => x.startedMs),
    '',
  );
  row(
    'bare: handle.result() resolved',
    bareLatency.map((x) => x.resultMs),
    'baseline',
  );
  row(
    'service: POST /run answered 202',
    serviceLatency.map((x) => x.acceptedMs),
    '',
  );
  row(
    'service: ENDER ended_at (DB)',
    serviceLatency.map((x) => x.enderDoneMs),
    ratio(percentiles(serviceLatency.map((x) => x.enderDoneMs)).p50, bareResult.p50),
  );
  row(
    'service: run ended_at (DB, finishRun)',
    serviceLatency.map((x) => x.runClosedMs),
    ratio(percentiles(serviceLatency.map((x) => x.runClosedMs)).p50, bareResult.p50),
  );
  row(
    'service: SUCCEEDED seen by polling',
    serviceLatency.map((x) => x.observedMs),
    ratio(percentiles(serviceLatency.map((x) => x.observedMs)).p50, bareResult.p50),
  );
  row(
    'service: SUCCEEDED answered to a GET with wait_seconds (separate runs)',
    waitLatency.map((x) => x.observedMs),
    ratio(percentiles(waitLatency.map((x) => x.observedMs)).p50, bareResult.p50),
  );
  row(
    'service: polling overhead (seen − run ended_at)',
    serviceLatency.map((x) => x.observedMs - x.runClosedMs),
    '',
  );
  const meanPolls = serviceLatency.reduce((sum, x) => sum + x.polls, 0) / serviceLatency.length;
  console.log(`(${meanPolls.toFixed(1)} polls per run on average)`);

  console.log(
    `\nWhere a service run's time goes (the same ${sizes.latencyRuns} runs; the workers' started_at and ` +
      `ended_at, ms resolution; bare handle.result() p50 ÷ 3 activities: ${fmt(bareResult.p50 / 3)} ms)`,
  );
  printSegments(segments);
  console.log(
    `\nIssue 33: from the workflow's start (its WorkflowExecutionStarted event) to its first step, the ` +
      `same ${sizes.latencyRuns} runs of each (Temporal's times and the steps' on one machine's clock, ms resolution)`,
  );
  printSegments(latency.firstStep);
}

export function reportLoad(sizes: Sizes, load: LoadResults): void {
  const { serviceLoad, waitLoad, bareLoad } = load;
  const bareRate = sizes.throughputRuns / load.bareLoadSeconds;
  const serviceRate = sizes.throughputRuns / load.serviceLoadSeconds;
  const serviceDbRate = sizes.throughputRuns / load.serviceLoadDbSeconds;
  const fairBareRate = sizes.throughputRuns / load.fairBareSeconds;
  const fairServiceRate = sizes.throughputRuns / load.fairServiceSeconds;
  console.log(`\nSustained: ${sizes.throughputRuns} runs per case, ${IN_FLIGHT} in flight`);
  console.log('| case | seconds | runs/s | p50 ms | p99 ms | runs/s vs bare |');
  console.log('|---|---|---|---|---|---|');
  const loadRow = (label: string, seconds: number, rate: number, values: number[], vsBare: string) => {
    const { p50, p99 } = percentiles(values);
    console.log(
      `| ${label} | ${seconds.toFixed(2)} | ${rate.toFixed(1)} | ${fmt(p50)} | ${fmt(p99)} | ${vsBare} |`,
    );
  };
  console.log('| **issue 20: both to handle.result()** | | | | | |');
  loadRow(
    'bare, 3 local activities: start() to result()',
    load.fairBareSeconds,
    fairBareRate,
    load.fairBareLoad.map((x) => x.resultMs),
    'baseline',
  );
  loadRow(
    'service: POST /run to handle.result() on its wfex_… workflow',
    load.fairServiceSeconds,
    fairServiceRate,
    load.fairServiceLoad.map((x) => x.resultMs),
    ratio(fairServiceRate, fairBareRate, 2),
  );
  console.log('| **issue-6 figures (kept): bare of 3 regular activities** | | | | | |');
  loadRow(
    'bare: start() to result()',
    load.bareLoadSeconds,
    bareRate,
    bareLoad.map((x) => x.resultMs),
    'baseline',
  );
  loadRow(
    'service: POST /run to run ended_at (DB)',
    load.serviceLoadDbSeconds,
    serviceDbRate,
    serviceLoad.map((x) => x.runClosedMs),
    ratio(serviceDbRate, bareRate, 2),
  );
  loadRow(
    'service: POST /run to SUCCEEDED seen by polling',
    load.serviceLoadSeconds,
    serviceRate,
    serviceLoad.map((x) => x.observedMs),
    ratio(serviceRate, bareRate, 2),
  );
  loadRow(
    'service, waiting (wait_seconds): POST /run to run ended_at (DB)',
    load.waitLoadDbSeconds,
    sizes.throughputRuns / load.waitLoadDbSeconds,
    waitLoad.map((x) => x.runClosedMs),
    ratio(sizes.throughputRuns / load.waitLoadDbSeconds, bareRate, 2),
  );
  loadRow(
    'service, waiting (wait_seconds): POST /run to SUCCEEDED answered',
    load.waitLoadSeconds,
    sizes.throughputRuns / load.waitLoadSeconds,
    waitLoad.map((x) => x.observedMs),
    ratio(sizes.throughputRuns / load.waitLoadSeconds, bareRate, 2),
  );
  const perRun = (usage: Array<[string, number]>) =>
    usage.length === 0
      ? 'not measured (no /proc)'
      : `${((1000 * usage.reduce((sum, [, s]) => sum + s, 0)) / sizes.throughputRuns).toFixed(0)} ms: ` +
        usage.map(([name, s]) => `${name} ${((1000 * s) / sizes.throughputRuns).toFixed(0)}`).join(', ');
  console.log(
    `CPU per run (this process tree, user + system): issue 20 service, to handle.result() ${perRun(load.fairServiceCpu)}`,
  );
  console.log(
    `CPU per run (this process tree, user + system): issue 20 bare, 3 local activities ${perRun(load.fairBareCpu)}`,
  );
  console.log(`CPU per run (this process tree, user + system): service, polling ${perRun(load.serviceCpu)}`);
  console.log(`CPU per run (this process tree, user + system): service, waiting ${perRun(load.waitCpu)}`);
  console.log(`CPU per run (this process tree, user + system): bare ${perRun(load.bareCpu)}`);
  console.log(`\nWhere a sustained service run's time goes (the same ${sizes.throughputRuns} runs)`);
  printSegments(load.loadSegments);
  console.log(
    `(polling: ${(serviceLoad.reduce((sum, x) => sum + x.polls, 0) / serviceLoad.length).toFixed(1)} GETs per run; ` +
      `waiting: ${(waitLoad.reduce((sum, x) => sum + x.polls, 0) / waitLoad.length).toFixed(1)})`,
  );
}

/** Issue 33's targets (issue 20's, raised) beside today's figures (both clocks at Temporal's completion). */
export function reportTargets(sizes: Sizes, latency: LatencyResults, load: LoadResults): void {
  const latencyRatio =
    percentiles(latency.fairService.map((x) => x.resultMs)).p50 /
    percentiles(latency.fairBare.map((x) => x.resultMs)).p50;
  const rateRatio = load.fairBareSeconds / load.fairServiceSeconds;
  console.log(
    "\nIssue 33 targets (vs a bare workflow of 3 local activities, both timed to Temporal's completion):",
  );
  console.log('| measure | today | target | met | moonshot | met |');
  console.log('|---|---|---|---|---|---|');
  console.log(
    `| latency p50 vs bare (one run at a time, ${sizes.latencyRuns} each) | ×${latencyRatio.toFixed(2)} | ≤ ×1.2 | ${latencyRatio <= 1.2 ? 'yes' : 'no'} | ≤ ×1.0 | ${latencyRatio <= 1 ? 'yes' : 'no'} |`,
  );
  console.log(
    `| sustained runs/s vs bare (${sizes.throughputRuns} runs, ${IN_FLIGHT} in flight) | ×${rateRatio.toFixed(2)} | ≥ ×0.9 | ${rateRatio >= 0.9 ? 'yes' : 'no'} | ≥ ×1.0 | ${rateRatio >= 1 ? 'yes' : 'no'} |`,
  );
  const firstStep = latency.firstStep.get('service: workflow started → STARTER started_at');
  if (firstStep !== undefined) {
    const gap = percentiles(firstStep).p50;
    console.log(
      `| workflow started → first step started, p50 (Temporal's start event → STARTER started_at) | ${gap.toFixed(0)} ms | a few ms (≤ 5) | ${gap <= 5 ? 'yes' : 'no'} | | |`,
    );
  }
  const eagerRatio =
    percentiles(latency.fairService.map((x) => x.resultMs)).p50 /
    percentiles(latency.fairEagerBare.map((x) => x.resultMs)).p50;
  // The strongest fair baseline since runs start eagerly: the bare workflow started the same way.
  console.log(
    `| latency p50 vs the bare workflow started eagerly in its worker's process, as ours now starts | ×${eagerRatio.toFixed(2)} | ≤ ×1.2 | ${eagerRatio <= 1.2 ? 'yes' : 'no'} | ≤ ×1.0 | ${eagerRatio <= 1 ? 'yes' : 'no'} |`,
  );
}
