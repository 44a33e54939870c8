import type { Database } from '../db/database';
import { commonView, type EntityKind, type EntityRecord, findEntity } from '../entities/entity-store';

/** Only webhook integrations exist for now; the type is stored so others can join later. */
export const INTEGRATION_TYPES = ['WEBHOOK'] as const;
export type IntegrationType = (typeof INTEGRATION_TYPES)[number];

/** Where a webhook integration receives payloads, relative to the server (no credentials in it). */
export function webhookPath(id: string): string {
  return `/v2/integrations/${id}/webhook`;
}

/**
 * Integrations are account-scoped entities (like custom indexes): the webhook URL names only the id,
 * and a workflow of any workspace of the account may be triggered by one. A `workspace` sent by a
 * client is ignored. Kept apart from the webhook receiver so workflow-store can check references
 * without importing the runner (which imports workflow-store).
 */
export const INTEGRATION: EntityKind = {
  kind: 'integration',
  entityType: 'Integration',
  noun: 'integration',
  scope: 'account',
  idPrefix: 'integration',
  idField: 'id',
  hasDate: false,
  listOmit: [],
  view: (record: EntityRecord) => ({
    ...commonView(record),
    type: record.body.type ?? 'WEBHOOK',
    webhook_path: record.body.type === 'WEBHOOK' ? webhookPath(record.id) : null,
  }),
};

/** One integration of the account; another account's (or a malformed id) is simply not found. */
export async function findIntegration(db: Database, accountId: string, id: string): Promise<EntityRecord> {
  return findEntity(db, accountId, INTEGRATION, id);
}
