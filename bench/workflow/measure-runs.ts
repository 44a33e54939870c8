/**
 * The workflow bench's measurements: latency, one run at a time with every case interleaved, and
 * sustained runs per second, IN_FLIGHT at a time, with the CPU each kind of process used; and, from
 * Temporal's histories, the gap from each workflow's start to its first step.
 */
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { Database } from '../../engine/platform/database';
import { bounded, cpuDelta, processTreeCpu } from '../measure';
import type { BareRun, BareSample } from './bare-runs';
import { IN_FLIGHT, type Sizes } from './options';
import {
  breakdown,
  type ServiceRun,
  type ServiceSample,
  type TemporalRun,
  withDbTimes,
} from './service-runs';

/** The issue-20 pair: the service and the bare workflow, both timed to Temporal's completion. */
export interface FairRuns {
  serviceRun: TemporalRun;
  bareRun: BareRun;
  /** The same bare workflow, started eagerly in its worker's process. */
  eagerBareRun: BareRun;
  client: Client;
}

export interface LatencyResults {
  serviceLatency: ServiceSample[];
  waitLatency: ServiceSample[];
  bareLatency: BareSample[];
  fairService: BareSample[];
  fairBare: BareSample[];
  fairEagerBare: BareSample[];
  segments: Map<string, number[]>;
  firstStep: Map<string, number[]>;
  latencySeconds: number;
}

const eventMs = (event: temporal.api.history.v1.IHistoryEvent | undefined) =>
  Number(event?.eventTime?.seconds ?? 0) * 1000 + Math.floor((event?.eventTime?.nanos ?? 0) / 1e6);

/**
 * Issue 33: how soon a run's first step starts once Temporal has the workflow. From each history,
 * the WorkflowExecutionStarted event's time and the first workflow task's start (Temporal's
 * dispatch, which both pay); the first step's start is the STARTER's `started_at` for the service
 * and the first local activity's own clock for the bare workflow (one machine, one clock).
 */
async function firstStepGaps(
  db: Database,
  client: Client,
  service: BareSample[],
  bare: BareSample[],
  eagerBare: BareSample[],
): Promise<Map<string, number[]>> {
  const gaps = new Map<string, number[]>();
  const add = (label: string, value: number) => gaps.set(label, [...(gaps.get(label) ?? []), value]);
  const starters = new Map(
    (
      (await db('worker_executions')
        .whereIn(
          'workflow_execution_id',
          service.map((sample) => sample.workflowId!),
        )
        .where({ worker_type: 'STARTER' })
        .select('workflow_execution_id', 'started_at')) as Array<{
        workflow_execution_id: string;
        started_at: Date;
      }>
    ).map((row) => [row.workflow_execution_id, row.started_at.getTime()]),
  );
  const times = async (workflowId: string) => {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const events = history.events ?? [];
    const taskStarted = events.find((event) => event.workflowTaskStartedEventAttributes);
    return { started: eventMs(events[0]), taskStarted: eventMs(taskStarted) };
  };
  for (const sample of bare) {
    const { started, taskStarted } = await times(sample.workflowId!);
    add('bare: workflow started → first workflow task started (Temporal)', taskStarted - started);
    add('bare: workflow started → first local activity started', sample.firstStepAt! - started);
  }
  for (const sample of eagerBare) {
    const { started, taskStarted } = await times(sample.workflowId!);
    add(
      'bare, started eagerly: workflow started → first workflow task started (Temporal)',
      taskStarted - started,
    );
    add(
      'bare, started eagerly: workflow started → first local activity started',
      sample.firstStepAt! - started,
    );
  }
  for (const sample of service) {
    const { started, taskStarted } = await times(sample.workflowId!);
    add('service: workflow started → first workflow task started (Temporal)', taskStarted - started);
    add('service: workflow started → STARTER started_at', starters.get(sample.workflowId!)! - started);
  }
  return gaps;
}

/** 1. Latency, one run at a time; interleaved so that a load spike from elsewhere hits both. */
export async function measureLatency(
  db: Database,
  sizes: Sizes,
  serviceRun: ServiceRun,
  bareRun: BareRun,
  fair: FairRuns,
): Promise<LatencyResults> {
  const latencyStarted = performance.now();
  let serviceLatency: ServiceSample[] = [];
  const waitLatency: ServiceSample[] = [];
  const bareLatency: BareSample[] = [];
  const fairService: BareSample[] = [];
  const fairBare: BareSample[] = [];
  const fairEagerBare: BareSample[] = [];
  for (let i = 0; i < sizes.latencyRuns; i++) {
    // The pair in alternating order: a run's tail on the Temporal server (its completion's
    // visibility and history writes) delays whichever run comes next, so neither side always pays it.
    if (i % 2 === 0) {
      fairService.push(await fair.serviceRun(i));
      fairBare.push(await fair.bareRun());
    } else {
      fairBare.push(await fair.bareRun());
      fairService.push(await fair.serviceRun(i));
    }
    fairEagerBare.push(await fair.eagerBareRun());
    serviceLatency.push(await serviceRun(i));
    waitLatency.push(await serviceRun(i, true));
    bareLatency.push(await bareRun());
  }
  const latencySeconds = (performance.now() - latencyStarted) / 1000;
  serviceLatency = await withDbTimes(db, serviceLatency);
  const segments = await breakdown(db, serviceLatency);
  const firstStep = await firstStepGaps(db, fair.client, fairService, fairBare, fairEagerBare);
  return {
    serviceLatency,
    waitLatency,
    bareLatency,
    fairService,
    fairBare,
    fairEagerBare,
    segments,
    firstStep,
    latencySeconds,
  };
}

