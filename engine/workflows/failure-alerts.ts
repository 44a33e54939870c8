import { performance } from 'node:perf_hooks';
import { httpSettings, smtpSettings } from '../kinds/integration';
import type { Database } from '../platform/database';
import { DomainError } from '../platform/errors';
import { newId } from '../platform/ids';
import { connectionOf, ListenConnection } from '../platform/listen-connection';
import { egressDuration, egressRequests } from '../platform/metrics';
import type { Actor } from '../platform/principal';
import { recordAudit } from '../store/audit-trail';
import { egressFetch, joinUnderBase } from '../integrations/egress-http';
import {
  findNamedIntegration,
  type OutboundSettings,
  StepOutbound,
  vettedAddress,
} from '../integrations/outbound-calls';
import { sendMail } from '../integrations/smtp-send';
import type { WorkflowExecutionRow } from './execution-records';
import { runWorkflow } from './run-workflow';
import type { WorkflowRunner } from './workflow-runner';
import type { OnFailure } from './workflow-store';

/**
 * Failure alerts. When a run ends FAILED and its workflow has `on_failure`, the database writes one
 * `run_alerts` row in the statement that ends the run (migration 20261201010000), and notifies
 * `pas_run_alert`. Each worker process runs a dispatcher: it claims a due row (one statement, `FOR
 * UPDATE SKIP LOCKED`, with a lease), sends the alert, and marks it SENT, or back to PENDING with a
 * backoff, or FAILED after ALERT_ATTEMPTS. A worker killed mid-alert leaves its row SENDING until the
 * lease runs out; another dispatcher then sends it again. The alert carries one id throughout (an
 * HTTP alert's `Idempotency-Key`, an e-mail's Message-ID, a handler run's execution id, fixed when
 * first claimed), so a receiver that saw the first attempt can tell the second is the same alert,
 * and a handler run is started once whatever happens. An alert never fails or retries the run.
 */

export const ALERT_CHANNEL = 'pas_run_alert';
export const ALERT_ATTEMPTS = 5;
/** Longer than the slowest send (an integration's timeout is at most 60 s). */
export const ALERT_LEASE_MS = 90_000;
const BACKOFF_MS = [5_000, 30_000, 120_000, 600_000];

export interface AlertRow {
  execution_id: string;
  account_id: string;
  target: OnFailure;
  status: 'PENDING' | 'SENDING' | 'SENT' | 'FAILED';
  attempts: number;
  detail: Record<string, unknown> | null;
}

export interface AlertDependencies {
  db: Database;
  outbound: OutboundSettings;
  /** Starts handler runs; without it a {workflow_id} alert fails, saying why. */
  runner: WorkflowRunner | null;
  /** The console's address in the alert: `<publicUrl>/console#/runs/<workflow>/<run>`. */
  publicUrl: string;
  /** Lease length (tests shorten it to show a second dispatcher taking over). */
  leaseMs?: number;
}

/** What an alert says: the same content whichever way it goes. */
export interface AlertContent {
  kind: 'workflow_failure';
  alert_id: string;
  workflow: { id: string; name: string; workspace: string };
  run: { id: string; trigger: string; started: number | null; ended: number | null; url: string };
  failed_step: {
    name: string | null;
    worker_id: string | null;
    worker_execution_id: string | null;
    error: string;
  };
}

/** Claims one due alert: PENDING and past its backoff, or SENDING with its lease run out. */
async function claimAlert(db: Database, leaseMs: number): Promise<AlertRow | null> {
  const result = (await db.raw(
    `UPDATE run_alerts SET status = 'SENDING', attempts = attempts + 1, updated_at = now(),
            lease_until = now() + (? * interval '1 millisecond'),
            detail = coalesce(detail, '{}'::jsonb) || jsonb_build_object('alert_id', coalesce(detail->>'alert_id', ?::text))
      WHERE execution_id = (
        SELECT execution_id FROM run_alerts
         WHERE (status = 'PENDING' AND (lease_until IS NULL OR lease_until <= now()))
            OR (status = 'SENDING' AND lease_until <= now())
         ORDER BY updated_at
         LIMIT 1
         FOR UPDATE SKIP LOCKED)
      RETURNING execution_id, account_id, target, status, attempts, detail`,
    [leaseMs, `alert_${newId('workflowExecution').slice(5)}`],
  )) as { rows: AlertRow[] };
  return result.rows[0] ?? null;
}

