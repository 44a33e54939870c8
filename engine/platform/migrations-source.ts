import type { Knex } from 'knex';
import * as foundation from '../../migrations/20261121000000_foundation';
import * as entities from '../../migrations/20261122000000_entities';
import * as files from '../../migrations/20261122010000_files';
import * as workflows from '../../migrations/20261122020000_workflows';
import * as marketData from '../../migrations/20261122030000_market_data';
import * as integrations from '../../migrations/20261123000000_integrations';
import * as builtinTemplates from '../../migrations/20261123010000_builtin_templates';
import * as sdkJournal from '../../migrations/20261123020000_sdk_journal';
import * as calculationBackend from '../../migrations/20261124010000_calculation_backend';
import * as executionRetries from '../../migrations/20261124020000_execution_retries';
import * as runOutbox from '../../migrations/20261124020000_run_outbox';
import * as credentialNotify from '../../migrations/20261124030000_credential_notify';
import * as rateLimitUnlogged from '../../migrations/20261124040000_rate_limit_unlogged';
import * as runEndNotify from '../../migrations/20261125000000_run_end_notify';
import * as userCache from '../../migrations/20261126010000_user_cache';
import * as marketGeneration from '../../migrations/20261126030000_market_generation';
import * as consoleSessions from '../../migrations/20261128000000_console_sessions';
import * as templateVersions from '../../migrations/20261128010000_template_versions';
import * as runHandoff from '../../migrations/20261128020000_run_handoff';
import * as secrets from '../../migrations/20261201000000_secrets';
import * as outboundCalls from '../../migrations/20261201010000_outbound_calls';
import * as runRetention from '../../migrations/20261202010000_run_retention';
import * as auditPartitions from '../../migrations/20261202030000_audit_partitions';
import * as credentialWriteMarks from '../../migrations/20261202040000_credential_write_marks';

/**
 * Migrations are listed here rather than discovered on disk, so they load the same way under
 * tsx, jest and a bundled build. Append new ones; never reorder or edit an applied one.
 */
const MIGRATIONS: ReadonlyArray<[string, Knex.Migration]> = [
  ['20261121000000_foundation', foundation],
  ['20261122000000_entities', entities],
  ['20261122010000_files', files],
  ['20261122020000_workflows', workflows],
  ['20261122030000_market_data', marketData],
  ['20261123000000_integrations', integrations],
  ['20261123010000_builtin_templates', builtinTemplates],
  ['20261123020000_sdk_journal', sdkJournal],
  ['20261124010000_calculation_backend', calculationBackend],
  ['20261124020000_execution_retries', executionRetries],
  ['20261124020000_run_outbox', runOutbox],
  ['20261124030000_credential_notify', credentialNotify],
  ['20261124040000_rate_limit_unlogged', rateLimitUnlogged],
  ['20261125000000_run_end_notify', runEndNotify],
  ['20261126010000_user_cache', userCache],
  ['20261126030000_market_generation', marketGeneration],
  ['20261128000000_console_sessions', consoleSessions],
  ['20261128010000_template_versions', templateVersions],
  ['20261128020000_run_handoff', runHandoff],
  ['20261201000000_secrets', secrets],
  ['20261201010000_outbound_calls', outboundCalls],
  ['20261202010000_run_retention', runRetention],
  ['20261202030000_audit_partitions', auditPartitions],
  ['20261202040000_credential_write_marks', credentialWriteMarks],
];

export const migrationSource: Knex.MigrationSource<[string, Knex.Migration]> = {
  getMigrations: async () => [...MIGRATIONS],
  getMigrationName: ([name]) => name,
  getMigration: async ([, migration]) => migration,
};