export interface LoadResults {
  fairServiceLoad: BareSample[];
  fairServiceSeconds: number;
  fairBareLoad: BareSample[];
  fairBareSeconds: number;
  fairServiceCpu: Array<[string, number]>;
  fairBareCpu: Array<[string, number]>;
  serviceLoad: ServiceSample[];
  serviceLoadSeconds: number;
  serviceLoadDbSeconds: number;
  serviceCpu: Array<[string, number]>;
  loadSegments: Map<string, number[]>;
  waitLoad: ServiceSample[];
  waitLoadSeconds: number;
  waitLoadDbSeconds: number;
  waitCpu: Array<[string, number]>;
  bareLoad: BareSample[];
  bareLoadSeconds: number;
  bareCpu: Array<[string, number]>;
}

/** 2. Runs per second, IN_FLIGHT at a time: polling, then waiting (wait_seconds), then bare. */
export async function measureLoad(
  db: Database,
  sizes: Sizes,
  serviceRun: ServiceRun,
  bareRun: BareRun,
  fair: FairRuns,
): Promise<LoadResults> {
  // 2a. Issue 20: the service and the bare local-activity workflow, both to handle.result().
  const timed = async (run: () => Promise<BareSample>) => {
    const samples: BareSample[] = [];
    const started = performance.now();
    await bounded(sizes.throughputRuns, IN_FLIGHT, async () => {
      samples.push(await run());
    });
    return { samples, seconds: (performance.now() - started) / 1000 };
  };
  let i = 0;
  const fairServiceCpuBefore = await processTreeCpu();
  const fairServiceRun = await timed(() => fair.serviceRun((i += 1)));
  const fairServiceCpu = cpuDelta(fairServiceCpuBefore, await processTreeCpu());
  const fairBareCpuBefore = await processTreeCpu();
  const fairBareRun = await timed(fair.bareRun);
  const fairBareCpu = cpuDelta(fairBareCpuBefore, await processTreeCpu());
  let serviceLoad: ServiceSample[] = [];
  const serviceCpuBefore = await processTreeCpu();
  const serviceLoadStarted = performance.now();
  const serviceLoadWall = Date.now();
  await bounded(sizes.throughputRuns, IN_FLIGHT, async (i) => {
    serviceLoad.push(await serviceRun(i));
  });
  const serviceLoadSeconds = (performance.now() - serviceLoadStarted) / 1000;
  const serviceCpu = cpuDelta(serviceCpuBefore, await processTreeCpu());

  // 2b. The same, the client waiting on each run with wait_seconds instead of polling.
  let waitLoad: ServiceSample[] = [];
  const waitCpuBefore = await processTreeCpu();
  const waitLoadStarted = performance.now();
  const waitLoadWall = Date.now();
  await bounded(sizes.throughputRuns, IN_FLIGHT, async (i) => {
    waitLoad.push(await serviceRun(i, true));
  });
  const waitLoadSeconds = (performance.now() - waitLoadStarted) / 1000;
  const waitCpu = cpuDelta(waitCpuBefore, await processTreeCpu());
  waitLoad = await withDbTimes(db, waitLoad);
  const waitLoadDbSeconds =
    (Math.max(...waitLoad.map((sample) => sample.wallStart + sample.runClosedMs)) - waitLoadWall) / 1000;
  serviceLoad = await withDbTimes(db, serviceLoad);
  const loadSegments = await breakdown(db, serviceLoad);
  const lastClosedWall = Math.max(...serviceLoad.map((sample) => sample.wallStart + sample.runClosedMs));
  const serviceLoadDbSeconds = (lastClosedWall - serviceLoadWall) / 1000;

  const bareLoad: BareSample[] = [];
  const bareCpuBefore = await processTreeCpu();
  const bareLoadStarted = performance.now();
  await bounded(sizes.throughputRuns, IN_FLIGHT, async () => {
    bareLoad.push(await bareRun());
  });
  const bareLoadSeconds = (performance.now() - bareLoadStarted) / 1000;
  const bareCpu = cpuDelta(bareCpuBefore, await processTreeCpu());
  return {
    fairServiceLoad: fairServiceRun.samples,
    fairServiceSeconds: fairServiceRun.seconds,
    fairBareLoad: fairBareRun.samples,
    fairBareSeconds: fairBareRun.seconds,
    fairServiceCpu,
    fairBareCpu,
    serviceLoad,
    serviceLoadSeconds,
    serviceLoadDbSeconds,
    serviceCpu,
    loadSegments,
    waitLoad,
    waitLoadSeconds,
    waitLoadDbSeconds,
    waitCpu,
    bareLoad,
    bareLoadSeconds,
    bareCpu,
  };
}
