import { recordAudit } from '../store/audit-trail';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { checkStorableFields } from '../store/storable-json';
import { InvalidInput, NotFound } from '../platform/errors';
import { randomAlphanumeric } from '../platform/ids';
import { type WorkflowRunner } from './workflow-runner';
import { runWorkflow } from './run-workflow';
import { findIntegration, workflowsTriggeredBy } from '../kinds/integration';

export interface WebhookDelivery {
  /** The parsed body, as the route received it. */
  body: unknown;
  /** The body's JSON text exactly as sent (after any gzip inflation); stored verbatim. */
  text: string;
}

export interface WebhookOutcome {
  integrationId: string;
  payloadId: string;
  /** When the payload was stored, as the workflows receive it: `YYYY-MM-DD HH:MM:SS`, UTC. */
  date: string;
  started: Array<{ workflowId: string; executionId: string }>;
  failed: Array<{ workflowId: string; error: unknown }>;
  message: string;
}

function describeKind(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an empty object';
  return `a ${typeof value}`;
}

/** The spec: a JSON object with at least one key; lists, empty objects and scalars are refused. */
export function checkWebhookBody(body: unknown): Record<string, unknown> {
  if (body === undefined) {
    throw new InvalidInput('The webhook body is required: a JSON object with at least one key.');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body) || Object.keys(body).length === 0) {
    throw new InvalidInput(
      `The webhook body must be a JSON object with at least one key, not ${describeKind(body)}.`,
    );
  }
  // Deep nesting, NUL characters and lone surrogates would fail later in PostgreSQL's jsonb (the
  // run's parameters) as a 500; refuse them here, naming the path.
  checkStorableFields({ body });
  return body as Record<string, unknown>;
}

/** `YYYY-MM-DD HH:MM:SS` in UTC: the `date` script input of the triggered runs. */
export function webhookDate(at: Date): string {
  return at.toISOString().slice(0, 19).replace('T', ' ');
}

/** Webhook actions are automatic: source INTEGRATION, the word System, the caller's credentials. */
function integrationActor(caller: Actor): Actor {
  return {
    principal: { ...caller.principal, userEmail: 'System' },
    source: 'INTEGRATION',
    ip: caller.ip,
    userAgent: caller.userAgent,
  };
}

function summary(started: number, failed: number): string {
  const due = started + failed;
  if (due === 0) return 'Payload received and stored; no enabled workflow is triggered by this integration.';
  if (failed === 0) return `Payload received and stored; started ${started} workflow execution(s).`;
  return (
    `Payload received and stored; started ${started} of ${due} workflow execution(s); ` +
    `${failed} could not start.`
  );
}

/**
 * `POST /integrations/:id/webhook`: stores the payload verbatim with an INTEGRATION audit record,
 * then starts every enabled FILE_RECEIVED workflow of the account that names the integration, with
 * parameters `{body, date}` (they overlay the STARTER's script inputs).
 *
 * Once the payload is stored the delivery has succeeded, even if a run cannot start: answering an
 * error would make the sender retry, storing the payload again and re-running the workflows that
 * did start. The message says how many runs started; a run is accepted while Temporal is down (its
 * start waits in the run outbox, see runWorkflow), and the route logs each workflow that failed.
 */
export async function receiveWebhook(
  db: Database,
  runner: WorkflowRunner,
  caller: Actor,
  integrationId: string,
  delivery: WebhookDelivery,
): Promise<WebhookOutcome> {
  const accountId = caller.principal.accountId;
  const integration = await findIntegration(db, accountId, integrationId);
  if (integration.body.type !== 'WEBHOOK') {
    throw new InvalidInput(`Integration ${integration.id} is not a webhook integration.`);
  }
  const body = checkWebhookBody(delivery.body);
  const actor = integrationActor(caller);
  const receivedAt = new Date();
  const payloadId = 'whpl_' + randomAlphanumeric(25);

  await db.transaction(async (trx) => {
    // A share lock: a concurrent delete of the integration waits for this payload (and then takes
    // it along), or has already happened and this is a 404.
    const still = await trx('entities')
      .where({ account_id: accountId, kind: 'integration', id: integration.id })
      .forShare()
      .first('id');
    if (!still) throw new NotFound(`Integration ${integration.id} not found.`);
    await trx('webhook_payloads').insert({
      id: payloadId,
      account_id: accountId,
      integration_id: integration.id,
      body: delivery.text,
      size: Buffer.byteLength(delivery.text),
      received_at: receivedAt,
    });
    await recordAudit(trx, actor, {
      operation: 'CREATE',
      activity: `Received webhook payload for integration ${integration.name}`,
      entityId: integration.id,
      entityType: 'Integration',
      entityName: integration.name,
      after: { payload_id: payloadId, size: Buffer.byteLength(delivery.text) },
    });
  });

  const date = webhookDate(receivedAt);
  const started: WebhookOutcome['started'] = [];
  const failed: WebhookOutcome['failed'] = [];
  const workflows = await workflowsTriggeredBy(db, accountId, integration.id, { enabledOnly: true });
  for (const workflow of workflows) {
    try {
      const execution = await runWorkflow(db, runner, actor, {
        workflowId: workflow.id,
        workspace: workflow.workspace,
        trigger: 'FILE_RECEIVED',
        parameters: { body, date },
      });
      started.push({ workflowId: workflow.id, executionId: execution.id });
    } catch (error) {
      // One workflow that cannot start must not keep the others from starting.
      failed.push({ workflowId: workflow.id, error });
    }
  }
  return {
    integrationId: integration.id,
    payloadId,
    date,
    started,
    failed,
    message: summary(started.length, failed.length),
  };
}
