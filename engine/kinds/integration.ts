import type { Database } from '../platform/database';
import { type EntityRecord, findEntity } from '../store/entity-store';
import { resourceKind } from '../store/resource-kind';
import { Type } from '@sinclair/typebox';
import { Conflict } from '../platform/errors';
import { Nullable } from '../store/field-schemas';
import { isId } from '../platform/ids';

/** Only webhook integrations exist for now; the type is stored so others can join later. */
export const INTEGRATION_TYPES = ['WEBHOOK'] as const;
export type IntegrationType = (typeof INTEGRATION_TYPES)[number];
export const INTEGRATION_ID_PREFIX = 'intg_';

/** Where a webhook integration receives payloads, relative to the server (no credentials in it). */
export function webhookPath(id: string): string {
  return `/v2/integrations/${id}/webhook`;
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
  if (!isId(INTEGRATION_ID_PREFIX, id)) return;
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
const EXTENSION =
  'Extension: the interface has no way to manage integrations. Integrations are account-scoped: ' +
  'seen from every workspace, and a workflow of any workspace may be triggered by one; `workspace` is ignored.';

export const INTEGRATION = resourceKind({
  kind: 'integration',
  plural: 'integrations',
  scope: 'account',
  idPrefix: INTEGRATION_ID_PREFIX,
  idField: 'id',
  hasDate: false,
  listOmit: [],
  fields: {
    type: {
      schema: Type.Union(
        INTEGRATION_TYPES.map((t) => Type.Literal(t)),
        {
          'x-rule': `one of ${INTEGRATION_TYPES.join(', ')}`,
          description: 'WEBHOOK (the only type for now).',
        },
      ),
      view: Type.String({ description: 'WEBHOOK (the only type for now).' }),
      required: `type is required: one of ${INTEGRATION_TYPES.join(', ')}.`,
      viewDefault: 'WEBHOOK',
    },
    // Shown, never stored: extraView computes it.
  },
  extraView: (record) => ({
    webhook_path: record.body.type === 'WEBHOOK' ? webhookPath(record.id) : null,
  }),
  guard: async (db, actor, id, operation) => {
    if (operation === 'delete') await refuseReferenced(db, actor.principal.accountId, id);
  },
  http: {
    extension: EXTENSION,
    extraViewSchema: {
      webhook_path: Nullable(
        Type.String({
          description:
            'Where the webhook receives payloads, relative to the server: POST it with an Authorization ' +
            'header, or append ?key=<AUTH_TOKEN> (that URL is then a secret).',
        }),
      ),
    },
    operations: {
      create: { summary: 'Create an integration (extension)' },
      list: { summary: 'List integrations, most recent first (extension)' },
      retrieve: { summary: 'Retrieve an integration (extension)' },
      update: false,
      delete: {
        summary: 'Delete an integration and its stored payloads (extension)',
        description:
          EXTENSION +
          ' Refused with 409 while a workflow (enabled or not) has a FILE_RECEIVED trigger naming it.',
        errors: [409],
      },
    },
  },
});

/** One integration of the account; another account's (or a malformed id) is simply not found. */
export async function findIntegration(db: Database, accountId: string, id: string): Promise<EntityRecord> {
  return findEntity(db, accountId, INTEGRATION, id);
}
