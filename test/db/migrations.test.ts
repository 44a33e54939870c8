import { randomBytes } from 'node:crypto';
import knexFactory from 'knex';
import { connectDatabase, migrateLatest } from '../../engine/platform/database';

describe('migrations', () => {
  test('two processes migrating at once: one applies, the other waits and finds nothing to do', async () => {
    const admin = knexFactory({
      client: 'pg',
      connection: process.env.TEST_DATABASE_ADMIN_URL!,
      pool: { min: 0, max: 1 },
    });
    const name = `pas_migrate_${randomBytes(5).toString('hex')}`;
    await admin.raw(`CREATE DATABASE ${name}`);
    const url = new URL(process.env.TEST_DATABASE_ADMIN_URL!);
    url.pathname = `/${name}`;
    const a = connectDatabase(url.toString(), 2);
    const b = connectDatabase(url.toString(), 2);
    try {
      const [first, second] = await Promise.all([migrateLatest(a), migrateLatest(b)]);
      expect([...first, ...second]).toEqual([
        '20261121000000_foundation',
        '20261122000000_entities',
        '20261122010000_files',
        '20261122020000_workflows',
        '20261122030000_market_data',
        '20261123000000_integrations',
        '20261123010000_builtin_templates',
        '20261123020000_sdk_journal',
        '20261124010000_calculation_backend',
        '20261124020000_execution_retries',
        '20261124020000_run_outbox',
        '20261124030000_credential_notify',
        '20261124040000_rate_limit_unlogged',
        '20261125000000_run_end_notify',
        '20261126010000_user_cache',
        '20261126030000_market_generation',
        '20261128000000_console_sessions',
        '20261128010000_template_versions',
        '20261128020000_run_handoff',
        '20261201000000_secrets',
        '20261201010000_outbound_calls',
        '20261202010000_run_retention',
        '20261202030000_audit_partitions',
        '20261202040000_credential_write_marks',
      ]);
      const applied = await a('knex_migrations').select('name');
      expect(applied).toEqual([
        { name: '20261121000000_foundation' },
        { name: '20261122000000_entities' },
        { name: '20261122010000_files' },
        { name: '20261122020000_workflows' },
        { name: '20261122030000_market_data' },
        { name: '20261123000000_integrations' },
        { name: '20261123010000_builtin_templates' },
        { name: '20261123020000_sdk_journal' },
        { name: '20261124010000_calculation_backend' },
        { name: '20261124020000_execution_retries' },
        { name: '20261124020000_run_outbox' },
        { name: '20261124030000_credential_notify' },
        { name: '20261124040000_rate_limit_unlogged' },
        { name: '20261125000000_run_end_notify' },
        { name: '20261126010000_user_cache' },
        { name: '20261126030000_market_generation' },
        { name: '20261128000000_console_sessions' },
        { name: '20261128010000_template_versions' },
        { name: '20261128020000_run_handoff' },
        { name: '20261201000000_secrets' },
        { name: '20261201010000_outbound_calls' },
        { name: '20261202010000_run_retention' },
        { name: '20261202030000_audit_partitions' },
        { name: '20261202040000_credential_write_marks' },
      ]);
      expect(await migrateLatest(a)).toEqual([]);
    } finally {
      await a.destroy();
      await b.destroy();
      await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.destroy();
    }
  });
});
