import type { Actor } from '../audit/audit-trail';
import type { Database } from '../db/database';
import { createEntity, deleteEntity, type EntityRecord } from '../entities/entity-store';
import { checkStorableFields } from '../entities/storable-json';
import { Conflict, InvalidInput, NotFound } from '../errors';
import { isId } from '../ids';
import { INTEGRATION, INTEGRATION_TYPES, type IntegrationType } from './integration-kind';

export interface IntegrationInput {
  name?: unknown;
  description?: unknown;
  tags?: unknown;
  type?: unknown;
}

function checkIntegrationType(value: unknown): IntegrationType {
  if (!(INTEGRATION_TYPES as readonly unknown[]).includes(value)) {
    throw new InvalidInput(`type is required: one of ${INTEGRATION_TYPES.join(', ')}.`);
  }
  return value as IntegrationType;
}

export async function createIntegration(
  db: Database,
  actor: Actor,
  input: IntegrationInput,
): Promise<EntityRecord> {
  const { name, description, tags, type } = input;
  checkStorableFields({ name, description, tags });
  return createEntity(db, actor, INTEGRATION, {
    name,
    description,
    tags,
    body: { type: checkIntegrationType(type) },
  });
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
 * Refused (409) while any workflow's FILE_RECEIVED trigger names the integration, enabled or not: a
 * disabled one enabled later would point at nothing. The row lock orders this against webhook
 * posts, which hold a share lock on the integration while they store a payload; the stored
 * payloads go with the integration (ON DELETE CASCADE).
 */
export async function deleteIntegration(
  db: Database,
  actor: Actor,
  id: string,
): Promise<{ deleted: true; id: string; name: string }> {
  if (!isId('integration', id)) throw new NotFound(`Integration ${id} not found.`);
  return db.transaction(async (trx) => {
    const locked = await trx('entities')
      .where({ account_id: actor.principal.accountId, kind: INTEGRATION.kind, id })
      .forUpdate()
      .first('id');
    if (!locked) throw new NotFound(`Integration ${id} not found.`);
    const referencing = await workflowsTriggeredBy(trx, actor.principal.accountId, id, {
      enabledOnly: false,
    });
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
    const record = await deleteEntity(trx, actor, INTEGRATION, id);
    return { deleted: true as const, id: record.id, name: record.name };
  });
}
