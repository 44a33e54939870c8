/**
 * Workflow benchmark (issue 6): what a run of a three-worker workflow (STARTER → BASIC → ENDER, each
 * a tiny isolated-vm script) costs end to end, on the embedded defaults: an embedded PostgreSQL and
 * a Temporal dev server (SQLite file, as `npm start` runs it) started here, the real Fastify app
 * listening on a port, API-key requests over real HTTP, and a real Temporal Worker from
 * createTemporalWorker. Beside it, on the same Temporal server in the same run: a bare Temporal
 * workflow of three no-op local activities (bench/workflow/bare-workflow.ts, as the service's steps
 * run), started with the client and awaited with handle.result().
 *
 * Issue 20, the fair comparison: both clocks stop at Temporal's completion. A service run is timed
 * from POST /run to `handle.result()` on its own Temporal workflow (id = the run's `wfex_…` id),
 * beside the bare workflow of 3 local activities; the run ends with the target table (issue 33's:
 * latency ≤ 1.2× the bare one, sustained runs/s ≥ 0.9×), after the gap from each workflow's start to
 * its first step (from Temporal's history) and the CPU per run of both. The issue-6 figures stay as
 * labelled second rows: the
 * bare workflow of 3 regular activities (3 activity tasks, 4 workflow tasks) and the service clocks
 * that stop at the database (ENDER's commit, the run's `ended_at`) or at the client's poll.
 *
 * 1. Latency, one run at a time (service and bare runs interleaved): from the run request to
 *    SUCCEEDED seen by polling GET /v2/workflows/:id/workflow_executions every 15 ms; the ENDER's
 *    and the run's `ended_at` read back from PostgreSQL separate the polling overhead, and the
 *    workers' `started_at`/`ended_at` show where the rest goes. Interleaved with them, runs whose
 *    client waits with one GET holding `wait_seconds` (the extension) instead of polling.
 * 2. Sustained runs per second: M runs, IN_FLIGHT at a time, the client polling, then waiting;
 *    with the CPU each kind of process (this one, the worker child, Temporal, PostgreSQL) used
 *    per run, read from /proc, and where a sustained run's time goes.
 *
 * Both Temporal Workers (the service's and the bare one) run in a child process by default, as
 * `npm start` runs the worker beside the API. Flags: `--quick` (fewer runs), `--worker=in-process`
 * (the Workers in the bench process), `--poll-ms=N` (the client's poll interval),
 * `--temporal-db=memory` (the dev server without its SQLite file, as the test suite runs it).
 *
 * The parts live in bench/workflow/: options.ts (flags, sizes), worker-host.ts (the Workers and
 * their child process), start-services.ts, bare-runs.ts (the baselines), service-runs.ts,
 * measure-runs.ts and report.ts (the printed tables and targets).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { findTemporalCli, TemporalCliMissingError } from '../ops/embedded/temporal-dev-server';
import { freePorts } from '../test/support/free-ports';
import { bareRunner, eagerBareRunner } from './workflow/bare-runs';
import { type FairRuns, measureLatency, measureLoad } from './workflow/measure-runs';
import { benchOptions } from './workflow/options';
import { loadavg, reportLatency, reportLoad, reportSetup, reportTargets } from './workflow/report';
import { serviceRunner, serviceTemporalRunner, storeBenchWorkflow } from './workflow/service-runs';
import { startServices } from './workflow/start-services';

const PROJECT_ROOT = path.resolve(__dirname, '..');

export async function runWorkflowBench(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const options = benchOptions(argv);
  const cliPath = findTemporalCli({
    cliPath: process.env.TEMPORAL_CLI_PATH ?? null,
    projectRoot: PROJECT_ROOT,
  });
  if (cliPath === null) throw new TemporalCliMissingError();

  const benchStarted = performance.now();
  const loadAtStart = loadavg();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pas-bench-workflows-'));
  const ports = await freePorts(3);
  const cleanup: Array<() => Promise<unknown>> = [() => rm(dataDir, { recursive: true, force: true })];
  const runCleanup = async () => {
    for (const step of cleanup.reverse()) await step().catch((error: unknown) => console.error(error));
  };
  try {
    const services = await startServices(options, cliPath, dataDir, ports, benchStarted, cleanup);
    const workflowId = await storeBenchWorkflow(services.api);
    const serviceRun = serviceRunner(services.api, workflowId, options.pollMs);
    const bareRun = bareRunner(services.client, services.bareTaskQueue, services.suffix, 'bareWorkflow');
    const fair: FairRuns = {
      serviceRun: serviceTemporalRunner(services.api, services.client, workflowId),
      client: services.client,
      bareRun: bareRunner(services.client, services.bareTaskQueue, services.suffix, 'bareLocalWorkflow'),
      eagerBareRun: eagerBareRunner(services.host, services.client, services.suffix),
    };

    // Warm-up: workflow bundles, isolates, JIT, pools and prepared plans on both sides.
    for (let i = 0; i < options.sizes.warmUpRuns; i++) {
      await serviceRun(i);
      await bareRun();
      await fair.bareRun();
      await fair.eagerBareRun();
    }
    const latency = await measureLatency(services.db, options.sizes, serviceRun, bareRun, fair);
    const load = await measureLoad(services.db, options.sizes, serviceRun, bareRun, fair);

    reportSetup(options, services, loadAtStart);
    reportLatency(options.sizes, latency);
    reportLoad(options.sizes, load);
    reportTargets(options.sizes, latency, load);
    console.log(`(bench total ${((performance.now() - benchStarted) / 1000).toFixed(1)} s)`);
  } catch (error) {
    // Printed before the clean-up: closing the Temporal connection under runs still in flight can
    // end the process from a gRPC retry timer, which would hide what went wrong.
    console.error('workflow bench failed:', error);
    throw error;
  } finally {
    await runCleanup();
  }
}
