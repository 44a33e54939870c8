import { rm } from 'node:fs/promises';
import { testServices } from './global-setup';

/** Stops what global setup started (nothing when it reused servers) and removes its data folder. */
export default async function globalTeardown(): Promise<void> {
  const services = testServices();
  if (!services) return;
  const results = await Promise.allSettled([services.postgres?.stop(), services.temporal?.stop()]);
  services.postgres = null;
  services.temporal = null;
  if (services.dataDir !== null) await rm(services.dataDir, { recursive: true, force: true });
  services.dataDir = null;
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) throw failed.reason;
}
