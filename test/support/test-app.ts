import { temporalPlugins } from '../../engine/platform/tracing';
import { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { createAccount, createApiKey, createUser, type NewApiKey } from '../../engine/identity/account-store';
import type { Config } from '../../engine/platform/config';
import type { SimulationEngine } from '../../engine/calculations/simulation-engine';
import type { Database } from '../../engine/platform/database';
import type { ReadReplica } from '../../engine/platform/read-replica';
import { temporalHealthProbe } from '../../engine/platform/dependency-health';
import {
  connectTemporal,
  lazyTemporalConnection,
  temporalWorkflowRunner,
} from '../../engine/workflows/temporal-workflow-runner';
import type { WorkflowRunner } from '../../engine/workflows/workflow-runner';
import { SecretsKeyring } from '../../engine/secrets/master-key';
import { newMasterKey } from '../../engine/secrets/secret-crypto';

/**
 * One master key for everything a test process builds (its apps and its in-process workers), as one
 * installation shares one key.
 */
export const TEST_MASTER_KEY = newMasterKey();
export const TEST_SECRETS = SecretsKeyring.fromKeys([TEST_MASTER_KEY]);

export function temporalAddress(): string {
  const address = process.env.TEST_TEMPORAL_ADDRESS;
  if (!address)
    throw new Error('TEST_TEMPORAL_ADDRESS is not set: run the suite through jest (global setup).');
  return address;
}

export interface TestApp {
  app: FastifyInstance;
  temporal: Client;
  close(): Promise<void>;
}

/** The real app on a real database and a real Temporal client; requests go through inject(). */
export async function createTestApp(
  db: Database,
  options: {
    rateLimitPerMinute?: number;
    maxPayloadBytes?: number;
    responseGzipLevel?: number;
    taskQueue?: string;
    extraRoutes?: (app: FastifyInstance) => void;
    simulation?: SimulationEngine;
    /** Let the health check ask Temporal about this task queue's pollers. */
    healthOfTaskQueue?: string;
    /** Another Temporal frontend, reached lazily (as the API does): it may not be up yet. */
    temporalAddress?: string;
    /**
     * Load-shedding thresholds and its sampling interval. The event-loop-delay check is off unless a
     * test asks for it: a suite that builds a second app in the same process blocks the loop while it
     * compiles, and a loaded CI machine would then see a functional test shed with 503.
     */
    loadShedding?: Partial<
      Pick<Config, 'loadShedEventLoopDelayMs' | 'loadShedPoolQueue' | 'maxConcurrentUploads'>
    >;
    loadSampleIntervalMs?: number;
    /** Wraps the app's Temporal runner (a test that holds or watches runs' starts). */
    runner?: (runner: WorkflowRunner) => WorkflowRunner;
    /** The secrets' master keys; TEST_SECRETS otherwise. */
    secrets?: SecretsKeyring;
    /** A streaming replica of `db` for the lists (test/db/read-replica.test.ts). */
    replica?: ReadReplica;
  } = {},
): Promise<TestApp> {
  const connection = options.temporalAddress
    ? lazyTemporalConnection(options.temporalAddress)
    : await connectTemporal({ address: temporalAddress() });
  const temporal = new Client({ connection, namespace: 'default', plugins: temporalPlugins() });
  const app = await buildApp({
    config: {
      rateLimitPerMinute: options.rateLimitPerMinute ?? 10_000,
      maxPayloadBytes: options.maxPayloadBytes ?? 1024 * 1024,
      logLevel: (process.env.TEST_LOG_LEVEL as 'error' | undefined) ?? 'silent',
      trustProxy: false,
      publicUrl: 'http://pas.test',
      temporalUiUrl: 'http://temporal-ui.test',
      loadShedEventLoopDelayMs: 0,
      ...(options.responseGzipLevel ? { responseGzipLevel: options.responseGzipLevel } : {}),
      ...options.loadShedding,
    },
    ...(options.loadSampleIntervalMs ? { loadSampleIntervalMs: options.loadSampleIntervalMs } : {}),
    db,
    ...(options.replica ? { replica: options.replica } : {}),
    workflows: (options.runner ?? ((runner) => runner))(
      temporalWorkflowRunner(temporal, options.taskQueue ?? 'unused-task-queue'),
    ),
    ...(options.simulation ? { simulation: options.simulation } : {}),
    secrets: options.secrets ?? TEST_SECRETS,
    ...(options.healthOfTaskQueue
      ? { temporalHealth: temporalHealthProbe(temporal, 'default', options.healthOfTaskQueue) }
      : {}),
  });
  options.extraRoutes?.(app);
  await app.ready();
  return {
    app,
    temporal,
    async close() {
      await app.close();
      await connection.close();
    },
  };
}

export interface TestAccount {
  accountId: string;
  ownerId: string;
  key: NewApiKey;
  bearer: string;
}

export async function createTestAccount(
  db: Database,
  email = `owner-${Math.random().toString(36).slice(2)}@example.com`,
): Promise<TestAccount> {
  const { accountId, owner } = await createAccount(db, { name: 'Test account', ownerEmail: email });
  const key = await createApiKey(db, { accountId, userId: owner.id });
  return { accountId, ownerId: owner.id, key, bearer: `Bearer ${key.account_sid}:${key.auth_token}` };
}

export async function createTestSubUser(
  db: Database,
  accountId: string,
  permissions: string[] = ['VIEW USER'],
) {
  const user = await createUser(db, accountId, {
    email: `user-${Math.random().toString(36).slice(2)}@example.com`,
    permissions,
  });
  const key = await createApiKey(db, { accountId, userId: user.id });
  return { user, key, bearer: `Bearer ${key.account_sid}:${key.auth_token}` };
}
