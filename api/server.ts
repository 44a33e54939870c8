import { Client } from '@temporalio/client';
import cron from 'node-cron';
import { loadConfig } from '../engine/platform/config';
import { describeSimulationEngine, startSimulationEngine } from '../engine/calculations/simulation-engine';
import { connectDatabase, migrateLatest } from '../engine/platform/database';
import { ReadReplica } from '../engine/platform/read-replica';
import { publishBuiltinTemplates } from '../engine/worker-templates/builtin-templates';
import { expireIdleUploads } from '../engine/files/file-uploads';
import { pruneRateLimitWindows } from '../engine/platform/rate-limiter';
import { pruneExpiredShares } from '../engine/reports/report-store';
import { runAuditMaintenance } from '../engine/store/audit-archive';
import { startRunDispatcher } from '../engine/workflows/run-dispatcher';
import { lazyTemporalConnection, temporalWorkflowRunner } from '../engine/workflows/temporal-workflow-runner';
import { reconcileSchedules } from '../engine/workflows/workflow-schedules';
import { temporalHealthProbe } from '../engine/platform/dependency-health';
import {
  type MetricsServer,
  setProcessRole,
  startMetricsServer,
  watchPool,
} from '../engine/platform/metrics';
import { startTracing, stopTracing, temporalPlugins, traceQueries } from '../engine/platform/tracing';
import { buildApp } from './app';
import { SecretsKeyring } from '../engine/secrets/master-key';

/** API process entry: `npm run start:api` (stateless; scale out by running more of these). */
async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl || !config.temporalAddress) {
    throw new Error('The API process needs DATABASE_URL and TEMPORAL_ADDRESS (npm start sets both).');
  }
  if (config.otelEndpoint !== null) {
    startTracing({ endpoint: config.otelEndpoint, serviceName: config.otelServiceName ?? 'pas-api' });
  }
  const db = connectDatabase(config.databaseUrl);
  traceQueries(db);
  setProcessRole('api');
  watchPool(db);
  await migrateLatest(db);
  // Both processes publish the built-in templates (idempotent, safe concurrently): whichever starts
  // first, they are there before a workflow can name them.
  await publishBuiltinTemplates(db);
  // Lazy: the API starts and accepts runs while Temporal is down (they wait in the run outbox).
  const connection = lazyTemporalConnection(config.temporalAddress);
  const client = new Client({ connection, namespace: config.temporalNamespace, plugins: temporalPlugins() });
  // Before listening: the probe takes about a second and would otherwise compete with requests.
  const simulation = await startSimulationEngine(config, db);
  const workflows = temporalWorkflowRunner(client, config.temporalTaskQueue);
  const secrets = SecretsKeyring.fromConfig(config);
  // Its state changes are logged once the app's logger exists; the first check comes before that.
  let logReplica: (message: string) => void = () => undefined;
  const replicaDb =
    config.databaseReadUrl === null ? null : connectDatabase(config.databaseReadUrl, 10, { quiet: true });
  if (replicaDb) traceQueries(replicaDb);
  const replica = replicaDb
    ? await new ReadReplica(db, replicaDb, {
        onChange: (report) => logReplica(`api: read replica ${report.status}: ${report.detail}`),
      }).start()
    : undefined;
  const app = await buildApp({
    config,
    db,
    replica,
    workflows,
    simulation,
    secrets,
    temporalHealth: temporalHealthProbe(client, config.temporalNamespace, config.temporalTaskQueue),
  });
  if (replica) {
    logReplica = (message) => app.log.warn(message);
    const { status, detail } = await replica.health();
    app.log.info(`api: read replica (DATABASE_READ_URL) ${status}: ${detail}`);
  }
  const keyProblem = secrets.problem();
  if (keyProblem !== null) app.log.warn(`api: secrets cannot be stored or read: ${keyProblem}`);
  app.log.info(
    { backend: describeSimulationEngine(simulation) },
    `api: calculations run on the ${simulation.backend.name} backend (${simulation.backend.detail})`,
  );

  // Process-local housekeeping; harmless when several replicas run it.
  const housekeeping = cron.schedule('* * * * *', () => {
    pruneRateLimitWindows(db).catch((error: unknown) =>
      app.log.warn({ err: error }, 'rate-limit pruning failed'),
    );
    pruneExpiredShares(db).catch((error: unknown) =>
      app.log.warn({ err: error }, 'expired share-link pruning failed'),
    );
    // Multipart uploads idle for 2 hours expire and their bytes are freed.
    expireIdleUploads(db).catch((error: unknown) =>
      app.log.warn({ err: error }, 'expiring idle file uploads failed'),
    );
  });

  // The audit trail's job, at start and daily: partitions for this month and the 3 ahead and, with
  // AUDIT_RETENTION_MONTHS, older months archived and dropped. Not awaited: until it has run, a record
  // of a month without a partition waits in the default one. Replicas share it through a lock.
  const auditSettings = { retentionMonths: config.auditRetentionMonths, archiveDir: config.auditArchiveDir };
  const auditMaintenance = () =>
    runAuditMaintenance(db, auditSettings).then(
      (report) => {
        if (report && (report.partitionsMade.length > 0 || report.archived.length > 0))
          app.log.info({ audit: report }, 'api: audit trail partitions made or months archived');
      },
      (error: unknown) => app.log.error({ err: error }, 'api: audit trail maintenance failed'),
    );
  const auditJob = cron.schedule('17 3 * * *', () => void auditMaintenance());
  void auditMaintenance();

  // Starts the runs a request could not hand to Temporal (down, or this process died after the
  // commit). Here rather than in the worker: every deployment runs the API, and replicas share the
  // outbox safely (claims skip each other's rows).
  const dispatcher = startRunDispatcher(db, workflows, {
    onError: (error) => app.log.warn({ err: error }, 'run dispatch failed'),
  });

  let metrics: MetricsServer | null = null;
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'api: shutting down');
    await housekeeping.stop();
    await auditJob.stop();
    // Leave the load balancer first (api/http/graceful-drain.ts), then stop accepting and let
    // in-flight requests finish.
    await app.drain();
    await app.close();
    // Served until the API has stopped, so a scrape sees the drain; its server must not keep the process alive.
    await metrics?.close();
    await dispatcher.stop();
    await connection.close();
    await simulation.backend.close();
    await replica?.close();
    await db.destroy();
    await stopTracing();
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));

  await app.listen({ port: config.port, host: config.host });
  if (config.metricsPort !== null) {
    metrics = await startMetricsServer(config.metricsHost, config.metricsPort);
    app.log.info(`api: metrics on http://${config.metricsHost}:${metrics.port}/metrics`);
  }
  // Schedules lost or left over (a save whose commit failed, a restored database) are fixed at start.
  reconcileSchedules(db, workflows.schedules).then(
    (report) => app.log.info({ report }, 'api: schedules reconciled'),
    (error: unknown) => app.log.warn({ err: error }, 'api: schedule reconciliation failed'),
  );
}

main().catch((error: unknown) => {
  console.error('api failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
