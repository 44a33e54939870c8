import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { dispatchDueAlerts } from '../../engine/workflows/failure-alerts';
import {
  type Execution,
  startHarness,
  TEST_OUTBOUND,
  type WorkflowHarness,
  workerId,
} from './workflow-harness';

/**
 * Failure alerts (`on_failure`): a run that ends FAILED sends its alert once, through an HTTP
 * integration (a chat-style JSON message), an SMTP integration (an e-mail) or a handler workflow
 * (a run with the alert as its parameters). Real worker, real HTTPS and SMTP servers on loopback;
 * the mid-alert kill uses a dispatcher in a process of its own, killed with SIGKILL.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const TLS = path.join(ROOT, 'test', 'fixtures', 'tls');
const FIXTURE = path.join('test', 'workflows', 'fixtures', 'alert-dispatcher-process.ts');

interface Posted {
  path: string;
  idempotencyKey: string | undefined;
  body: Record<string, unknown>;
  answered: boolean;
}

describe('failure alerts (on_failure)', () => {
  let h: WorkflowHarness;
  let server: https.Server;
  let smtp: SMTPServer;
  const posted: Posted[] = [];
  const mails: string[] = [];
  /** Paths whose requests the server holds without answering (the kill test). */
  const holding = new Set<string>();
  let chatId: string;
  let mailId: string;
  let slowChatId: string;

  beforeAll(async () => {
    server = https.createServer(
      { cert: readFileSync(path.join(TLS, 'server.pem')), key: readFileSync(path.join(TLS, 'server.key')) },
      (request, response) => {
        let text = '';
        request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        request.on('end', () => {
          const entry: Posted = {
            path: request.url!,
            idempotencyKey: request.headers['idempotency-key'] as string | undefined,
            body: JSON.parse(text) as Record<string, unknown>,
            answered: false,
          };
          posted.push(entry);
          if (holding.has(request.url!)) return; // never answered: the sender dies first
          entry.answered = true;
          response.end('ok');
        });
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    smtp = new SMTPServer({
      key: readFileSync(path.join(TLS, 'server.key')),
      cert: readFileSync(path.join(TLS, 'server.pem')),
      authOptional: true,
      logger: false,
      onData(stream, _session, callback) {
        let raw = '';
        stream.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
        stream.on('end', () => {
          mails.push(raw);
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()));
    const smtpPort = (smtp.server.address() as AddressInfo).port;

    h = await startHarness({ worker: true, alerts: true });
    const integration = async (body: object) => {
      const res = await h.call('POST', '/v2/integrations', body);
      expect(res.statusCode).toBe(200);
      return res.json().integration.id as string;
    };
    chatId = await integration({
      name: 'Chat',
      type: 'HTTP',
      base_url: `https://localhost:${port}/hooks/chat`,
    });
    slowChatId = await integration({
      name: 'Slow chat',
      type: 'HTTP',
      base_url: `https://localhost:${port}/hooks/held`,
    });
    mailId = await integration({
      name: 'Alert mail',
      type: 'SMTP',
      host: 'localhost',
      port: smtpPort,
      security: 'starttls',
      from: 'PAS alerts <alerts@example.com>',
    });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    await new Promise((resolve) => server?.close(resolve));
    server?.closeAllConnections();
    await new Promise((resolve) => smtp?.close(() => resolve(undefined)));
  });

  /** STARTER → a step that throws → ENDER, with `on_failure`. */
  async function failing(name: string, onFailure: unknown) {
    const ids = [workerId(), workerId(), workerId()];
    const res = await h.call('POST', '/v2/workflows', {
      name,
      on_failure: onFailure,
      workers: [
        { id: ids[0], name: 'Start', type: 'STARTER', next: [ids[1]] },
        {
          id: ids[1],
          name: 'Load prices',
          type: 'BASIC',
          script: 'function main() { throw new Error("vendor feed is empty") }',
          next: [ids[2]],
        },
        { id: ids[2], name: 'End', type: 'ENDER' },
      ],
    });
    expect(res.statusCode).toBe(200);
    return res.json().workflow as { id: string; on_failure: unknown };
  }

  async function runToEnd(workflowId: string): Promise<Execution> {
    const started = await h.run(workflowId, {});
    return h.pollUntilEnded(workflowId, started.id);
  }

  async function alertOf(executionId: string, until: (row: { status: string }) => boolean) {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const row = await h.db('run_alerts').where({ execution_id: executionId }).first();
      if (row && until(row)) return row;
      if (Date.now() > deadline) throw new Error(`alert of ${executionId}: ${JSON.stringify(row)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  test('on_failure is checked and stored: an HTTP or SMTP integration (by id or name), or a handler workflow', async () => {
    const byName = await failing('Checked', { integration: 'Chat' });
    expect(byName.on_failure).toEqual({ integration: chatId });
    const refused: Array<[unknown, string]> = [
      [
        { integration: 'Alert mail' },
        'on_failure.to is required for an SMTP integration: the addresses to alert.',
      ],
      [
        { integration: 'Chat', to: ['a@b.c'] },
        'on_failure.to is for an SMTP integration; an HTTP one posts to its base_url.',
      ],
      [{ integration: 'Nope' }, 'on_failure.integration: integration Nope not found in this account.'],
      [
        { workflow_id: byName.id },
        `on_failure.workflow_id must be another workflow: a workflow cannot handle its own failure.`,
      ],
    ];
    for (const [value, message] of refused) {
      const res = await h.call('PUT', `/v2/workflows/${byName.id}`, { on_failure: value });
      expect(res.json()).toEqual({ code: 400, message });
    }
    const cleared = await h.call('PUT', `/v2/workflows/${byName.id}`, { on_failure: null });
    expect(cleared.json().workflow.on_failure).toBeNull();
  });

  test('an HTTP integration gets one chat-style JSON message: workflow, run, failed step and error, console URL', async () => {
    const workflow = await failing('Nightly prices', { integration: chatId });
    const execution = await runToEnd(workflow.id);
    expect(execution.run_status).toBe('FAILED');
    const alert = await alertOf(execution.id, (row) => row.status === 'SENT');
    const messages = posted.filter((p) => (p.body.run as { id?: string } | undefined)?.id === execution.id);
    expect(messages).toHaveLength(1);
    const message = messages[0]!;
    expect(message.path).toBe('/hooks/chat');
    expect(message.idempotencyKey).toBe(alert.detail.alert_id);
    expect(message.body).toMatchObject({
      kind: 'workflow_failure',
      workflow: { id: workflow.id, name: 'Nightly prices', workspace: 'main' },
      run: {
        id: execution.id,
        trigger: 'API',
        url: `http://pas.test/console#/runs/${workflow.id}/${execution.id}`,
      },
      failed_step: { name: 'Load prices', error: expect.stringContaining('vendor feed is empty') },
    });
    expect(message.body.text).toContain('Workflow "Nightly prices" failed');
    expect(message.body.text).toContain('Failed step: Load prices');
    // Recorded on the run, and the run itself is untouched (still FAILED, once).
    const withResume = await h.pollUntilEnded(workflow.id, execution.id);
    expect((withResume.resume as { alert?: unknown }).alert).toMatchObject({ status: 'SENT', attempts: 1 });
    const record = await h
      .db('audit_logs')
      .where({ workflow_execution_id: execution.id, operation: 'EXECUTE', entity_type: 'Integration' })
      .first();
    expect(record.activity).toBe(`Sent failure alert of run ${execution.id} through integration Chat`);
    // A second pass finds nothing more to send.
    expect(
      await dispatchDueAlerts({
        db: h.db,
        outbound: TEST_OUTBOUND,
        runner: null,
        publicUrl: 'http://pas.test',
      }),
    ).toBe(0);
  });

  test('an SMTP integration gets an e-mail to `to`', async () => {
    const workflow = await failing('Risk report', {
      integration: mailId,
      to: ['pm@example.com', 'Ops <ops@example.com>'],
    });
    const execution = await runToEnd(workflow.id);
    const alert = await alertOf(execution.id, (row) => row.status === 'SENT');
    const raw = mails.find((m) => m.includes(execution.id));
    expect(raw).toBeDefined();
    const mail = await simpleParser(raw!);
    expect(mail.subject).toBe(`Workflow "Risk report" failed (run ${execution.id}, API)`);
    expect(mail.messageId).toBe(`<${alert.detail.alert_id}@pas.alerts>`);
    expect(mail.text).toContain('Failed step: Load prices');
    expect(mail.text).toContain(`http://pas.test/console#/runs/${workflow.id}/${execution.id}`);
  });

  test('a handler workflow runs once with the alert as its parameters', async () => {
    const ids = [workerId(), workerId()];
    const handler = await h.store({
      name: 'Failure handler',
      workers: [
        { id: ids[0], name: 'Start', type: 'STARTER', next: [ids[1]] },
        {
          id: ids[1],
          name: 'End',
          type: 'ENDER',
          script: 'function main(args) { return { got: args.inputs.alert.run.id } }',
        },
      ],
    });
    const workflow = await failing('Handled', { workflow_id: handler.id });
    const execution = await runToEnd(workflow.id);
    const alert = await alertOf(execution.id, (row) => row.status === 'SENT');
    const handlerRun = await h.pollUntilEnded(handler.id, alert.detail.handler_execution_id);
    expect(handlerRun.run_status).toBe('SUCCEEDED');
    const stored = await h.db('workflow_executions').where({ id: handlerRun.id }).first();
    expect(stored.parameters.alert).toMatchObject({
      run: { id: execution.id },
      failed_step: { name: 'Load prices' },
    });
    expect(await h.db('workflow_executions').where({ workflow_id: handler.id })).toHaveLength(1);
  });

  test('handlers do not chain: a handler run that fails starts no further handler, and says why', async () => {
    const second = await failing('Second handler', null);
    const first = await failing('First', { workflow_id: second.id });
    const linked = await h.call('PUT', `/v2/workflows/${second.id}`, {
      on_failure: { workflow_id: first.id },
    });
    expect(linked.statusCode).toBe(200);
    const execution = await runToEnd(first.id);
    const alert = await alertOf(execution.id, (row) => row.status === 'SENT');
    const handlerRun = await h.pollUntilEnded(second.id, alert.detail.handler_execution_id);
    expect(handlerRun.run_status).toBe('FAILED');
    const stopped = await alertOf(handlerRun.id, (row) => row.status === 'FAILED');
    expect(stopped.detail.error).toBe(
      'Not started: the failed run was itself a failure handler, and handlers do not chain (no alert loop).',
    );
    expect(await h.db('workflow_executions').where({ workflow_id: first.id })).toHaveLength(1);
  });

  test('a dispatcher killed mid-alert: another sends it after the lease, with the same Idempotency-Key, delivered once', async () => {
    const url = h.databaseUrl;
    // Only the child's dispatcher may claim the alert: the harness's stops here (the last test).
    await h.alerts!.close();
    const workflow = await failing('Killed mid-alert', { integration: slowChatId });
    holding.add('/hooks/held');
    const child: ChildProcess = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', FIXTURE], {
      cwd: ROOT,
      env: { ...process.env, ALERT_DATABASE_URL: url, ALERT_LEASE_MS: '3000' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
        child.once('exit', (code) => reject(new Error(`the dispatcher process exited (${code})`)));
      });
      const execution = await runToEnd(workflow.id);
      // Whichever dispatcher claimed it first, its request is held; kill the child once one arrives.
      const deadline = Date.now() + 30_000;
      while (!posted.some((p) => (p.body.run as { id?: string })?.id === execution.id)) {
        if (Date.now() > deadline) {
          const row = await h.db('run_alerts').where({ execution_id: execution.id }).first();
          throw new Error(
            `no alert request arrived: ${JSON.stringify(row)} ${url.replace(/:[^:@/]*@/, ':***@')}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      child.kill('SIGKILL');
      holding.delete('/hooks/held');
      // Another worker's dispatcher: nothing is due until the dead one's lease runs out, then it sends.
      const deps = { db: h.db, outbound: TEST_OUTBOUND, runner: null, publicUrl: 'http://pas.test' };
      expect(await dispatchDueAlerts(deps)).toBe(0);
      const until = Date.now() + 20_000;
      while ((await h.db('run_alerts').where({ execution_id: execution.id }).first()).status !== 'SENT') {
        if (Date.now() > until) throw new Error('the alert was not sent again after the lease');
        await dispatchDueAlerts(deps);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const alert = await alertOf(execution.id, (row) => row.status === 'SENT');
      const attempts = posted.filter((p) => (p.body.run as { id?: string })?.id === execution.id);
      expect(attempts.filter((p) => p.answered)).toHaveLength(1);
      expect(new Set(attempts.map((p) => p.idempotencyKey))).toEqual(new Set([alert.detail.alert_id]));
      expect(alert.attempts).toBeGreaterThanOrEqual(2);
    } finally {
      child.kill('SIGKILL');
      holding.delete('/hooks/held');
    }
  }, 90_000);
});