async function contentOf(
  db: Database,
  alertId: string,
  run: WorkflowExecutionRow,
  publicUrl: string,
): Promise<AlertContent> {
  const step = (await db('worker_executions')
    .where({ workflow_execution_id: run.id, status: 'ERROR' })
    .orderBy('updated_at', 'desc')
    .first('id', 'worker_id', 'worker_name', 'error_message')) as
    { id: string; worker_id: string; worker_name: string; error_message: string | null } | undefined;
  const failure = (run.resume?.failure ?? null) as { message?: string } | null;
  const seconds = (date: Date | null) => (date ? Math.floor(date.getTime() / 1000) : null);
  return {
    kind: 'workflow_failure',
    alert_id: alertId,
    workflow: { id: run.workflow_id, name: run.workflow_name, workspace: run.workspace },
    run: {
      id: run.id,
      trigger: run.trigger,
      started: seconds(run.started_at),
      ended: seconds(run.ended_at),
      url: `${publicUrl}/console#/runs/${encodeURIComponent(run.workflow_id)}/${encodeURIComponent(run.id)}`,
    },
    failed_step: {
      name: step?.worker_name ?? null,
      worker_id: step?.worker_id ?? null,
      worker_execution_id: step?.id ?? null,
      error: step?.error_message ?? failure?.message ?? 'The run failed outside any step.',
    },
  };
}

/** One line a person reads first, in a chat message or a subject. */
function headline(content: AlertContent): string {
  return `Workflow "${content.workflow.name}" failed (run ${content.run.id}, ${content.run.trigger})`;
}

function plainText(content: AlertContent): string {
  const step = content.failed_step;
  return [
    headline(content),
    step.name ? `Failed step: ${step.name}` : 'Failed outside any step',
    `Error: ${step.error}`,
    `Workflow: ${content.workflow.name} (${content.workflow.id}, workspace ${content.workflow.workspace})`,
    `Run: ${content.run.url}`,
  ].join('\n');
}

/** The system acts, as source WORKER, naming the failed run. */
function alertActor(run: WorkflowExecutionRow): Actor {
  return {
    principal: {
      accountId: run.account_id,
      userId: run.user_id ?? '',
      userEmail: 'System',
      isOwner: false,
      permissions: [],
      credentialId: run.credential_id ?? '',
      credentialType: run.credential_type ?? 'API_KEY',
    },
    source: 'WORKER',
    ip: null,
    userAgent: null,
    workflow: { id: run.workflow_id, name: run.workflow_name, executionId: run.id },
  };
}

