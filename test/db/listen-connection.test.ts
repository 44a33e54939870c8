import { connectionOf, ListenConnection } from '../../engine/platform/listen-connection';
import { createTestDatabase } from '../support/test-database';

/**
 * The LISTEN connection behind the credential cache and waits on runs: it hears its channel only,
 * says when it is down (its users then stop relying on notifications), and comes back by itself.
 */
describe('ListenConnection', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.drop());

  const until = async (condition: () => boolean) => {
    for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 20));
    expect(condition()).toBe(true);
  };

  test('hears its channel, is down when its connection is killed, and comes back listening', async () => {
    const db = database.db;
    const events: string[] = [];
    const listener = new ListenConnection(connectionOf(db), 'pas_test_channel', {
      notified: (payload) => events.push(`notified ${payload}`),
      up: () => events.push('up'),
      down: () => events.push('down'),
    });
    try {
      await until(() => listener.active);
      await db.raw(`SELECT pg_notify('pas_test_channel', 'one'), pg_notify('pas_other_channel', 'no')`);
      await until(() => events.includes('notified one'));
      // Kill its backend, as a database restart would.
      await db.raw(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE pid <> pg_backend_pid() AND query LIKE 'LISTEN pas_test_channel%'`,
      );
      await until(() => events.includes('down'));
      await until(() => listener.active);
      await db.raw(`SELECT pg_notify('pas_test_channel', 'two')`);
      await until(() => events.includes('notified two'));
      expect(events).toEqual(['up', 'notified one', 'down', 'up', 'notified two']);
    } finally {
      await listener.close();
    }
    expect(listener.active).toBe(false);
  });
});
