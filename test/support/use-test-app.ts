import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Database } from '../../engine/platform/database';
import { createTestAccount, createTestApp, type TestAccount, type TestApp } from './test-app';
import { createTestDatabase } from './test-database';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
type AppOptions = NonNullable<Parameters<typeof createTestApp>[1]>;

/** What most API suites share: a fresh database, the real app on it, and one account. */
export interface TestAppContext {
  /** The suite's own database (a fresh one, dropped after the suite). */
  readonly db: Database;
  /** Its connection URL (for child processes such as the CLI). */
  readonly databaseUrl: string;
  readonly t: TestApp;
  readonly app: FastifyInstance;
  /** An account created for the suite, with an owner and an API key. */
  readonly account: TestAccount;
  /** `app.inject` with `who`'s Bearer credentials (the suite's account by default). */
  call(method: Method, url: string, payload?: object, who?: TestAccount): Promise<LightMyRequestResponse>;
}

/**
 * Registers the suite's beforeAll (fresh database, real app, account) and afterAll (close, drop),
 * and answers a context whose fields are readable once beforeAll has run (in tests and hooks).
 * `setUp` runs after the app is ready, inside the same beforeAll (e.g. to load market data first).
 */
export function useTestApp(
  options: AppOptions & { setUp?: (context: TestAppContext) => Promise<void> } = {},
): TestAppContext {
  const { setUp, ...appOptions } = options;
  let state: {
    database: Awaited<ReturnType<typeof createTestDatabase>>;
    t: TestApp;
    account: TestAccount;
  } | null = null;
  const ready = () => {
    if (state === null)
      throw new Error('useTestApp: read the context inside tests or hooks, not at load time.');
    return state;
  };
  const context: TestAppContext = {
    get db() {
      return ready().database.db;
    },
    get databaseUrl() {
      return ready().database.url;
    },
    get t() {
      return ready().t;
    },
    get app() {
      return ready().t.app;
    },
    get account() {
      return ready().account;
    },
    call(method, url, payload, who) {
      const { t, account } = ready();
      return t.app.inject({ method, url, payload, headers: { authorization: (who ?? account).bearer } });
    },
  };
  beforeAll(async () => {
    const database = await createTestDatabase();
    try {
      const t = await createTestApp(database.db, appOptions);
      const account = await createTestAccount(database.db);
      state = { database, t, account };
    } catch (error) {
      await database.drop();
      throw error;
    }
    await setUp?.(context);
  });
  afterAll(async () => {
    if (state === null) return;
    await state.t.close();
    await state.database.drop();
    state = null;
  });
  return context;
}