/** Sends one claimed alert; answers what to record of it. */
async function deliver(
  deps: AlertDependencies,
  alert: AlertRow,
  run: WorkflowExecutionRow,
): Promise<Record<string, unknown>> {
  const alertId = String(alert.detail?.alert_id);
  const content = await contentOf(deps.db, alertId, run, deps.publicUrl);
  const actor = alertActor(run);
  const target = alert.target;
  if ('workflow_id' in target) {
    if (deps.runner === null)
      throw new DomainError(503, 'This worker cannot start runs: no Temporal client.');
    const parameters = run.parameters as Record<string, unknown>;
    if ((parameters?.alert as { kind?: string } | undefined)?.kind === 'workflow_failure') {
      throw new DomainError(
        400,
        'Not started: the failed run was itself a failure handler, and handlers do not chain (no alert loop).',
      );
    }
    const handlerId = String(alert.detail?.handler_execution_id);
    const started = await runWorkflow(
      deps.db,
      deps.runner,
      actor,
      {
        workflowId: target.workflow_id,
        workspace: run.workspace,
        trigger: 'API',
        parameters: { alert: content },
        executionId: handlerId,
      },
      'awaited',
    );
    return { handler_execution_id: started.id, handler_workflow_id: target.workflow_id };
  }
  const integration = await findNamedIntegration(deps.db, run.account_id, target.integration);
  const step = new StepOutbound(deps.db, deps.outbound, actor, run.workspace, 'failure alert', null);
  const type = integration.body.type;
  const began = performance.now();
  const kind = type === 'SMTP' ? 'smtp' : 'http';
  try {
    let detail: Record<string, unknown>;
    if (type === 'HTTP') {
      const settings = httpSettings(integration.body);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'idempotency-key': alertId,
      };
      for (const [name, template] of Object.entries(settings.headers)) {
        headers[name] = await step.fill(template, `header ${name} of integration ${integration.name}`);
      }
      const url = joinUnderBase(
        await step.fill(settings.baseUrl, `base_url of integration ${integration.name}`),
        '',
      );
      // `text` is what Slack's and Teams' incoming webhooks show; the rest is for programs.
      const body = JSON.stringify({ text: plainText(content), ...content });
      const answer = await egressFetch(
        { method: 'POST', url, headers, body, timeoutMs: settings.timeoutMs },
        deps.outbound.policy,
        { lookup: deps.outbound.lookup },
      );
      if (answer.status >= 300) {
        throw new DomainError(502, `${url.host} answered the alert with HTTP ${answer.status}`);
      }
      detail = { integration_id: integration.id, http_status: answer.status, host: url.host };
    } else if (type === 'SMTP') {
      const settings = smtpSettings(integration.body);
      const password =
        settings.passwordSecret === null
          ? null
          : await step.secret(settings.passwordSecret, `password of integration ${integration.name}`);
      const sent = await sendMail(
        {
          host: settings.host,
          port: settings.port,
          security: settings.security,
          username: settings.username,
          password,
          from: settings.from,
          timeoutMs: settings.timeoutMs,
          extraCa: deps.outbound.policy.extraCa,
        },
        {
          to: target.to ?? [],
          cc: [],
          subject: headline(content),
          text: plainText(content),
          html: null,
          attachments: [],
        },
        (host) => vettedAddress(step, host),
        { messageId: `<${alertId}@pas.alerts>` },
      );
      detail = { integration_id: integration.id, message_id: sent.messageId, accepted: sent.accepted };
    } else {
      throw new DomainError(
        400,
        `Integration ${integration.name} is ${String(type)}: alerts go through HTTP or SMTP.`,
      );
    }
    egressRequests.inc({ kind, outcome: 'ok' });
    egressDuration.observe({ kind, outcome: 'ok' }, (performance.now() - began) / 1000);
    await recordAudit(deps.db, actor, {
      operation: 'EXECUTE',
      activity: `Sent failure alert of run ${run.id} through integration ${integration.name}`,
      entityId: integration.id,
      entityType: 'Integration',
      entityName: integration.name,
      workspace: run.workspace,
      after: step.redactor.value(detail),
    });
    return detail;
  } catch (error) {
    const outcome = error instanceof DomainError && error.status === 403 ? 'refused' : 'failed';
    egressRequests.inc({ kind, outcome });
    egressDuration.observe({ kind, outcome }, (performance.now() - began) / 1000);
    if (error instanceof DomainError) throw new DomainError(error.status, step.redactor.text(error.message));
    throw error;
  }
}

/**
 * Claims and sends due alerts until none is left; answers how many were handled. Errors of one
 * alert are recorded on it (and retried later), never thrown.
 */
