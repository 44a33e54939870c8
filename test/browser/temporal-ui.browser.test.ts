import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { testChromium } from '../support/chromium';
import { type Execution, startHarness, type WorkflowHarness, workerId } from '../workflows/workflow-harness';

const ARTIFACTS = path.resolve(__dirname, '..', '..', 'test-artifacts');

/**
 * What an operator sees in the Temporal Web UI (the dev server's, as `npm start` runs it): a failed
 * run is Failed, with the failure naming the worker, its execution and the script's message; its
 * retry is a run of its own that completes. The screenshots (test-artifacts/temporal-ui-*.png) are
 * the README's.
 */
describe('the Temporal UI shows failed runs and their retries', () => {
  let h: WorkflowHarness;
  let ui = '';
  let context: BrowserContext | null = null;
  let profile = '';

  beforeAll(async () => {
    const url = process.env.TEST_TEMPORAL_UI_URL;
    if (!url) {
      throw new Error('TEST_TEMPORAL_UI_URL is not set: the global setup sets it when it starts Temporal.');
    }
    ui = url;
    mkdirSync(ARTIFACTS, { recursive: true });
    h = await startHarness({ worker: true });
    const browser = await testChromium();
    profile = mkdtempSync(path.join(os.tmpdir(), 'pas-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: browser.executablePath,
      headless: true,
      args: browser.args,
      viewport: { width: 1400, height: 900 },
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await h?.close();
  });

  async function open(url: string): Promise<Page> {
    const page = await context!.newPage();
    const response = await page.goto(url);
    expect(response?.status()).toBe(200);
    return page;
  }

  test('a failed run is Failed with its worker, execution and message; its retry completes', async () => {
    const flag = `prices-${Math.random().toString(36).slice(2, 10)}`;
    const [s, load, report] = [workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Daily risk',
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [load] },
        {
          id: load,
          name: 'Load prices',
          type: 'BASIC',
          script: `async function main(args) {
            const ready = await sdk.listDatastores({ query: { filters: [['name', '=', '${flag}']] } });
            if (ready.datastores.length === 0) throw new Error('no prices for 20240101');
            return { prices: 3 };
          }`,
          next: [report],
        },
        { id: report, name: 'Report', type: 'ENDER', script: 'function main(args) { return args.inputs; }' },
      ],
    });
    const started = await h.run(workflow.id);
    const failed = await h.pollUntilEnded(workflow.id, started.id);
    expect(failed.run_status).toBe('FAILED');
    await expect(h.t.temporal.workflow.getHandle(failed.id).result()).rejects.toThrow();
    const failedStep = (failed.resume as { failure: { worker_execution_id: string } }).failure
      .worker_execution_id;

    const failedPage = await open(`${ui}/namespaces/default/workflows/${failed.id}`);
    await failedPage.getByText('Failed', { exact: true }).first().waitFor({ timeout: 30_000 });
    await failedPage
      .getByText(`Worker Load prices (${load}; worker execution ${failedStep}) failed`)
      .first()
      .waitFor({ timeout: 30_000 });
    await failedPage.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-failed-run.png'), fullPage: true });

    const raised = await h.call('POST', '/v2/datastores', { name: flag, data: [] });
    expect(raised.statusCode).toBe(200);
    const retried = await h.call(
      'POST',
      `/v2/workflows/${workflow.id}/workflow_executions/${failed.id}/retry`,
      {},
    );
    expect(retried.statusCode).toBe(202);
    const retry = await h.pollUntilEnded(workflow.id, (retried.json().workflow_execution as Execution).id);
    expect(retry).toMatchObject({ run_status: 'SUCCEEDED', retry_of: failed.id });
    await h.t.temporal.workflow.getHandle(retry.id).result();

    // The workflow's runs, filtered as the README says: the failed one red, its retry completed.
    const query = encodeURIComponent(`PasWorkflowId = "${workflow.id}"`);
    const listPage = await open(`${ui}/namespaces/default/workflows?query=${query}`);
    await listPage.getByText(retry.id).first().waitFor({ timeout: 30_000 });
    await listPage.getByText(failed.id).first().waitFor({ timeout: 30_000 });
    await listPage.getByText('Completed', { exact: true }).first().waitFor({ timeout: 30_000 });
    await listPage.getByText('Failed', { exact: true }).first().waitFor({ timeout: 30_000 });
    await listPage.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-runs.png'), fullPage: true });

    const retryPage = await open(`${ui}/namespaces/default/workflows/${retry.id}`);
    await retryPage.getByText('Completed', { exact: true }).first().waitFor({ timeout: 30_000 });
    await retryPage.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-retry.png'), fullPage: true });
  }, 180_000);
});
