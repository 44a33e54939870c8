import { createOAuthClient } from '../../engine/identity/account-store';
import type { TestAccount } from '../support/test-app';
import { startHarness, type WorkflowHarness, workerId } from './workflow-harness';

/**
 * The run endpoint's two triggers, told apart by the credentials: an API key's runs are `API`, an
 * OAuth 2.0 access token's (a person's session) are `MANUAL`. Both go through the same path to a
 * real Temporal run, and both write their EXECUTE audit record with the credential that started it.
 */
describe('MANUAL and API triggers', () => {
  let h: WorkflowHarness;
  let workflowId: string;
  let oauth: TestAccount;

  beforeAll(async () => {
    h = await startHarness({ worker: true });
    const [s, e] = [workerId(), workerId()];
    const workflow = await h.store({
      name: 'Echo',
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [e] },
        { id: e, name: 'End', type: 'ENDER', script: 'function main(args) { return { got: args.inputs }; }' },
      ],
    });
    workflowId = workflow.id;
    const client = await createOAuthClient(h.db, { accountId: h.account.accountId, name: 'analyst session' });
    const token = await h.t.app.inject({
      method: 'POST',
      url: '/v2/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `grant_type=client_credentials&client_id=${client.client_id}&client_secret=${client.client_secret}`,
    });
    expect(token.statusCode).toBe(200);
    oauth = { ...h.account, bearer: `Bearer ${token.json().access_token}` };
  }, 120_000);
  afterAll(() => h.close());

  async function executeRecord(executionId: string) {
    return h.db('audit_logs').where({ entity_id: executionId, operation: 'EXECUTE' }).first();
  }

  test('an API key starts an API run', async () => {
    const started = await h.run(workflowId, { n: 1 });
    expect(started).toMatchObject({ trigger: 'API', run_status: 'RUNNING', status: 'OK' });
    const ended = await h.pollUntilEnded(workflowId, started.id);
    expect(ended).toMatchObject({ trigger: 'API', run_status: 'SUCCEEDED', status: 'COMPLETED' });
    expect(await executeRecord(started.id)).toMatchObject({
      source: 'API',
      credential_type: 'API_KEY',
      credential_id: h.account.key.account_sid,
    });
  });

  test('an OAuth access token starts a MANUAL run; both are listed with their trigger', async () => {
    const started = await h.run(workflowId, { n: 2 }, oauth);
    expect(started).toMatchObject({ trigger: 'MANUAL', run_status: 'RUNNING' });
    const ended = await h.pollUntilEnded(workflowId, started.id, oauth);
    expect(ended).toMatchObject({ trigger: 'MANUAL', run_status: 'SUCCEEDED' });
    expect((await h.workerExecution(ended.ender_worker_execution_id!)).result).toEqual({ got: { n: 2 } });
    expect(await executeRecord(started.id)).toMatchObject({ credential_type: 'OAUTH2' });

    const list = await h.call('GET', `/v2/workflows/${workflowId}/workflow_executions`);
    const triggers = list.json().workflow_executions.map((x: { trigger: string }) => x.trigger);
    expect(triggers).toEqual(['MANUAL', 'API']);
    // The Temporal run carries the trigger as a search attribute, for the Temporal UI.
    const description = await h.t.temporal.workflow.getHandle(started.id).describe();
    expect(description.searchAttributes.PasTrigger).toEqual(['MANUAL']);
  });
});
