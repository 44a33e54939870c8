import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { startSimulationEngine } from '../engine/calculations/simulation-engine';
import { loadConfig } from '../engine/platform/config';
import { connectDatabase, migrateLatest } from '../engine/platform/database';
import { publishBuiltinTemplates } from '../engine/worker-templates/builtin-templates';
import { startEnvironmentBuilder } from '../engine/worker-templates/python-environments';
import path from 'node:path';
import { temporalWorkflowRunner } from '../engine/workflows/temporal-workflow-runner';
import { reconcileSchedules } from '../engine/workflows/workflow-schedules';
import { settleStartsBehindReplies } from '../engine/workflows/run-workflow';
import { startRunHandoff } from '../engine/workflows/run-handoff';
import { createTemporalWorker } from './temporal-worker';
import { outboundSettingsOf } from '../engine/integrations/outbound-settings';
import { startAlertDispatcher } from '../engine/workflows/failure-alerts';
import { describePurge, startRunRetention } from '../engine/workflows/run-retention';
import { freeLoopbackPort, setProcessRole, startMetricsServer, watchPool } from '../engine/platform/metrics';
import { logFormatOf, processLog } from '../engine/platform/log-format';
import { installTemporalRuntime } from './temporal-runtime';
import { startTracing, stopTracing, temporalPlugins, traceQueries } from '../engine/platform/tracing';

/** Worker process entry: `npm run start:worker` (scale out by running more of these). */
async function main(): Promise<void> {
  const config = loadConfig();
  const log = processLog(logFormatOf(config), 'worker');
  if (!config.databaseUrl || !config.temporalAddress) {
    throw new Error('The worker process needs DATABASE_URL and TEMPORAL_ADDRESS (npm start sets both).');
  }
  if (config.otelEndpoint !== null) {
    startTracing({ endpoint: config.otelEndpoint, serviceName: config.otelServiceName ?? 'pas-worker' });
  }
  const db = connectDatabase(config.databaseUrl);
  traceQueries(db);
  setProcessRole('worker');
  watchPool(db);
  // The Temporal SDK's own worker metrics (task latencies, schedule-to-start, sticky cache) come from
  // its core on a loopback port of their own, and are served with ours on METRICS_PORT.
  const temporalMetrics = config.metricsPort === null ? null : await freeLoopbackPort();
  installTemporalRuntime({
    format: logFormatOf(config),
    level: config.logLevel,
    metricsPort: temporalMetrics,
  });
  await migrateLatest(db);
  // Both processes publish the built-in templates (idempotent, safe concurrently): whichever starts
  // first, they are there before a workflow can name them.
  await publishBuiltinTemplates(db);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  // Scheduled launches record and start runs through a client, as the API does.
  const clientConnection = await Connection.connect({ address: config.temporalAddress });
  const client = new Client({
    connection: clientConnection,
    namespace: config.temporalNamespace,
    plugins: temporalPlugins(),
  });
  // Scripts' runStressTest and runRiskAttribution simulate here: CALC_BACKEND=auto (the default)
  // times typed, threads (CALC_THREADS, default os.availableParallelism()) and gpujs at start.
  const simulation = await startSimulationEngine(config, db);
  log.info(
    `worker: calculations run on the ${simulation.backend.name} backend (${simulation.backend.detail})`,
  );
  // Python templates' virtualenvs: PENDING ones are built here in the background.
  const pythonEnvironments = path.join(config.dataDir, 'python-environments');
  const builder = startEnvironmentBuilder(db, pythonEnvironments, {
    onError: (error) =>
      log.error(
        `worker: Python environment build pass failed: ${error instanceof Error ? error.message : String(error)}`,
      ),
  });
  const outbound = outboundSettingsOf(config);
  const keyProblem = outbound.keyring.problem();
  if (keyProblem !== null) log.warn(`worker: secrets cannot be read: ${keyProblem}`);
  const worker = await createTemporalWorker({
    db,
    connection,
    client,
    namespace: config.temporalNamespace,
    taskQueue: config.temporalTaskQueue,
    publicUrl: config.publicUrl,
    simulation: simulation.backend,
    pythonEnvironments,
    outbound,
  });
  // Runs handed to workers (run-handoff.ts) start here with Temporal's eager start, on a client that
  // shares the worker's connection: their first workflow task comes back in the start's answer.
  const handoff = startRunHandoff(
    db,
    temporalWorkflowRunner(
      new Client({ connection, namespace: config.temporalNamespace, plugins: temporalPlugins() }),
      config.temporalTaskQueue,
      { eagerStart: true },
    ),
    (message, error) =>
      log.error(`worker: ${message}: ${error instanceof Error ? error.message : String(error)}`),
  );
  // Failure alerts of runs that ended FAILED (engine/workflows/failure-alerts.ts), once each.
  const alerts = startAlertDispatcher(
    {
      db,
      outbound,
      runner: temporalWorkflowRunner(client, config.temporalTaskQueue),
      publicUrl: config.publicUrl,
    },
    {
      onError: (error) =>
        log.error(
          `worker: failure alerts pass failed: ${error instanceof Error ? error.message : String(error)}`,
        ),
    },
  );
  // RUN_RETENTION_DAYS: finished runs past it are removed hourly, by one worker at a time.
  const retention =
    config.runRetentionDays === null
      ? null
      : startRunRetention(db, config.runRetentionDays, {
          onPass: (result) => {
            const { workflow_executions: runs, webhook_payloads: payloads } = result.removed;
            if (runs + payloads > 0) log.info(`worker: run retention ${describePurge(result)}`);
          },
          onError: (error) =>
            log.error(
              `worker: run retention pass failed: ${error instanceof Error ? error.message : String(error)}`,
            ),
        });
  // No new handed-off run is taken once stopping; those already taken start (or stay in the outbox).
  const stop = () => {
    void handoff.close();
    void alerts.close();
    void retention?.close();
    worker.shutdown();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  log.info(`worker: polling task queue ${config.temporalTaskQueue}`);
  const metrics =
    config.metricsPort === null
      ? null
      : await startMetricsServer(config.metricsHost, config.metricsPort, async () =>
          temporalMetrics === null ? '' : (await fetch(`http://127.0.0.1:${temporalMetrics}/metrics`)).text(),
        );
  if (metrics !== null) log.info(`worker: metrics on http://${config.metricsHost}:${metrics.port}/metrics`);
  // Schedules lost or left over (a save whose commit failed, a restored database) are fixed here;
  // in the background, so a slow Temporal never delays polling.
  reconcileSchedules(db, temporalWorkflowRunner(client, config.temporalTaskQueue).schedules).then(
    (report) => log.info('worker: schedules reconciled', { report }),
    (error: unknown) =>
      log.error(
        `worker: schedule reconciliation failed: ${error instanceof Error ? error.message : String(error)}`,
      ),
  );
  // run() resolves once shutdown() has drained the in-flight activities.
  await worker.run();
  await handoff.close();
  await alerts.close();
  await retention?.close();
  // Runs a script started (Workflow.run) whose Temporal start is still going on behind the step.
  await settleStartsBehindReplies();
  await metrics?.close();
  await builder.stop();
  await clientConnection.close();
  await connection.close();
  await simulation.backend.close();
  await db.destroy();
  await stopTracing();
}

main().catch((error: unknown) => {
  console.error('worker failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
