import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { StepOutbound, RUN_CALLS_MAX } from '../../engine/integrations/outbound-calls';
import { registry } from '../../engine/platform/metrics';
import { builtinTemplateId, publishBuiltinTemplates } from '../../engine/worker-templates/builtin-templates';
import { createTestAccount, type TestAccount } from '../support/test-app';
import {
  type Execution,
  startHarness,
  TEST_OUTBOUND,
  type WorkflowHarness,
  workerId,
} from './workflow-harness';

/**
 * Scripts reaching the outside world through integrations, end to end: a real worker and Temporal,
 * a real HTTPS server and a real SMTP server on loopback (the test CA trusted as EGRESS_CA_FILE
 * would add it, loopback allowed as EGRESS_PRIVATE_ALLOW would), secrets sealed in PostgreSQL. The
 * script names the integration; the worker adds the credentials; what the run leaves holds no secret.
 */
const TLS = path.resolve(__dirname, '..', 'fixtures', 'tls');
const TOKEN = 'vendor-Tk9q2-ZZsecret+/=x';
const SMTP_PASSWORD = 'smtp-Pw-7731-secret';

interface Received {
  method: string;
  url: string;
  authorization: string | undefined;
  desk: string | undefined;
  body: string;
}

describe('outbound calls of workflow scripts (sdk.request, sdk.sendEmail, sdk.secret)', () => {
  let h: WorkflowHarness;
  let other: TestAccount;
  let server: https.Server;
  let smtp: SMTPServer;
  let smtpPort: number;
  let base: string;
  const received: Received[] = [];
  const mails: Array<{ raw: string; user: string | undefined }> = [];

  beforeAll(async () => {
    server = https.createServer(
      { cert: readFileSync(path.join(TLS, 'server.pem')), key: readFileSync(path.join(TLS, 'server.key')) },
      (request, response) => {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        request.on('end', () => {
          received.push({
            method: request.method!,
            url: request.url!,
            authorization: request.headers.authorization,
            desk: request.headers['x-desk'] as string | undefined,
            body,
          });
          const url = new URL(request.url!, 'https://localhost');
          if (url.pathname === '/v1/prices/AAPL') {
            response.setHeader('content-type', 'application/json');
            response.end(
              JSON.stringify({ symbol: 'AAPL', close: 187.5, from: url.searchParams.get('from') }),
            );
          } else if (url.pathname === '/v1/echo') {
            // A careless vendor echoing the credential back: the step must not keep it.
            response.setHeader('content-type', 'application/json');
            response.end(JSON.stringify({ you_sent: request.headers.authorization }));
          } else if (url.pathname === '/v1/out') {
            // Loopback but outside the allow list (127.0.0.1/32): refused before any connection.
            response.writeHead(302, { location: 'https://127.0.0.2:9/steal' });
            response.end();
          } else if (url.pathname === '/v1/chat') {
            response.end('ok');
          } else if (url.pathname === '/v1/big') {
            response.setHeader('content-type', 'application/octet-stream');
            response.end(Buffer.alloc(TEST_OUTBOUND.policy.maxResponseBytes + 1024, 1));
          } else {
            response.writeHead(404, { 'content-type': 'text/plain' });
            response.end('no such page');
          }
        });
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `https://localhost:${(server.address() as AddressInfo).port}/v1`;

    smtp = new SMTPServer({
      key: readFileSync(path.join(TLS, 'server.key')),
      cert: readFileSync(path.join(TLS, 'server.pem')),
      authOptional: false,
      logger: false,
      onAuth(auth, _session, callback) {
        if (auth.username === 'desk@example.com' && auth.password === SMTP_PASSWORD)
          callback(null, { user: auth.username });
        else callback(new Error('Invalid username or password'));
      },
      onData(stream, session, callback) {
        let raw = '';
        stream.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
        stream.on('end', () => {
          mails.push({ raw, user: session.user as string | undefined });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()));
    smtpPort = (smtp.server.address() as AddressInfo).port;

    h = await startHarness({ worker: true, sandboxLimits: { timeoutMs: 30_000 } });
    other = await createTestAccount(h.db);
    const secret = async (name: string, value: string) => {
      const res = await h.call('POST', '/v2/secrets', { name, value });
      expect(res.statusCode).toBe(200);
    };
    await secret('VENDOR_TOKEN', TOKEN);
    await secret('SMTP_PASSWORD', SMTP_PASSWORD);
    const integration = async (body: object, who?: TestAccount) => {
      const res = await h.call('POST', '/v2/integrations', body, who);
      expect(res.statusCode).toBe(200);
      return res.json().integration;
    };
    await integration({
      name: 'Prices vendor',
      type: 'HTTP',
      base_url: base,
      headers: { Authorization: 'Bearer {{secret:VENDOR_TOKEN}}', 'X-Desk': 'risk' },
      allowed_methods: ['GET', 'POST'],
      timeout_ms: 5000,
    });
    await integration({
      name: 'Mail',
      type: 'SMTP',
      host: 'localhost',
      port: smtpPort,
      security: 'starttls',
      username: 'desk@example.com',
      password_secret: 'SMTP_PASSWORD',
      from: 'Risk desk <risk@example.com>',
    });
    await integration({ name: 'Theirs', type: 'HTTP', base_url: base }, other);
    // A secret of another account, and one of another workspace of ours: neither is found by our runs.
    expect(
      (await h.call('POST', '/v2/secrets', { name: 'THEIR_TOKEN', value: 'theirs-123456' }, other))
        .statusCode,
    ).toBe(200);
    await h.call('POST', '/v2/workspaces', { name: 'desk2' });
    expect(
      (
        await h.call('POST', '/v2/secrets', {
          name: 'DESK2_TOKEN',
          value: 'desk2-123456',
          workspace: 'desk2',
        })
      ).statusCode,
    ).toBe(200);
    await integration({
      name: 'Desk2 vendor',
      type: 'HTTP',
      base_url: base,
      headers: { Authorization: 'Bearer {{secret:DESK2_TOKEN}}' },
    });
    await integration({ name: 'Chat', type: 'HTTP', base_url: `${base}/chat` });
    await publishBuiltinTemplates(h.db);
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    await new Promise((resolve) => server?.close(resolve));
    await new Promise((resolve) => smtp?.close(() => resolve(undefined)));
  });

  /** A one-step workflow (STARTER → the step → ENDER) run to its end. */
  async function runStep(step: Record<string, unknown>, who?: TestAccount) {
    const ids = [workerId(), workerId(), workerId()];
    const workflow = await h.store(
      {
        name: `Outbound ${ids[1]}`,
        workers: [
          { id: ids[0], name: 'Start', type: 'STARTER', next: [ids[1]] },
          { id: ids[1], name: 'Call out', type: 'BASIC', ...step, next: [ids[2]] },
          { id: ids[2], name: 'End', type: 'ENDER' },
        ],
      },
      who,
    );
    const started = await h.run(workflow.id, {}, who);
    const execution: Execution = await h.pollUntilEnded(workflow.id, started.id, who);
    const [row] = await h
      .db('worker_executions')
      .where({ workflow_execution_id: execution.id, worker_id: ids[1] });
    const res = await h.call(
      'GET',
      `/v2/workflows/worker_executions?worker_execution_id=${row.id}&with_result=true`,
      undefined,
      who,
    );
    return { execution, step: res.json().worker_execution, stepBody: res.body, workflow };
  }

  test('sdk.request: the integration adds its credentials; the script gets the answer; the call is logged, audited and counted', async () => {
    const before = received.length;
    const { execution, step } = await runStep({
      script: `async function main() {
        const answer = await sdk.request('Prices vendor', { path: 'prices/AAPL', query: { from: '2024-01-02' } });
        return answer;
      }`,
    });
    expect(execution.run_status).toBe('SUCCEEDED');
    expect(step.result).toEqual({
      status: 200,
      headers: expect.objectContaining({ 'content-type': 'application/json' }),
      body: { symbol: 'AAPL', close: 187.5, from: '2024-01-02' },
    });
    const call = received[before]!;
    expect(call).toMatchObject({
      method: 'GET',
      url: '/v1/prices/AAPL?from=2024-01-02',
      authorization: `Bearer ${TOKEN}`,
      desk: 'risk',
    });
    const logs = JSON.stringify(step.logs);
    expect(logs).toMatch(
      /\[http\] GET https:\/\/localhost:\d+\/v1\/prices\/AAPL → 200, \d+ bytes, \d+ ms \(integration Prices vendor\)/,
    );
    expect(logs).not.toContain('2024-01-02'); // the query stays out of the log line
    const records = await h
      .db('audit_logs')
      .where({ workflow_execution_id: execution.id })
      .orderBy('created_at');
    const executeRecord = records.find((r) => r.operation === 'EXECUTE' && r.entity_type === 'Integration');
    expect(executeRecord).toMatchObject({
      source: 'WORKER',
      entity_name: 'Prices vendor',
      user_email: 'System',
    });
    expect(executeRecord.after).toMatchObject({
      method: 'GET',
      host: expect.stringMatching(/^localhost:\d+$/),
      path: '/v1/prices/AAPL',
      status: 200,
      bytes: expect.any(Number),
      ms: expect.any(Number),
    });
    const secretRead = records.find((r) => r.entity_type === 'Secrets');
    expect(secretRead).toMatchObject({
      operation: 'VIEW',
      source: 'WORKER',
      entity_name: 'VENDOR_TOKEN',
      workflow_id: execution.workflow_id,
      workflow_execution_id: execution.id,
    });
    expect(JSON.stringify(records)).not.toContain(TOKEN);
    const [row] = await h.db('workflow_executions').where({ id: execution.id }).select('egress_calls');
    expect(row.egress_calls).toBe(1);
    const metrics = await registry.getSingleMetricAsString('pas_egress_requests_total');
    expect(metrics).toMatch(/pas_egress_requests_total\{kind="http",outcome="ok"\} [1-9]/);
  });

  test('refusals fail the step with the rule named, send nothing, and are recorded', async () => {
    const cases: Array<[string, string]> = [
      [`sdk.request('Prices vendor', { path: '../../admin' })`, 'sdk.request:'],
      [`sdk.request('Prices vendor', { path: 'https://evil.test/x' })`, 'sdk.request:'],
      [`sdk.request('Prices vendor', { path: 'x', headers: { 'X-A': 'a\\r\\nX-B: b' } })`, 'CR, LF or NUL'],
      [
        `sdk.request('Prices vendor', { path: 'x', headers: { Host: 'evil.test' } })`,
        'a host in a header is refused',
      ],
      [
        `sdk.request('Prices vendor', { method: 'DELETE', path: 'x' })`,
        'DELETE is not among the methods integration Prices vendor allows (GET, POST)',
      ],
      [`sdk.request('Prices vendor', { path: 'out' })`, '127.0.0.2 is a loopback address'],
      [`sdk.request('Prices vendor', { path: 'big', response: 'base64' })`, 'EGRESS_MAX_RESPONSE_BYTES'],
      [`sdk.request('Theirs', { path: 'x' })`, 'Integration Theirs not found.'],
      [`sdk.request('Mail', {})`, 'is a SMTP integration: sdk.request needs an HTTP one'],
      [`sdk.secret('NOT_HERE')`, 'Secret NOT_HERE not found in workspace main.'],
      [`sdk.secret('THEIR_TOKEN')`, 'Secret THEIR_TOKEN not found in workspace main.'],
      [`sdk.secret('DESK2_TOKEN')`, 'Secret DESK2_TOKEN not found in workspace main.'],
      [`sdk.request('Desk2 vendor', { path: 'x' })`, 'Secret DESK2_TOKEN not found in workspace main.'],
    ];
    for (const [expression, message] of cases) {
      const before = received.filter((r) => r.url.includes('admin') || r.url.includes('steal')).length;
      const { execution, step } = await runStep({
        script: `async function main() { return await ${expression}; }`,
      });
      expect({ expression, status: execution.run_status }).toEqual({ expression, status: 'FAILED' });
      expect(step.status).toBe('ERROR');
      expect(JSON.stringify(step.result)).toContain(message);
      expect(received.filter((r) => r.url.includes('admin') || r.url.includes('steal')).length).toBe(before);
    }
    const refusedRecords = await h
      .db('audit_logs')
      .where({ entity_type: 'Integration', operation: 'EXECUTE' })
      .whereRaw(`after->>'outcome' = 'refused'`);
    expect(refusedRecords.length).toBeGreaterThanOrEqual(4);
  });

  test('a secret printed, returned and thrown, in JavaScript and in Python, is stored nowhere: [secret:NAME] instead', async () => {
    const js = await runStep({
      script: `async function main() {
        const token = await sdk.secret('VENDOR_TOKEN');
        console.log('token is ' + token);
        console.log('encoded ' + encodeURIComponent(token));
        const echoed = await sdk.request('Prices vendor', { path: 'echo' });
        return { token, encoded: encodeURIComponent(token), echoed: echoed.body };
      }`,
    });
    expect(js.execution.run_status).toBe('SUCCEEDED');
    expect(js.step.result).toEqual({
      token: '[secret:VENDOR_TOKEN]',
      encoded: '[secret:VENDOR_TOKEN]',
      echoed: { you_sent: 'Bearer [secret:VENDOR_TOKEN]' },
    });
    const thrown = await runStep({
      script: `async function main() { throw new Error('leaked ' + (await sdk.secret('VENDOR_TOKEN'))); }`,
    });
    expect(thrown.execution.run_status).toBe('FAILED');
    expect(JSON.stringify(thrown.step.result)).toContain('leaked [secret:VENDOR_TOKEN]');
    const python = await runStep({
      script_runtime: 'python3.11',
      script: [
        'import base64',
        'import pas_sdk',
        '',
        'def main(args):',
        '    token = pas_sdk.secret("VENDOR_TOKEN")',
        '    print("plain", token)',
        '    print("b64", base64.b64encode(token.encode()).decode())',
        '    return {"token": token, "b64": base64.b64encode(token.encode()).decode()}',
      ].join('\n'),
    });
    expect(python.execution.run_status).toBe('SUCCEEDED');
    expect(python.step.result).toEqual({ token: '[secret:VENDOR_TOKEN]', b64: '[secret:VENDOR_TOKEN]' });
    const pythonThrows = await runStep({
      script_runtime: 'python3.11',
      script: [
        'import pas_sdk',
        '',
        'def main(args):',
        '    raise ValueError("bad " + pas_sdk.secret("VENDOR_TOKEN"))',
      ].join('\n'),
    });
    expect(pythonThrows.execution.run_status).toBe('FAILED');

    const forms = [
      TOKEN,
      Buffer.from(TOKEN).toString('base64'),
      Buffer.from(TOKEN).toString('base64url'),
      encodeURIComponent(TOKEN),
    ];
    // The API's answers: the steps, the runs with their resume, the audit trail.
    const answers: string[] = [js.stepBody, thrown.stepBody, python.stepBody, pythonThrows.stepBody];
    for (const run of [js, thrown, python, pythonThrows]) {
      const res = await h.call(
        'GET',
        `/v2/workflows/${run.workflow.id}/workflow_executions?workflow_execution_id=${run.execution.id}&with_resume=True`,
      );
      answers.push(res.body);
      const list = await h.call(
        'GET',
        `/v2/workflows/${run.workflow.id}/worker_executions?workflow_execution_id=${run.execution.id}&with_result=true`,
      );
      answers.push(list.body);
    }
    answers.push((await h.call('GET', '/v2/audit_logs?page_size=100')).body);
    for (const form of forms) for (const answer of answers) expect(answer).not.toContain(form);
    // Every row of every table.
    const tables = (await h.db.raw(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
    )) as { rows: Array<{ table_name: string }> };
    for (const { table_name } of tables.rows) {
      const rows = (await h.db.raw(`SELECT t::text AS row FROM "${table_name}" t`)) as {
        rows: Array<{ row: string }>;
      };
      const text = rows.rows.map((r) => r.row).join('\n');
      for (const form of forms)
        expect({ table_name, leaked: text.includes(form) }).toEqual({ table_name, leaked: false });
    }
  }, 180_000);

  test('sdk.sendEmail: the password from its secret, a file attached, the server message id answered', async () => {
    const file = await h.call('POST', '/v2/files', {
      name: 'report.csv',
      description: 'Daily risk',
      content_type: 'text/csv',
      data: Buffer.from('symbol,var\nAAPL,0.02\n').toString('base64'),
    });
    const fileId = file.json().file.id;
    const { execution, step } = await runStep({
      script: `async function main() {
        return await sdk.sendEmail('Mail', {
          to: ['pm@example.com'], cc: 'ops@example.com', subject: 'Daily risk',
          text: 'Attached.', attachments: ['${fileId}'],
        });
      }`,
    });
    expect(execution.run_status).toBe('SUCCEEDED');
    expect(step.result).toMatchObject({
      message_id: expect.stringMatching(/^<.+@.+>$/),
      accepted: ['pm@example.com', 'ops@example.com'],
      rejected: [],
    });
    const mail = mails[mails.length - 1]!;
    expect(mail.user).toBe('desk@example.com');
    const parsed = await simpleParser(mail.raw);
    expect(parsed.subject).toBe('Daily risk');
    expect(parsed.messageId).toBe(step.result.message_id);
    expect(parsed.attachments[0]!.filename).toBe('report.csv');
    expect(parsed.attachments[0]!.content.toString('utf8')).toBe('symbol,var\nAAPL,0.02\n');
    expect(JSON.stringify(step.logs)).toMatch(
      /\[smtp\] message to 2 recipient\(s\) through localhost:\d+: accepted 2, refused 0/,
    );
    const recorded = await h
      .db('audit_logs')
      .where({ workflow_execution_id: execution.id, entity_type: 'Secrets' });
    expect(recorded.map((r) => r.entity_name)).toEqual(['SMTP_PASSWORD']);
  });

  test('Python steps call the same functions through their channel: pas_sdk.request and pas_sdk.send_email', async () => {
    const before = received.length;
    const mailsBefore = mails.length;
    const { execution, step } = await runStep({
      script_runtime: 'python3.11',
      script: [
        'import pas_sdk',
        '',
        'def main(args):',
        '    answer = pas_sdk.request("Prices vendor", path="prices/AAPL", query={"from": "2024-02-01"})',
        '    sent = pas_sdk.send_email("Mail", to=["pm@example.com"], subject="From Python", text=str(answer["body"]["close"]))',
        '    return {"status": answer["status"], "close": answer["body"]["close"], "accepted": sent["accepted"]}',
      ].join('\n'),
    });
    expect(execution.run_status).toBe('SUCCEEDED');
    expect(step.result).toEqual({ status: 200, close: 187.5, accepted: ['pm@example.com'] });
    expect(received[before]).toMatchObject({
      url: '/v1/prices/AAPL?from=2024-02-01',
      authorization: `Bearer ${TOKEN}`,
    });
    expect(mails.length).toBe(mailsBefore + 1);
    expect(JSON.stringify(step.logs)).toContain('[http] GET');
  });

  test('the built-in templates HTTP request, Post to chat and Send e-mail, chained in one run', async () => {
    const ids = [workerId(), workerId(), workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Prices to chat and mail',
      workers: [
        { id: ids[0], name: 'Start', type: 'STARTER', next: [ids[1]] },
        {
          id: ids[1],
          name: 'Fetch prices',
          type: 'BASIC',
          template_id: builtinTemplateId('http-request'),
          script_inputs: { integration: 'Prices vendor', path: 'prices/AAPL', query: { from: '2024-03-01' } },
          next: [ids[2]],
        },
        {
          id: ids[2],
          name: 'Tell the desk',
          type: 'BASIC',
          template_id: builtinTemplateId('post-to-chat'),
          script_inputs: { integration: 'Chat', title: 'Prices fetched' },
          next: [ids[3]],
        },
        {
          id: ids[3],
          name: 'Mail it',
          type: 'BASIC',
          template_id: builtinTemplateId('send-email'),
          script_inputs: { integration: 'Mail', to: ['pm@example.com'], subject: 'Prices posted' },
          next: [ids[4]],
        },
        { id: ids[4], name: 'End', type: 'ENDER' },
      ],
    });
    const started = await h.run(workflow.id, {});
    const execution = await h.pollUntilEnded(workflow.id, started.id);
    expect(execution.run_status).toBe('SUCCEEDED');
    const chat = received.filter((r) => r.url === '/v1/chat').pop()!;
    expect(chat.method).toBe('POST');
    const posted = JSON.parse(chat.body) as { text: string };
    expect(posted.text).toMatch(/^Prices fetched\n```\n/);
    expect(posted.text).toContain('"close": 187.5');
    expect(posted.text).toContain('"from": "2024-03-01"');
    const mail = await simpleParser(mails[mails.length - 1]!.raw);
    expect(mail.subject).toBe('Prices posted');
    expect(mail.text).toContain('"characters"');
  });

  test('a run may make at most 1000 outbound calls, counted across its steps in the database', async () => {
    const { execution } = await runStep({ script: 'function main() { return 1 }' });
    await h
      .db('workflow_executions')
      .where({ id: execution.id })
      .update({ egress_calls: RUN_CALLS_MAX - 1 });
    const actor = {
      principal: {
        accountId: h.account.accountId,
        userId: h.account.ownerId,
        userEmail: 'System',
        isOwner: false,
        permissions: [],
        credentialId: '',
        credentialType: 'API_KEY' as const,
      },
      source: 'WORKER' as const,
      ip: null,
      userAgent: null,
    };
    const step = new StepOutbound(h.db, TEST_OUTBOUND, actor, 'main', 'Call out', execution.id);
    await step.spend();
    await expect(step.spend()).rejects.toThrow(
      'This run has made 1000 outbound calls, the most one run may make.',
    );
    const [row] = await h.db('workflow_executions').where({ id: execution.id }).select('egress_calls');
    expect(row.egress_calls).toBe(RUN_CALLS_MAX);
  });
});
