import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../ops/embedded/embedded-postgres';
import {
  type TemporalDevServer,
  TemporalCliMissingError,
  findTemporalCli,
  startTemporalDevServer,
} from '../../ops/embedded/temporal-dev-server';
import { SEARCH_ATTRIBUTES } from '../../engine/workflows/run-input';
import { freePorts } from './free-ports';

/**
 * Jest global setup: one real PostgreSQL and one real Temporal dev server for the whole run. Suites find
 * them through TEST_DATABASE_ADMIN_URL and TEST_TEMPORAL_ADDRESS (and its Web UI, TEST_TEMPORAL_UI_URL),
 * which jest workers inherit. When those are already set (a server someone runs on purpose), they are
 * used as they are and nothing is started.
 */

export const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

export interface TestServices {
  dataDir: string | null;
  postgres: EmbeddedPostgres | null;
  temporal: TemporalDevServer | null;
}

/** Where setup leaves its handles; globalSetup and globalTeardown run in the same process. */
export const TEST_SERVICES_KEY = Symbol.for('pas.test-services');

type GlobalWithServices = typeof globalThis & { [TEST_SERVICES_KEY]?: TestServices };

export function testServices(): TestServices | undefined {
  return (globalThis as GlobalWithServices)[TEST_SERVICES_KEY];
}

function present(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

export default async function globalSetup(): Promise<void> {
  const databaseUrl = process.env.TEST_DATABASE_ADMIN_URL;
  const temporalAddress = process.env.TEST_TEMPORAL_ADDRESS;
  const explicitCli = present(process.env.TEST_TEMPORAL_CLI_PATH) ? process.env.TEST_TEMPORAL_CLI_PATH : null;
  const cliPath = findTemporalCli({ cliPath: explicitCli, projectRoot: PROJECT_ROOT });
  // Suites that drive the CLI themselves (for example to create namespaces) read it from here.
  if (cliPath !== null) process.env.TEST_TEMPORAL_CLI_PATH = cliPath;

  const services: TestServices = { dataDir: null, postgres: null, temporal: null };
  (globalThis as GlobalWithServices)[TEST_SERVICES_KEY] = services;
  if (present(databaseUrl) && present(temporalAddress)) return;

  if (!present(temporalAddress) && cliPath === null) {
    throw new TemporalCliMissingError(
      'The tests need a Temporal server: set TEST_TEMPORAL_ADDRESS, or make the `temporal` CLI available.',
    );
  }
  if (!present(databaseUrl)) {
    await mkdir(path.join(PROJECT_ROOT, '.test-data'), { recursive: true });
    services.dataDir = await mkdtemp(path.join(PROJECT_ROOT, '.test-data', 'run-'));
  }
  const [postgresPort, temporalPort, temporalUiPort] = await freePorts(3);

  // Both take a few seconds; starting them side by side halves the wait before the first suite.
  const [postgres, temporal] = await Promise.allSettled([
    services.dataDir === null
      ? null
      : startEmbeddedPostgres({ dataDir: services.dataDir, port: postgresPort!, database: 'postgres' }),
    present(temporalAddress)
      ? null
      : startTemporalDevServer({
          cliPath: cliPath!,
          dataDir: null,
          host: '127.0.0.1',
          port: temporalPort!,
          uiPort: temporalUiPort!,
          namespace: 'default',
          // The attributes every run carries (docs/architecture.md: findable in the Temporal UI).
          searchAttributes: { ...SEARCH_ATTRIBUTES },
        }),
  ]);
  services.postgres = postgres.status === 'fulfilled' ? postgres.value : null;
  services.temporal = temporal.status === 'fulfilled' ? temporal.value : null;
  if (postgres.status === 'rejected' || temporal.status === 'rejected') {
    await Promise.allSettled([services.postgres?.stop(), services.temporal?.stop()]);
    if (services.dataDir !== null) await rm(services.dataDir, { recursive: true, force: true });
    services.dataDir = null;
    throw postgres.status === 'rejected' ? postgres.reason : (temporal as PromiseRejectedResult).reason;
  }
  if (services.postgres) process.env.TEST_DATABASE_ADMIN_URL = services.postgres.adminUrl;
  if (services.temporal) {
    process.env.TEST_TEMPORAL_ADDRESS = services.temporal.address;
    // The dev server's Web UI, for the browser test of what an operator sees there.
    process.env.TEST_TEMPORAL_UI_URL = services.temporal.uiUrl;
  }
}
