import type { Database } from '../platform/database';
import { type EntityRecord, findEntity } from '../store/entity-store';
import { resourceKind } from '../store/resource-kind';
import { Conflict, InvalidInput } from '../platform/errors';
import { isId } from '../platform/ids';

/** Only webhook integrations exist for now; the type is stored so others can join later. */
export const INTEGRATION_TYPES = ['WEBHOOK'] as const;
export type IntegrationType = (typeof INTEGRATION_TYPES)[number];

/** Where a webhook integration receives payloads, relative to the server (no credentials in it). */
export function webhookPath(id: string): string {
  return `/v2/integrations/${id}/webhook`;
}

function checkIntegrationType(value: unknown): IntegrationType {
  if (!(INTEGRATION_TYPES as readonly unknown[]).includes(value)) {
    throw new InvalidInput(`type is required: one of ${INTEGRATION_TYPES.join(', ')}.`);
  }
  return value as IntegrationType;
}

/**
 * Workflows of the account (any workspace) whose FILE_RECEIVED trigger names this integration.
 * `enabledOnly` picks those a webhook starts.
 */
export async function workflowsTriggeredBy(
  db: Database,
  accountId: string,
  integrationId: string,
  options: { enabledOnly: boolean },
): Promise<Array<{ id: string; workspace: string; name: string }>> {
  const q = db('entities')
    .select('id', 'workspace', 'name')
    .where({ account_id: accountId, kind: 'workflow' })
    .whereRaw(`body->>'trigger_type' = 'FILE_RECEIVED'`)
    .whereRaw(`body->'trigger_config'->>'integration_id' = ?`, [integrationId])
    .orderBy([
      { column: 'created_at', order: 'asc' },
      { column: 'id', order: 'asc' },
    ]);
  if (options.enabledOnly) q.whereRaw(`body->'trigger_enabled' = 'true'::jsonb`);
  return q;
}

/**
 * A delete is refused (409) while any workflow's FILE_RECEIVED trigger names the integration,
 * enabled or not: a disabled one enabled later would point at nothing. The row lock orders this
 * against webhook posts, which hold a share lock on the integration while they store a payload; the
 * stored payloads go with the integration (ON DELETE CASCADE). An integration that is not there is
 * left to the delete, which answers 404.
 */
async function refuseReferenced(db: Database, accountId: string, id: string): Promise<void> {
  if (!isId('integration', id)) return;
  const locked = await db('entities')
    .where({ account_id: accountId, kind: INTEGRATION.kind, id })
    .forUpdate()
    .first('id');
  if (!locked) return;
  const referencing = await workflowsTriggeredBy(db, accountId, id, { enabledOnly: false });
  if (referencing.length > 0) {
    const shown = referencing
      .slice(0, 5)
      .map((w) => w.id)
      .join(', ');
    const more = referencing.length > 5 ? ` and ${referencing.length - 5} more` : '';
    throw new Conflict(
      `Integration ${id} triggers ${referencing.length} workflow(s) (${shown}${more}); ` +
        'change their trigger or delete them first.',
    );
  }
}

/**
 * Integrations are account-scoped (like custom indexes): the webhook URL names only the id, and a
 * workflow of any workspace of the account may be triggered by one. A `workspace` sent by a client
 * is ignored. Never updated. Kept apart from the webhook receiver so workflow-store can check
 * references without importing the runner (which imports workflow-store).
 */
export const INTEGRATION = resourceKind({
  kind: 'integration',
  entityType: 'Integration',
  noun: 'integration',
  scope: 'account',
  idPrefix: 'integration',
  idField: 'id',
  hasDate: false,
  listOmit: [],
  fields: {
    type: {
      check: checkIntegrationType,
      required: `type is required: one of ${INTEGRATION_TYPES.join(', ')}.`,
      viewDefault: 'WEBHOOK',
    },
  },
  extraView: (record) => ({
    webhook_path: record.body.type === 'WEBHOOK' ? webhookPath(record.id) : null,
  }),
  guard: async (db, actor, id, operation) => {
    if (operation === 'delete') await refuseReferenced(db, actor.principal.accountId, id);
  },
});

/** One integration of the account; another account's (or a malformed id) is simply not found. */
export async function findIntegration(db: Database, accountId: string, id: string): Promise<EntityRecord> {
  return findEntity(db, accountId, INTEGRATION, id);
}
