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
import { createTemporalWorker } from './temporal-worker';

/** Worker process entry: `npm run start:worker` (scale out by running more of these). */
async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl || !config.temporalAddress) {
    throw new Error('The worker process needs DATABASE_URL and TEMPORAL_ADDRESS (npm start sets both).');
  }
  const db = connectDatabase(config.databaseUrl);
  await migrateLatest(db);
  // Both processes publish the built-in templates (idempotent, safe concurrently): whichever starts
  // first, they are there before a workflow can name them.
  await publishBuiltinTemplates(db);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  // Scheduled launches record and start runs through a client, as the API does.
  const clientConnection = await Connection.connect({ address: config.temporalAddress });
  const client = new Client({ connection: clientConnection, namespace: config.temporalNamespace });
  // Scripts' runStressTest and runRiskAttribution simulate here: CALC_BACKEND=auto (the default)
  // times typed, threads (CALC_THREADS, default os.availableParallelism()) and gpujs at start.
  const simulation = await startSimulationEngine(config, db);
  console.log(
    `worker: calculations run on the ${simulation.backend.name} backend (${simulation.backend.detail})`,
  );
  // Python templates' virtualenvs: PENDING ones are built here in the background.
  const pythonEnvironments = path.join(config.dataDir, 'python-environments');
  const builder = startEnvironmentBuilder(db, pythonEnvironments, {
    onError: (error) =>
      console.error(
        'worker: Python environment build pass failed:',
        error instanceof Error ? error.message : error,
      ),
  });
  const worker = await createTemporalWorker({
    db,
    connection,
    client,
    namespace: config.temporalNamespace,
    taskQueue: config.temporalTaskQueue,
    publicUrl: config.publicUrl,
    simulation: simulation.backend,
    pythonEnvironments,
  });
  const stop = () => worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  console.log(`worker: polling task queue ${config.temporalTaskQueue}`);
  // Schedules lost or left over (a save whose commit failed, a restored database) are fixed here;
  // in the background, so a slow Temporal never delays polling.
  reconcileSchedules(db, temporalWorkflowRunner(client, config.temporalTaskQueue).schedules).then(
    (report) => console.log(`worker: schedules reconciled ${JSON.stringify(report)}`),
    (error: unknown) =>
      console.error(
        'worker: schedule reconciliation failed:',
        error instanceof Error ? error.message : error,
      ),
  );
  // run() resolves once shutdown() has drained the in-flight activities.
  await worker.run();
  await builder.stop();
  await clientConnection.close();
  await connection.close();
  await simulation.backend.close();
  await db.destroy();
}

main().catch((error: unknown) => {
  console.error('worker failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
