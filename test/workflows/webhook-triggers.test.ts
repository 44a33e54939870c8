import { INTEGRATION } from '../../engine/kinds/integration';
import { gzipSync } from 'node:zlib';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { webhookDate } from '../../engine/workflows/webhook-receiver';
import { newId } from '../../engine/platform/ids';
import { temporalWorkflowRunner } from '../../engine/workflows/temporal-workflow-runner';
import { createTestAccount, temporalAddress, type TestAccount } from '../support/test-app';
import { type Execution, startHarness, type WorkflowHarness, workerId } from './workflow-harness';

/**
 * The inbound webhook end to end, on a real Temporal dev server with a real Worker: a post stores
 * the payload verbatim and starts the FILE_RECEIVED workflows of its integration, whose STARTER
 * receives `body` and `date`; every credential and body rule of the interface.
 */
/** Polls until `probe` finds a row (the request's own dispatch attempt settles behind the reply). */
async function eventuallyRow<T>(probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const row = await probe();
    if (row !== undefined) return row;
    if (Date.now() > deadline) throw new Error('timed out waiting for the row');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('webhook triggers', () => {
  let h: WorkflowHarness;
  let other: TestAccount;
  let integrationId: string;
  let workflowId: string;

  const UNAUTHORIZED = { code: 401, message: 'Unauthorized: missing or invalid credentials.' };

  beforeAll(async () => {
    h = await startHarness({ worker: true });
    other = await createTestAccount(h.db);
    integrationId = await createIntegration('Orders feed');
    workflowId = (await storeTriggered('On order', integrationId, true)).id;
  }, 120_000);
  afterAll(() => h.close());

  async function createIntegration(name: string, who: TestAccount = h.account): Promise<string> {
    const res = await h.call('POST', '/v2/integrations', { name, type: 'WEBHOOK' }, who);
    expect(res.statusCode).toBe(200);
    return res.json().integration.id;
  }

  const starterId = workerId();
  const enderId = workerId();

  /** STARTER echoes its script inputs (and says what it saw); the ENDER hands that on as the result. */
  function storeTriggered(name: string, integration: string, enabled: boolean, workspace?: string) {
    return h.store({
      name,
      workspace,
      trigger_type: 'FILE_RECEIVED',
      trigger_config: { integration_id: integration },
      trigger_enabled: enabled,
      workers: [
        {
          id: starterId,
          name: 'Start',
          type: 'STARTER',
          script:
            'function main(args) { const s = args.script_inputs; return { body: s.body, date: s.date, ' +
            'keys: Object.keys(s).sort(), typeOfDate: typeof s.date }; }',
          next: [enderId],
        },
        { id: enderId, name: 'End', type: 'ENDER' },
      ],
    });
  }

  /** Raw inject, so each test controls headers, query string and the body's bytes. */
  function post(
    id: string,
    options: { query?: string; headers?: Record<string, string>; payload?: string | Buffer } = {},
  ) {
    return h.t.app.inject({
      method: 'POST',
      url: `/v2/integrations/${id}/webhook${options.query ?? ''}`,
      headers: options.headers ?? {},
      payload: options.payload,
    });
  }
  const json = { 'content-type': 'application/json' };
  const keyQuery = (who: TestAccount = h.account) => `?key=${who.key.auth_token}`;

  async function executionsOf(id: string, who?: TestAccount): Promise<Execution[]> {
    const res = await h.call('GET', `/v2/workflows/${id}/workflow_executions?page_size=100`, undefined, who);
    expect(res.statusCode).toBe(200);
    return res.json().workflow_executions;
  }
  const payloadCount = async () => Number((await h.db('webhook_payloads').count({ n: '*' }).first())!.n);

  test('key on the query string: stores the payload verbatim, starts the workflow, STARTER gets body and date', async () => {
    const text = '{ "order" : {"id": 42, "lines": [1.50, 2e3]},\n  "zeta": true, "alpha": null }';
    const before = await executionsOf(workflowId);
    const res = await post(integrationId, { query: keyQuery(), headers: json, payload: text });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      integration_id: integrationId,
      message: 'Payload received and stored; started 1 workflow execution(s).',
    });

    // Stored exactly as sent: the same text, key order, spacing and number spelling.
    const [row] = await h
      .db('webhook_payloads')
      .where({ integration_id: integrationId })
      .orderBy('received_at', 'desc')
      .limit(1)
      .select('id', 'account_id', 'size', 'received_at', h.db.raw('body::text as text'));
    expect(row.text).toBe(text);
    expect(row.size).toBe(Buffer.byteLength(text));
    expect(row.account_id).toBe(h.account.accountId);
    expect(row.id).toMatch(/^whpl_[A-Za-z0-9]{25}$/);

    const executions = await executionsOf(workflowId);
    expect(executions).toHaveLength(before.length + 1);
    const started = executions[0]!;
    expect(started.trigger).toBe('FILE_RECEIVED');
    const ended = await h.pollUntilEnded(workflowId, started.id);
    expect(ended.run_status).toBe('SUCCEEDED');
    expect(ended.trigger).toBe('FILE_RECEIVED');
    const result = (await h.workerExecution(ended.ender_worker_execution_id!)).result as Record<
      string,
      unknown
    >;
    expect(result).toEqual({
      body: { order: { id: 42, lines: [1.5, 2000] }, zeta: true, alpha: null },
      date: webhookDate(row.received_at),
      keys: ['body', 'date'],
      typeOfDate: 'string',
    });
    expect(result.date).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);

    // The audit trail: the payload and the run, both automatic actions of source INTEGRATION.
    const received = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, entity_id: integrationId, operation: 'CREATE' })
      .whereLike('activity', 'Received webhook payload%');
    expect(received.length).toBeGreaterThanOrEqual(1);
    expect(received.at(-1)).toMatchObject({
      source: 'INTEGRATION',
      user_email: 'System',
      status: 'SUCCESS',
      entity_type: 'Integration',
      entity_name: 'Orders feed',
      credential_id: h.account.key.account_sid,
    });
    const execute = await h.db('audit_logs').where({ entity_id: started.id, operation: 'EXECUTE' }).first();
    expect(execute).toMatchObject({
      source: 'INTEGRATION',
      user_email: 'System',
      entity_type: 'WorkflowExecution',
    });
  });

  test('Authorization header (Bearer and Basic) is accepted', async () => {
    const bearer = await post(integrationId, {
      headers: { ...json, authorization: h.account.bearer },
      payload: '{"via":"bearer"}',
    });
    expect(bearer.statusCode).toBe(200);
    const pair = `${h.account.key.account_sid}:${h.account.key.auth_token}`;
    const basic = await post(integrationId, {
      headers: {
        'content-type': 'application/json; charset=utf-8',
        authorization: `Basic ${Buffer.from(pair).toString('base64')}`,
      },
      payload: '{"via":"basic"}',
    });
    expect(basic.statusCode).toBe(200);
  });

  test('a present Authorization header wins over key, both ways', async () => {
    const good = await post(integrationId, {
      query: '?key=not-a-token',
      headers: { ...json, authorization: h.account.bearer },
      payload: '{"header":"wins"}',
    });
    expect(good.statusCode).toBe(200);
    const stored = await payloadCount();
    const bad = await post(integrationId, {
      query: keyQuery(),
      headers: { ...json, authorization: 'Bearer sid_nope:nope' },
      payload: '{"header":"wins"}',
    });
    expect(bad.statusCode).toBe(401);
    expect(bad.json()).toEqual(UNAUTHORIZED);
    expect(await payloadCount()).toBe(stored);
  });

  test('bad key → 401; no credentials → 401; nothing stored, nothing started', async () => {
    const stored = await payloadCount();
    const runs = (await executionsOf(workflowId)).length;
    const badKey = await post(integrationId, { query: '?key=wrong', headers: json, payload: '{"a":1}' });
    expect(badKey.statusCode).toBe(401);
    expect(badKey.json()).toEqual(UNAUTHORIZED);
    // The SID is not a token.
    const sidAsKey = await post(integrationId, {
      query: `?key=${h.account.key.account_sid}`,
      headers: json,
      payload: '{"a":1}',
    });
    expect(sidAsKey.statusCode).toBe(401);
    const none = await post(integrationId, { headers: json, payload: '{"a":1}' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual(UNAUTHORIZED);
    expect(await payloadCount()).toBe(stored);
    expect(await executionsOf(workflowId)).toHaveLength(runs);
  });

  test('key is refused (401) on every other endpoint, the integrations API included', async () => {
    for (const url of [
      `/v2/integrations${keyQuery()}`,
      `/v2/integrations/${integrationId}${keyQuery()}`,
      `/v2/workflows${keyQuery()}`,
    ]) {
      const res = await h.t.app.inject({ method: 'GET', url });
      expect([url, res.statusCode]).toEqual([url, 401]);
    }
    const run = await h.t.app.inject({
      method: 'POST',
      url: `/v2/workflows/${workflowId}/run${keyQuery()}`,
      payload: { parameters: {} },
    });
    expect(run.statusCode).toBe(401);
  });

  describe('bodies that are not a JSON object with content → 400, nothing stored', () => {
    const cases: Array<[string, Record<string, string>, string | undefined, RegExp]> = [
      ['a list', json, '[{"a":1}]', /must be a JSON object with at least one key, not a list/],
      ['an empty object', json, '{}', /not an empty object/],
      ['a number', json, '42', /not a number/],
      ['a string', json, '"text"', /not a string/],
      ['null', json, 'null', /not null/],
      ['invalid JSON', json, '{"a":', /not valid JSON/],
      ['an empty body with a JSON content type', json, '', /required/],
      ['text/plain', { 'content-type': 'text/plain' }, '{"a":1}', /Content-Type: application\/json/],
      [
        'form data',
        { 'content-type': 'application/x-www-form-urlencoded' },
        'a=1',
        /Content-Type: application\/json/,
      ],
      ['no body at all', {}, undefined, /body is required/],
    ];
    test.each(cases)('%s', async (_label, headers, payload, message) => {
      const stored = await payloadCount();
      const res = await post(integrationId, { query: keyQuery(), headers, payload });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe(400);
      expect(res.json().message).toMatch(message);
      expect(await payloadCount()).toBe(stored);
    });

    test('nesting deeper than the storable limit', async () => {
      const deep = '{"a":'.repeat(150) + '1' + '}'.repeat(150);
      const res = await post(integrationId, { query: keyQuery(), headers: json, payload: deep });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/nests deeper than 100 levels/);
    });

    test('a body over the maximum payload size → 413', async () => {
      const big = JSON.stringify({ blob: 'x'.repeat(1024 * 1024) });
      const res = await post(integrationId, { query: keyQuery(), headers: json, payload: big });
      expect(res.statusCode).toBe(413);
    });
  });

  test('a gzip body is inflated and stored as the JSON text sent', async () => {
    const text = '{"compressed": [1, 2, 3]}';
    const res = await post(integrationId, {
      query: keyQuery(),
      headers: { ...json, 'content-encoding': 'gzip' },
      payload: gzipSync(text),
    });
    expect(res.statusCode).toBe(200);
    const row = await h
      .db('webhook_payloads')
      .orderBy('received_at', 'desc')
      .first(h.db.raw('body::text as text'));
    expect(row.text).toBe(text);
  });

  test('an integration that is not a webhook integration → 400', async () => {
    const id = newId(INTEGRATION.idPrefix!);
    const now = new Date();
    await h.db('entities').insert({
      account_id: h.account.accountId,
      kind: 'integration',
      id,
      workspace: null,
      name: 'Mailbox',
      tags: [],
      body: JSON.stringify({ type: 'EMAIL' }),
      created_at: now,
      updated_at: now,
    });
    const res = await post(id, { query: keyQuery(), headers: json, payload: '{"a":1}' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message: `Integration ${id} is not a webhook integration.` });
  });

  test('unknown id, malformed id, another account’s integration → 404; nothing stored', async () => {
    const stored = await payloadCount();
    const unknown = newId(INTEGRATION.idPrefix!);
    const a = await post(unknown, { query: keyQuery(), headers: json, payload: '{"a":1}' });
    expect(a.statusCode).toBe(404);
    expect(a.json()).toEqual({ code: 404, message: `Integration ${unknown} not found.` });
    const b = await post('intg_short', { query: keyQuery(), headers: json, payload: '{"a":1}' });
    expect(b.statusCode).toBe(404);
    const c = await post(integrationId, { query: keyQuery(other), headers: json, payload: '{"a":1}' });
    expect(c.statusCode).toBe(404);
    expect(c.json()).toEqual({ code: 404, message: `Integration ${integrationId} not found.` });
    const d = await post(integrationId, {
      headers: { ...json, authorization: other.bearer },
      payload: '{"a":1}',
    });
    expect(d.statusCode).toBe(404);
    expect(await payloadCount()).toBe(stored);
  });

  test('only enabled FILE_RECEIVED workflows of that integration start, in any workspace', async () => {
    const feed = await createIntegration('Prices feed');
    const enabled = await storeTriggered('Enabled', feed, true);
    const elsewhere = await storeTriggered('Other workspace', feed, true, 'ops');
    const disabled = await storeTriggered('Disabled', feed, false);
    const unrelated = await storeTriggered('Unrelated', integrationId, true);
    const unrelatedBefore = (await executionsOf(unrelated.id)).length;

    const res = await post(feed, { query: keyQuery(), headers: json, payload: '{"price": 101.5}' });
    expect(res.statusCode).toBe(200);
    expect(res.json().message).toBe('Payload received and stored; started 2 workflow execution(s).');
    expect(await executionsOf(enabled.id)).toHaveLength(1);
    const [other] = await h
      .db('workflow_executions')
      .where({ workflow_id: elsewhere.id })
      .select('workspace', 'trigger');
    expect(other).toEqual({ workspace: 'ops', trigger: 'FILE_RECEIVED' });
    expect(await executionsOf(disabled.id)).toHaveLength(0);
    expect(await executionsOf(unrelated.id)).toHaveLength(unrelatedBefore);
    const ended = await h.pollUntilEnded(enabled.id, (await executionsOf(enabled.id))[0]!.id);
    expect(ended.run_status).toBe('SUCCEEDED');
  });

  test('an integration no workflow listens to still stores the payload', async () => {
    const quiet = await createIntegration('Quiet');
    const res = await post(quiet, { query: keyQuery(), headers: json, payload: '{"x":1}' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      integration_id: quiet,
      message: 'Payload received and stored; no enabled workflow is triggered by this integration.',
    });
    const stored = await h.db('webhook_payloads').where({ integration_id: quiet }).count({ n: '*' }).first();
    expect(Number(stored!.n)).toBe(1);
  });

  describe('when the workflow engine refuses the run', () => {
    let app: FastifyInstance;
    let connection: Connection;

    beforeAll(async () => {
      // A real Temporal server, asked for a namespace it does not have: every start fails.
      connection = await Connection.connect({ address: temporalAddress() });
      const client = new Client({ connection, namespace: `missing-${newId('worker').slice(5, 15)}` });
      app = await buildApp({
        config: {
          rateLimitPerMinute: 10_000,
          maxPayloadBytes: 1024 * 1024,
          logLevel: 'silent',
          trustProxy: false,
          publicUrl: 'http://pas.test',
          // As in test/support/test-app.ts: a loaded CI machine must not shed a functional test.
          loadShedEventLoopDelayMs: 0,
        },
        db: h.db,
        workflows: temporalWorkflowRunner(client, 'unused-task-queue'),
      });
      await app.ready();
    });
    afterAll(async () => {
      await app.close();
      await connection.close();
    });

    test('the payload is stored, the answer is 200; the run is accepted and waits in the run outbox', async () => {
      const feed = await createIntegration('Flaky engine');
      const wf = await storeTriggered('Never starts', feed, true);
      const text = '{"kept": "even so"}';
      const res = await app.inject({
        method: 'POST',
        url: `/v2/integrations/${feed}/webhook${keyQuery()}`,
        headers: json,
        payload: text,
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        integration_id: feed,
        message: 'Payload received and stored; started 1 workflow execution(s).',
      });
      const row = await h
        .db('webhook_payloads')
        .where({ integration_id: feed })
        .first(h.db.raw('body::text as text'));
      expect(row.text).toBe(text);
      const [execution] = await executionsOf(wf.id);
      expect(execution).toMatchObject({ run_status: 'RUNNING', trigger: 'FILE_RECEIVED' });
      // The engine refused the start: it waits, with the reason, for a dispatcher to retry it.
      const waiting = await eventuallyRow(() =>
        h.db('workflow_run_outbox').where({ execution_id: execution!.id }).whereNotNull('last_error').first(),
      );
      expect(waiting.last_error).toMatch(/namespace/i);
    });
  });
});