export async function dispatchDueAlerts(deps: AlertDependencies): Promise<number> {
  let handled = 0;
  for (;;) {
    const alert = await claimAlert(deps.db, deps.leaseMs ?? ALERT_LEASE_MS);
    if (alert === null) return handled;
    handled += 1;
    const run = (await deps.db('workflow_executions').where({ id: alert.execution_id }).first()) as
      WorkflowExecutionRow | undefined;
    if (!run) continue;
    if ('workflow_id' in alert.target && !alert.detail?.handler_execution_id) {
      // The handler's execution id is fixed before the first start, so every attempt starts the same run.
      await deps
        .db('run_alerts')
        .where({ execution_id: alert.execution_id })
        .update({
          detail: deps.db.raw(`detail || jsonb_build_object('handler_execution_id', ?::text)`, [
            newId('workflowExecution'),
          ]),
        });
      alert.detail = (await deps
        .db('run_alerts')
        .where({ execution_id: alert.execution_id })
        .first('detail'))!.detail;
    }
    const onRun = (summary: Record<string, unknown>) =>
      deps
        .db('workflow_executions')
        .where({ id: run.id })
        .update({
          resume: deps.db.raw(`jsonb_set(coalesce(resume, '{}'::jsonb), '{alert}', ?::jsonb)`, [
            JSON.stringify(summary),
          ]),
        });
    try {
      const detail = await deliver(deps, alert, run);
      await onRun({ status: 'SENT', attempts: alert.attempts, target: alert.target, ...detail });
      await deps
        .db('run_alerts')
        .where({ execution_id: alert.execution_id, status: 'SENDING' })
        .update({
          status: 'SENT',
          lease_until: null,
          updated_at: new Date(),
          detail: deps.db.raw(`detail || ?::jsonb`, [
            JSON.stringify({ ...detail, sent_at: Math.floor(Date.now() / 1000) }),
          ]),
        });
    } catch (error) {
      const message =
        error instanceof DomainError ? error.message : 'the alert could not be sent (service error)';
      // A refusal of the policy or the rules will not change by itself: no retry.
      const final =
        alert.attempts >= ALERT_ATTEMPTS ||
        (error instanceof DomainError && error.status < 500 && error.status !== 429);
      await onRun({
        status: final ? 'FAILED' : 'RETRYING',
        attempts: alert.attempts,
        target: alert.target,
        error: message,
      });
      await deps
        .db('run_alerts')
        .where({ execution_id: alert.execution_id, status: 'SENDING' })
        .update({
          status: final ? 'FAILED' : 'PENDING',
          lease_until: final
            ? null
            : new Date(Date.now() + BACKOFF_MS[Math.min(alert.attempts - 1, BACKOFF_MS.length - 1)]!),
          updated_at: new Date(),
          detail: deps.db.raw(`detail || ?::jsonb`, [
            JSON.stringify({ error: message, attempts: alert.attempts }),
          ]),
        });
    }
  }
}

export interface AlertDispatcher {
  close(): Promise<void>;
}

/**
 * The worker's dispatcher: woken by each new alert (LISTEN pas_run_alert) and every `intervalMs`
 * (alerts due after a backoff, leases run out, notices missed while the connection was down).
 */
export function startAlertDispatcher(
  deps: AlertDependencies,
  options: { intervalMs?: number; onError?: (error: unknown) => void } = {},
): AlertDispatcher {
  let closed = false;
  let running: Promise<void> | null = null;
  let again = false;
  const pass = () => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = dispatchDueAlerts(deps)
      .then(() => undefined)
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        running = null;
        if (again && !closed) {
          again = false;
          pass();
        }
      });
  };
  const listener = new ListenConnection(connectionOf(deps.db), ALERT_CHANNEL, {
    notified: () => pass(),
    up: () => pass(),
    down: () => undefined,
  });
  const timer = setInterval(pass, options.intervalMs ?? 10_000);
  timer.unref();
  return {
    async close() {
      closed = true;
      clearInterval(timer);
      await listener.close();
      await running;
    },
  };
}
