import { Client, Connection } from '@temporalio/client';
import cron from 'node-cron';
import { loadConfig } from '../engine/config';
import { describeSimulationEngine, startSimulationEngine } from '../engine/calculations/simulation-engine';
import { connectDatabase, migrateLatest } from '../engine/db/database';
import { expireIdleUploads } from '../engine/files/file-uploads';
import { pruneRateLimitWindows } from '../engine/rate-limit/rate-limiter';
import { pruneExpiredShares } from '../engine/reports/report-store';
import { temporalWorkflowRunner } from '../engine/workflows/workflow-runner';
import { buildApp } from './app';

/** API process entry: `npm run start:api` (stateless; scale out by running more of these). */
async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl || !config.temporalAddress) {
    throw new Error('The API process needs DATABASE_URL and TEMPORAL_ADDRESS (npm start sets both).');
  }
  const db = connectDatabase(config.databaseUrl);
  await migrateLatest(db);
  const connection = await Connection.connect({ address: config.temporalAddress });
  const client = new Client({ connection, namespace: config.temporalNamespace });
  // Before listening: the probe takes about a second and would otherwise compete with requests.
  const simulation = await startSimulationEngine(config);
  const app = await buildApp({
    config,
    db,
    workflows: temporalWorkflowRunner(client, config.temporalTaskQueue),
    simulation,
  });
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

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'api: shutting down');
    await housekeeping.stop();
    await app.close(); // stops accepting, lets in-flight requests finish
    await connection.close();
    await simulation.backend.close();
    await db.destroy();
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));

  await app.listen({ port: config.port, host: config.host });
}

main().catch((error: unknown) => {
  console.error('api failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
