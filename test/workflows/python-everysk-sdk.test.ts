import { gzipSync } from 'node:zlib';
import { createTestAccount, type TestAccount } from '../support/test-app';
import { type Execution, startHarness, type WorkflowHarness, workerId } from './workflow-harness';

/**
 * everysk-lib's own SDK layer inside a Python step: the real everysk-lib 1.14.2 (installed by pip
 * into the template's virtualenv from its `requirements`, wheels only), a hosted-style script that
 * imports `everysk.sdk` and knows nothing of this service, a real Temporal worker, real bubblewrap,
 * real PostgreSQL. Its calls reach POST /v1/sdk_function on the step's own channel and act for the
 * run's account (audited WORKER); the credentials it finds are the step's, good nowhere else.
 */

/** everysk.sdk needs httpx with HTTP/2 support, which no extra of everysk-lib installs alone. */
const REQUIREMENTS = ['everysk-lib==1.14.2', 'httpx[http2]==0.28.1'];

/** A hosted-style worker script: everysk-lib's documented imports, the service's address unknown to it. */
const HOSTED_SCRIPT = `
import os
import urllib.error
import urllib.request

from everysk.core.exceptions import EntityNotFound, SDKError
from everysk.sdk.engines.cache import UserCache
from everysk.sdk.entities import Portfolio


def main(args):
    inputs = args['script_inputs']
    workspace = args['workspace']
    tag = inputs['tag']
    if inputs.get('foreign_id'):
        return trespass(inputs['foreign_id'])
    if inputs.get('probe'):
        return probe()
    if inputs.get('workflow_id'):
        from everysk.sdk.entities.workflow.base import Workflow

        execution = Workflow(id=inputs['workflow_id']).run_and_wait(parameters={'amount': 21}, timeout=120, poll_interval=0.2)
        return {'data': execution.result.data, 'status': execution.result.status}

    portfolio = Portfolio(
        name='Hosted book',
        workspace=workspace,
        date='20221228',
        securities=[{'id': 'p1', 'symbol': 'AAPL', 'quantity': 100}, {'id': 'p2', 'symbol': 'JPM', 'quantity': 50}],
        tags=[tag],
    )
    saved = portfolio.save()
    fetched = Portfolio.retrieve(saved.id)
    found = Portfolio.query.where('workspace', workspace).where('tags', tag).loads()

    cache = UserCache()
    cache.set('hosted-' + tag, {'portfolio': saved.id, 'symbols': ['AAPL', 'JPM']}, timeout=60)
    counted = cache.incr('count-' + tag, 1, initial_value=41)

    # The channel itself refuses a call without this step's credentials.
    request = urllib.request.Request(
        os.environ['EVERYSK_SDK_URL'] + '/v1/sdk_function',
        data=b'{"class_name": "Portfolio", "method_name": "retrieve", "params": {"entity_id": "x"}}',
        headers={'Content-Type': 'application/json', 'Authorization': 'Bearer nobody:nothing'},
        method='POST',
    )
    try:
        urllib.request.urlopen(request)
        refused = None
    except urllib.error.HTTPError as error:
        refused = error.code

    return {
        'id': saved.id,
        'name': fetched.name,
        'workspace': fetched.workspace,
        'symbols': [security.symbol for security in fetched.securities],
        'found': [p.id for p in found],
        'cached': cache.get('hosted-' + tag),
        'counted': counted,
        'sid': os.environ['EVERYSK_API_SID'],
        'token': os.environ['EVERYSK_API_TOKEN'],
        'refused_without_credentials': refused,
    }


def probe():
    # Bodies everysk-lib never sends, posted to the channel with the step's own credentials: each is
    # refused as the HTTP route refuses it, with the SDK's error body.
    import gzip
    import json

    def post(body, headers):
        headers = dict(headers, Authorization='Bearer %s:%s' % (os.environ['EVERYSK_API_SID'], os.environ['EVERYSK_API_TOKEN']))
        request = urllib.request.Request(os.environ['EVERYSK_SDK_URL'] + '/v1/sdk_function', data=body, headers=headers, method='POST')
        try:
            with urllib.request.urlopen(request) as response:
                return [response.status, json.load(response)]
        except urllib.error.HTTPError as error:
            return [error.code, json.load(error)]

    call = json.dumps({'class_name': 'UserCache', 'method_name': 'get', 'self_obj': None, 'params': {'key': 'k'}}).encode()
    return {
        'plain': post(call, {'Content-Type': 'application/json'}),
        'gzip': post(gzip.compress(call), {'Content-Type': 'text/html', 'Content-Encoding': 'gzip'}),
        'not_gzip': post(b'not gzip', {'Content-Type': 'text/html', 'Content-Encoding': 'gzip'}),
        'brotli': post(call, {'Content-Type': 'text/html', 'Content-Encoding': 'br'}),
        'not_json': post(b'<html>', {'Content-Type': 'text/html'}),
        'proto': post(b'{"class_name": "UserCache", "method_name": "get", "__proto__": {"x": 1}}', {'Content-Type': 'text/html'}),
        'bomb': post(gzip.compress(b' ' * (17 * 1024 * 1024)), {'Content-Type': 'text/html', 'Content-Encoding': 'gzip'}),
        'not_offered': post(json.dumps({'class_name': 'Secrets', 'method_name': 'get'}).encode(), {'Content-Type': 'text/html'}),
    }


def trespass(foreign_id):
    out = {'retrieved': repr(Portfolio.retrieve(foreign_id))}
    try:
        Portfolio.modify(foreign_id, {'name': 'Taken over'})
        out['modified'] = 'modified'
    except EntityNotFound as error:
        out['modified'] = 'EntityNotFound: %s' % error
    except SDKError as error:
        out['modified'] = 'SDKError: %s' % error
    try:
        Portfolio.remove(foreign_id)
        out['removed'] = 'removed'
    except EntityNotFound as error:
        out['removed'] = 'EntityNotFound: %s' % error
    except SDKError as error:
        out['removed'] = 'SDKError: %s' % error
    return out
`;

