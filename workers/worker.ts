import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../engine/config';
import { connectDatabase, migrateLatest } from '../engine/db/database';
import { createTemporalWorker } from './temporal-worker';

/** Worker process entry: `npm run start:worker` (scale out by running more of these). */
async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl || !config.temporalAddress) {
    throw new Error('The worker process needs DATABASE_URL and TEMPORAL_ADDRESS (npm start sets both).');
  }
  const db = connectDatabase(config.databaseUrl);
  await migrateLatest(db);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await createTemporalWorker({
    db,
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.temporalTaskQueue,
    publicUrl: config.publicUrl,
  });
  const stop = () => worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  console.log(`worker: polling task queue ${config.temporalTaskQueue}`);
  // run() resolves once shutdown() has drained the in-flight activities.
  await worker.run();
  await connection.close();
  await db.destroy();
}

main().catch((error: unknown) => {
  console.error('worker failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