describe('everysk-lib’s everysk.sdk inside a Python step', () => {
  let h: WorkflowHarness;
  let other: TestAccount;
  let templateId: string;

  beforeAll(async () => {
    h = await startHarness({
      worker: true,
      environmentBuilder: true,
      sandboxLimits: { timeoutMs: 60_000, memoryLimitMb: 256 },
    });
    other = await createTestAccount(h.db);
    const res = await h.call('POST', '/v2/worker_templates', {
      name: 'Hosted-style everysk.sdk script',
      script_runtime: 'python3.11',
      script_entry_point: 'main',
      script: HOSTED_SCRIPT,
      requirements: REQUIREMENTS,
      form_inputs: [
        { id: 'tag', type: 'text' },
        { id: 'foreign_id', type: 'text' },
        { id: 'probe', type: 'text' },
        { id: 'workflow_id', type: 'text' },
      ],
    });
    if (res.statusCode !== 200) throw new Error(`publish: ${res.statusCode} ${res.body}`);
    templateId = res.json().worker_template.id as string;
    // pip builds the virtualenv (everysk-lib and its dependencies) in the background.
    const deadline = Date.now() + 420_000;
    for (;;) {
      const template = (await h.call('GET', `/v2/worker_templates/${templateId}`)).json().worker_template;
      if (template.container_status === 'SUCCESS') break;
      if (template.container_status !== 'PENDING' || Date.now() > deadline) {
        throw new Error(`the template's environment: ${JSON.stringify(template).slice(0, 2000)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }, 480_000);
  afterAll(() => h?.close());

  /** Runs the template once as the account's only step; answers the run and the step's record. */
  async function runStep(scriptInputs: Record<string, string>) {
    const ids = [workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'everysk.sdk step',
      workers: [
        { id: ids[0], name: 'Start', type: 'STARTER', next: [ids[1]] },
        {
          id: ids[1],
          name: 'Hosted script',
          type: 'BASIC',
          template_id: templateId,
          script_inputs: scriptInputs,
          next: [ids[2]],
        },
        { id: ids[2], name: 'End', type: 'ENDER' },
      ],
    });
    const started = await h.run(workflow.id, {});
    const execution: Execution = await h.pollUntilEnded(workflow.id, started.id);
    const rows = (await h
      .db('worker_executions')
      .where({ workflow_execution_id: execution.id, worker_id: ids[1] })
      .select('id')) as Array<{ id: string }>;
    const step = await h.workerExecution(rows[0]!.id);
    return { workflow, execution, step };
  }

  test('an unchanged hosted script creates, retrieves and queries a Portfolio and uses UserCache, for the run’s account', async () => {
    const tag = `hosted${Date.now()}`;
    const { workflow, execution, step } = await runStep({ tag, foreign_id: '' });
    expect(step.error_message).toBeNull();
    const result = step.result as Record<string, unknown>;
    // The real client, from the package index: pip's freeze of the template's virtualenv.
    const template = (await h.call('GET', `/v2/worker_templates/${templateId}`)).json().worker_template;
    expect(template.environment.build_log_tail).toMatch(/everysk[-_]lib==1\.14\.2/i);
    expect(result).toMatchObject({
      name: 'Hosted book',
      symbols: ['AAPL', 'JPM'],
      cached: { portfolio: result.id, symbols: ['AAPL', 'JPM'] },
      counted: 42,
      refused_without_credentials: 401,
    });
    expect(result.id).toMatch(/^port_/);
    expect(result.found).toEqual([result.id]);
    expect(result.workspace).toBe(execution.workspace ?? 'main');

    // The portfolio is the run's account's, audited as the workflow's worker; another account sees nothing.
    const mine = await h.call('GET', `/v2/portfolios/${result.id as string}`);
    expect(mine.statusCode).toBe(200);
    expect(mine.json().portfolio).toMatchObject({ name: 'Hosted book', tags: [tag] });
    const theirs = await h.call('GET', `/v2/portfolios/${result.id as string}`, undefined, other);
    expect(theirs.statusCode).toBe(404);
    const trail = await h
      .db('audit_logs')
      .where({ entity_id: result.id as string, operation: 'CREATE' })
      .select('source', 'account_id', 'workflow_id', 'workflow_execution_id');
    expect(trail).toEqual([
      {
        source: 'WORKER',
        account_id: h.account.accountId,
        workflow_id: workflow.id,
        workflow_execution_id: execution.id,
      },
    ]);

    // The cache entry is the account's too: the account's own SDK client reads it back.
    const cacheCall = (who: TestAccount) =>
      h.t.app.inject({
        method: 'POST',
        url: '/v1/sdk_function',
        headers: { authorization: who.bearer, 'content-type': 'text/html', 'content-encoding': 'gzip' },
        payload: gzipSync(
          JSON.stringify({
            class_name: 'UserCache',
            method_name: 'get',
            self_obj: null,
            params: { key: `hosted-${tag}` },
          }),
        ),
      });
    expect((await cacheCall(h.account)).json()).toEqual({ portfolio: result.id, symbols: ['AAPL', 'JPM'] });
    expect((await cacheCall(other)).json()).toBeNull();

    // The credentials the script found are the step's: its id and a token that opens nothing else.
    expect(result.sid).toBe(step.id);
    expect(result.token).toMatch(/^[0-9a-f]{48}$/);
    expect(h.account.bearer).not.toContain(result.token as string);
    const outside = await h.t.app.inject({
      method: 'POST',
      url: '/v1/sdk_function',
      headers: {
        authorization: `Bearer ${result.sid as string}:${result.token as string}`,
        'content-type': 'application/json',
      },
      payload: JSON.stringify({
        class_name: 'Portfolio',
        method_name: 'retrieve',
        self_obj: null,
        params: { entity_id: result.id },
      }),
    });
    expect(outside.statusCode).toBe(401);
  }, 180_000);

  test('the channel refuses what the HTTP route refuses: bad encodings, bodies that are not JSON, a gzip bomb', async () => {
    const { step } = await runStep({ tag: 'probe', foreign_id: '', probe: 'yes' });
    expect(step.error_message).toBeNull();
    const value = 'everysk.core.exceptions.SDKValueError';
    expect(step.result).toEqual({
      plain: [200, null],
      gzip: [200, null],
      not_gzip: [400, { error_message: 'malformed compressed request body', error_module: value }],
      brotli: [400, { error_message: 'unsupported Content-Encoding', error_module: value }],
      not_json: [400, { error_message: 'Request body is not valid JSON.', error_module: value }],
      proto: [400, { error_message: 'Object contains forbidden prototype property', error_module: value }],
      bomb: [413, { error_message: expect.stringMatching(/once inflated/), error_module: value }],
      not_offered: [400, { error_message: expect.stringMatching(/not offered/), error_module: value }],
    });
  }, 180_000);

  test('Workflow.run_and_wait from a step starts another run of the account and reads its Ender’s result', async () => {
    const ids = [workerId(), workerId()];
    const target = await h.store({
      name: 'Doubler',
      workers: [
        { id: ids[0], name: 'Start', type: 'STARTER', next: [ids[1]] },
        {
          id: ids[1],
          name: 'End',
          type: 'ENDER',
          script: 'function main(args) { return { doubled: args.inputs.amount * 2 }; }',
        },
      ],
    });
    const { step } = await runStep({ tag: 'nested', foreign_id: '', workflow_id: target.id });
    expect(step.error_message).toBeNull();
    expect(step.result).toEqual({ data: { doubled: 42 }, status: 'OK' });
    const runs = await h
      .db('workflow_executions')
      .where({ workflow_id: target.id })
      .select('account_id', 'run_status');
    expect(runs).toEqual([{ account_id: h.account.accountId, run_status: 'SUCCEEDED' }]);
    // Another account's workflow id is not found from a step.
    const theirIds = [workerId(), workerId()];
    const theirs = await h.store(
      {
        name: 'Theirs',
        workers: [
          { id: theirIds[0], name: 'Start', type: 'STARTER', next: [theirIds[1]] },
          { id: theirIds[1], name: 'End', type: 'ENDER', script: 'function main() { return 1; }' },
        ],
      },
      other,
    );
    const refused = await runStep({ tag: 'nested', foreign_id: '', workflow_id: theirs.id });
    expect(refused.step.error_message).toMatch(/not found/i);
    expect(await h.db('workflow_executions').where({ workflow_id: theirs.id }).count()).toEqual([
      { count: 0 },
    ]);
  }, 240_000);

  test('another account’s portfolio id is not found from a step: not read, not changed, not removed', async () => {
    const created = await h.call(
      'POST',
      '/v2/portfolios',
      {
        name: 'Theirs',
        workspace: 'main',
        date: '20221228',
        securities: [{ id: 'p1', symbol: 'AAPL', quantity: 1 }],
      },
      other,
    );
    expect(created.statusCode).toBe(200);
    const foreignId = created.json().portfolio.id as string;
    const { step } = await runStep({ tag: 'trespass', foreign_id: foreignId });
    expect(step.error_message).toBeNull();
    // A 404 with the SDK's error body: everysk-lib raises it as SDKError carrying that body (as it
    // does against the HTTP route), naming EntityNotFound.
    const notFound = new RegExp(
      `^SDKError: .*portfolio ${foreignId} not found.*everysk\\.core\\.exceptions\\.EntityNotFound`,
    );
    expect(step.result).toEqual({
      retrieved: 'None',
      modified: expect.stringMatching(notFound),
      removed: expect.stringMatching(notFound),
    });
    const theirs = await h.call('GET', `/v2/portfolios/${foreignId}`, undefined, other);
    expect(theirs.statusCode).toBe(200);
    expect(theirs.json().portfolio.name).toBe('Theirs');
  }, 180_000);
});
