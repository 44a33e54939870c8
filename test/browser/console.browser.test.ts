/**
 * The web console at /console in headless Chromium, on the real app with a real Temporal worker:
 * sign in with an API key, find the workflow, run it, watch it fail live, read the failed step's log
 * (a script's `<img onerror>` and `</script>` shown as text), retry from that step, page and filter
 * runs, read a template's code, sign out. Also the session's cookie, CSRF, expiry and cross-account
 * cases, through the same routes. Screenshots of each page go to test-artifacts/console/.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { createOAuthClient } from '../../engine/identity/account-store';
import { createTestAccount, type TestAccount } from '../support/test-app';
import { publishBuiltinTemplates } from '../../engine/worker-templates/builtin-templates';
import { testChromium } from '../support/chromium';
import { startHarness, type WorkflowHarness, workerId } from '../workflows/workflow-harness';

const SHOTS = path.resolve(__dirname, '..', '..', 'test-artifacts', 'console');
const HOSTILE_IMG = '<img src=x onerror="window.__xss = 1">';
const HOSTILE_SCRIPT = '</script><script>window.__xss = 2</script>';

describe('the web console in headless Chromium', () => {
  let h: WorkflowHarness;
  let origin: string;
  let browser: Awaited<ReturnType<typeof testChromium>>;
  let other: TestAccount;
  const profiles: string[] = [];
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    browser = await testChromium();
    mkdirSync(SHOTS, { recursive: true });
    h = await startHarness({ worker: true });
    other = await createTestAccount(h.db);
    // What the API and worker publish at start: the built-in templates.
    await publishBuiltinTemplates(h.db);
    origin = await h.t.app.listen({ port: 0, host: '127.0.0.1' });
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    for (const profile of profiles) rmSync(profile, { recursive: true, force: true });
    await h?.close();
  });

  /** A fresh browser with an empty profile; `bypassCSP` only for a test that injects its own script. */
  async function launch(viewport = { width: 1280, height: 800 }, bypassCSP = false) {
    const profile = mkdtempSync(path.join(os.tmpdir(), 'pas-console-'));
    profiles.push(profile);
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: browser.executablePath,
      headless: true,
      args: browser.args,
      viewport,
      bypassCSP,
    });
    contexts.push(context);
    return context;
  }

  /** Console complaints (a CSP refusal, a script error) mean the page did not work as written. */
  function watch(page: Page): string[] {
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text() + JSON.stringify(message.location()));
    });
    page.on('pageerror', (error) => problems.push(error.message));
    return problems;
  }

  async function signIn(page: Page, who: TestAccount = h.account) {
    await page.goto(`${origin}/console`);
    await page.getByLabel('Account SID').fill(who.key.account_sid);
    await page.getByLabel('Auth token').fill(who.key.auth_token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Workflows' }).waitFor();
  }

  /** A flag the gated step waits for: a datastore of that name. */
  async function raise(flag: string) {
    const res = await h.call('POST', '/v2/datastores', { name: flag, data: [] });
    expect(res.statusCode).toBe(200);
  }

  /** Waits (up to 10 s) until `ready` answers true. */
  async function until(ready: () => Promise<boolean>) {
    const deadline = Date.now() + 10_000;
    while (!(await ready())) {
      if (Date.now() > deadline) throw new Error('timed out waiting');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async function shot(page: Page, name: string) {
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  }

  /** S → Load prices (logs hostile text; fails until `flag` is raised) → E. */
  async function gatedWorkflow(flag: string) {
    const [s, b, c, e, alert] = [workerId(), workerId(), workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: `Daily prices ${flag}`,
      description: 'Loads the day’s prices, checks them, and reports.',
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [b] },
        {
          id: b,
          name: 'Load prices',
          type: 'BASIC',
          script: `async function main(args) {
            console.log(${JSON.stringify(HOSTILE_IMG)});
            console.log(${JSON.stringify(HOSTILE_SCRIPT)});
            const flags = await sdk.listDatastores({ query: { filters: [['name', '=', '${flag}']] } });
            if (flags.datastores.length === 0) throw new Error('no prices for 20240102 <b>yet</b>');
            return { prices: 3 };
          }`,
          next: [c],
        },
        {
          id: c,
          name: 'Enough?',
          type: 'CONDITIONAL',
          script: 'function main(args) { return args.inputs.prices > 0; }',
          next_true: [e],
          next_false: [alert],
        },
        { id: alert, name: 'Alert desk', type: 'BASIC', script: 'function main() { return {}; }', next: [e] },
        { id: e, name: 'Report', type: 'ENDER', script: 'function main(args) { return { done: true }; }' },
      ],
    });
    return workflow;
  }

  test('sign in, run a workflow, watch it fail live, read the hostile log as text, retry from the step, sign out', async () => {
    const flag = `flag-${Math.random().toString(36).slice(2, 8)}`;
    const workflow = await gatedWorkflow(flag);
    const context = await launch();
    const page = await context.newPage();
    const problems = watch(page);

    const first = await page.goto(`${origin}/console`);
    const csp = first?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    // No inline script, and no inline style sheet: only style attributes (the code editor's).
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
    expect(csp).toContain("style-src 'self';");
    expect(csp).toContain("style-src-attr 'unsafe-inline'");
    expect(csp).toContain("frame-ancestors 'none'");
    await page.getByLabel('Account SID').waitFor();
    await shot(page, '01-sign-in');

    // A wrong token: refused, said beside the form, no cookie.
    await page.getByLabel('Account SID').fill(h.account.key.account_sid);
    await page.getByLabel('Auth token').fill('wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('401');
    expect((await context.cookies()).length).toBe(0);
    // The browser reports that refused request as a failed load; nothing else may complain.
    expect(problems).toEqual([expect.stringContaining('401')]);
    problems.length = 0;

    await signIn(page);
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: 'pas_console', httpOnly: true, sameSite: 'Strict', secure: false });
    const login = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, operation: 'LOGIN', entity_type: 'UserEvent' })
      .first();
    expect(login).toMatchObject({ source: 'PLATFORM' });

    await page.getByRole('link', { name: workflow.name }).waitFor();
    await shot(page, '02-workflows');
    await page.getByRole('link', { name: workflow.name }).click();
    await page.getByRole('heading', { name: workflow.name }).waitFor();
    // The graph: five steps, the conditional's two labelled edges.
    expect(await page.locator('.graph g.node').count()).toBe(5);
    expect(await page.locator('.graph .edge-label').allTextContents()).toEqual(['true', 'false']);
    await shot(page, '03-workflow');

    // Input that is not a JSON object is refused beside the field, before anything is sent.
    await page.getByLabel(/^Input/).fill('{"date": 2024');
    await page.getByRole('button', { name: 'Run' }).click();
    await expect(page.locator('#run-form .error').textContent()).resolves.toContain('Not JSON');
    await page.getByLabel(/^Input/).fill('[1, 2]');
    await page.getByRole('button', { name: 'Run' }).click();
    await expect(page.locator('#run-form .error').textContent()).resolves.toContain('JSON object');
    const runs = await h.db('workflow_executions').where({ workflow_id: workflow.id }).count({ n: '*' });
    expect(Number(runs[0]!.n)).toBe(0);

    await page.getByLabel(/^Input/).fill('{"date": "20240102"}');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.waitForURL(/#\/runs\/wrkf_\w+\/wfex_\w+$/);
    // A mark that a reload would wipe: the run must end on this very page (server-sent events).
    await page.evaluate(() => ((globalThis as unknown as { __mark: number }).__mark = 42));
    await page.locator('h1 .badge-failed').waitFor({ timeout: 30_000 });
    expect(await page.evaluate(() => (globalThis as unknown as { __mark?: number }).__mark)).toBe(42);

    // The failed step opens by itself: its error and its log lines, as text.
    await page.locator('#step-error').waitFor();
    await expect(page.locator('#step-error').textContent()).resolves.toContain(
      'no prices for 20240102 <b>yet</b>',
    );
    const lines = await page.locator('#step-log li').allTextContents();
    expect(lines.some((line) => line.includes(HOSTILE_IMG))).toBe(true);
    expect(lines.some((line) => line.includes(HOSTILE_SCRIPT))).toBe(true);
    expect(
      await page.locator('#step-log img, #step-detail img, #step-detail b, #step-detail script').count(),
    ).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.getByRole('link', { name: 'Open in the Temporal UI' }).getAttribute('href')).toMatch(
      /^http:\/\/temporal-ui\.test\/namespaces\/default\/workflows\/wfex_\w+$/,
    );
    await shot(page, '04-run-failed');

    // Retry from the failed step once the prices are there: a new run, which succeeds live.
    await raise(flag);
    const failedUrl = page.url();
    await page.getByRole('button', { name: 'Retry from “Load prices”' }).click();
    await page.waitForURL((url) => url.toString() !== failedUrl && /wfex_/.test(url.toString()));
    await page.locator('h1 .badge-succeeded').waitFor({ timeout: 30_000 });
    // The steps before the failed one were reused, not run again.
    await page.locator('#timeline li').first().waitFor();
    expect(await page.locator('#timeline li').count()).toBe(4);
    await page.locator('#timeline button', { hasText: 'Report' }).click();
    await expect(page.locator('#step-result').textContent()).resolves.toContain('"done": true');
    await shot(page, '05-run-retried');

    // Runs: both, newest first; filtered to FAILED, one.
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await page.locator('#runs tbody tr').nth(1).waitFor();
    await expect(page.locator('#runs tbody tr').first().locator('.badge').textContent()).resolves.toBe(
      'SUCCEEDED',
    );
    await page.getByLabel('Status').selectOption('FAILED');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/run_status=FAILED/);
    await until(async () => (await page.locator('#runs tbody tr').count()) === 1);
    await shot(page, '06-runs');

    // Templates: the built-in ones, and one's code, read-only.
    await page.getByRole('link', { name: 'Templates' }).click();
    await page.getByRole('heading', { name: 'Worker templates' }).waitFor();
    await page.locator('table.list tbody tr a').first().waitFor();
    await shot(page, '07-templates');
    await page.locator('table.list tbody tr a').first().click();
    await page.locator('#template-code .cm-content').waitFor();
    expect((await page.locator('#template-code .cm-content').textContent())!.length).toBeGreaterThan(20);
    await shot(page, '08-template');

    // Sign out: the session is gone server-side, LOGOUT is audited, the old cookie opens nothing.
    const oldCookie = (await context.cookies())[0]!.value;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Account SID').waitFor();
    expect(await context.cookies()).toEqual([]);
    const logout = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, operation: 'LOGOUT', entity_type: 'UserEvent' })
      .first();
    expect(logout).toMatchObject({ source: 'PLATFORM' });
    const after = await h.t.app.inject({
      method: 'GET',
      url: '/console/session',
      headers: { cookie: `pas_console=${oldCookie}` },
    });
    expect(after.json()).toEqual({ signed_in: false });
    const change = await h.t.app.inject({
      method: 'POST',
      url: '/v2/datastores',
      payload: { name: 'after sign-out', data: [] },
      headers: { cookie: `pas_console=${oldCookie}` },
    });
    expect(change.statusCode).toBe(401);
    expect(problems).toEqual([]);
  }, 120_000);

  test('publish a template from the editor, try it on an input, try a draft, publish a new version', async () => {
    const context = await launch();
    const page = await context.newPage();
    const problems = watch(page);
    await signIn(page);
    await page.getByRole('link', { name: 'Templates' }).click();
    await page.getByRole('link', { name: 'New template' }).click();
    await page.getByLabel('Name').fill('Scale prices');
    const code = page.locator('#template-code .cm-content');
    await code.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(
      'async function main(args) {\n  console.log("<b>scaling</b>");\n  return { scaled: args.inputs.prices * args.inputs.factor };\n}\n',
    );
    await shot(page, '10-template-new');
    await page.getByRole('button', { name: 'Publish' }).click();
    await page.getByRole('heading', { name: 'Scale prices' }).waitFor();
    // Highlighted by the editor (its syntax classes), and editable: the account's own.
    expect(await page.locator('#template-code .cm-content').getAttribute('contenteditable')).toBe('true');
    expect(await page.locator('#template-code .cm-line span').count()).toBeGreaterThan(3);

    await page.getByLabel(/^Input \(what/).fill('{"prices": 21, "factor": 2}');
    await page.getByRole('button', { name: 'Try it' }).click();
    await page.locator('#try-result').waitFor({ timeout: 30_000 });
    await expect(page.locator('#try-result').textContent()).resolves.toContain('"scaled": 42');
    await expect(page.locator('#try-log').textContent()).resolves.toContain('<b>scaling</b>');
    expect(await page.locator('#try-output b').count()).toBe(0);
    await shot(page, '11-template-try');
    const tried = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, operation: 'EXECUTE', entity_type: 'WorkerTemplate' })
      .first();
    expect(tried).toMatchObject({ source: 'PLATFORM', entity_name: 'Scale prices' });
    // No run was recorded by trying.
    const runs = await h
      .db('workflow_executions')
      .where({ account_id: h.account.accountId })
      .count({ n: '*' });
    const before = Number(runs[0]!.n);

    // A draft that throws: tried as written, not published.
    await page.locator('#template-code .cm-content').click();
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText('function main() { throw new Error("draft broke"); }\n');
    await page.getByRole('button', { name: 'Try it' }).click();
    await page.locator('#try-error').waitFor({ timeout: 30_000 });
    await expect(page.locator('#try-error').textContent()).resolves.toContain('draft broke');
    const id = /#\/templates\/(wtpl_\w+)/.exec(page.url())![1]!;
    const stored = await h.call('GET', `/v2/worker_templates/${id}`);
    expect(stored.json().worker_template).toMatchObject({ version: '1' });

    // Publishing makes it version 2.
    await page.locator('#template-code .cm-content').click();
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText('function main(args) { return { version: 2 }; }\n');
    await page.getByRole('button', { name: 'Publish a new version' }).click();
    await page.locator('#publish-status', { hasText: 'Published version 2.' }).waitFor();
    const republished = await h.call('GET', `/v2/worker_templates/${id}`);
    expect(republished.json().worker_template.script).toContain('version: 2');
    // Its versions: both, newest first; the first one's code opens beside the list.
    await page.locator('#versions li').nth(1).waitFor();
    expect(await page.locator('#versions button').allTextContents()).toEqual(['Version 2', 'Version 1']);
    await page.locator('#versions button', { hasText: 'Version 1' }).click();
    await expect(page.locator('#version-code pre').textContent()).resolves.toContain('<b>scaling</b>');
    await shot(page, '12-template-versions');
    const after = await h
      .db('workflow_executions')
      .where({ account_id: h.account.accountId })
      .count({ n: '*' });
    expect(Number(after[0]!.n)).toBe(before);

    // A built-in is read-only, with a way to start one's own from it.
    await page.getByRole('link', { name: 'Templates' }).click();
    await page.getByRole('link', { name: 'Stress test' }).click();
    await page.locator('#template-code .cm-content').waitFor();
    expect(await page.locator('#template-code .cm-content').getAttribute('contenteditable')).toBe('false');
    await page.getByRole('link', { name: 'Start a template of your own from it' }).waitFor();
    await shot(page, '12b-template-builtin');
    expect(problems).toEqual([]);
  }, 120_000);

  test('build a workflow from a template in the editor (errors beside their fields), run it, watch it live, edit it', async () => {
    const made = await h.call('POST', '/v2/worker_templates', {
      name: 'Double it',
      type: 'BASIC',
      script_runtime: 'javascript',
      script: 'function main(args) { return { doubled: args.script_inputs.n * 2 }; }',
      form_inputs: [{ id: 'n', name: 'Number', type: 'number', required: true }],
    });
    expect(made.statusCode).toBe(200);
    const context = await launch();
    const page = await context.newPage();
    const problems = watch(page);
    await signIn(page);
    await page.getByRole('link', { name: 'New workflow' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Doubling');
    // A schedule the API refuses, and a step without a name: each message shows beside its field.
    await page.getByLabel('Trigger type').selectOption('TIME_BASED');
    await page.getByLabel(/^Schedule/).fill('every morning');
    await page.getByRole('button', { name: 'Add a step' }).click();
    await page.getByLabel('Step name').fill('');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await page.locator('#step-panel [role=alert]').waitFor();
    await expect(page.locator('#step-panel [role=alert]').textContent()).resolves.toBe(
      'workers[1].name must not be empty.',
    );
    await expect(page.getByLabel('Step name').getAttribute('aria-invalid')).resolves.toBe('true');
    await shot(page, '13-workflow-form-errors');
    await page.getByLabel('Runs').selectOption({ label: 'Double it (javascript)' });
    await page.getByLabel('Number (required)').fill('21');
    await page.getByLabel('Step name').fill('Double');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    const trigger = page.locator('section', { hasText: 'Schedule' }).locator('[role=alert]');
    await trigger.waitFor();
    await expect(trigger.textContent()).resolves.toContain('must have 5 fields');
    expect(await page.locator('#step-panel [role=alert]').count()).toBe(0);
    await page.getByLabel('Trigger type').selectOption('MANUAL');
    await shot(page, '14-workflow-form');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await page.getByRole('heading', { name: 'Doubling', exact: true }).waitFor();
    expect(await page.locator('.graph g.node').count()).toBe(3);

    await page.getByRole('button', { name: 'Run' }).click();
    await page.locator('h1 .badge-succeeded').waitFor({ timeout: 30_000 });
    await page.locator('#timeline button', { hasText: 'End' }).click();
    await expect(page.locator('#step-result').textContent()).resolves.toContain('"doubled": 42');

    // Edit: the editor comes back filled in; a new name is saved.
    await page.getByRole('link', { name: 'Workflow', exact: true }).click();
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByLabel('Edit step').selectOption({ label: 'Double (BASIC)' });
    await expect(page.getByLabel('Number (required)').inputValue()).resolves.toBe('21');
    await page.getByLabel('Name', { exact: true }).fill('Doubling, renamed');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'Doubling, renamed', exact: true }).waitFor();
    // The browser reports the two refused saves as failed loads; nothing else may complain.
    expect(problems).toEqual([
      expect.stringContaining('400 (Bad Request)'),
      expect.stringContaining('400 (Bad Request)'),
    ]);
  }, 120_000);

  test('bulk retry of failed runs; the data pages: a datastore paged, a file downloaded, a report opened, the audit log', async () => {
    const flag = `bulk-${Math.random().toString(36).slice(2, 8)}`;
    const workflow = await gatedWorkflow(flag);
    for (let i = 0; i < 2; i++) {
      const run = await h.run(workflow.id);
      expect(await h.pollUntilEnded(workflow.id, run.id)).toMatchObject({ run_status: 'FAILED' });
    }
    await raise(flag);
    const rows = [['symbol', 'price'], ...Array.from({ length: 120 }, (_, i) => [`S${i + 1}`, i + 1])];
    expect((await h.call('POST', '/v2/datastores', { name: 'Prices table', data: rows })).statusCode).toBe(
      200,
    );
    const file = await h.call('POST', '/v2/files', {
      name: 'prices.csv',
      description: 'Closing prices',
      content_type: 'text/csv',
      data: Buffer.from('symbol,price\nAAPL,1\n').toString('base64'),
    });
    expect(file.statusCode).toBe(200);
    const report = await h.call('POST', '/v2/reports', { name: 'Desk report', description: 'For the desk' });
    expect(report.statusCode).toBe(200);

    const context = await launch();
    const page = await context.newPage();
    const problems = watch(page);
    await signIn(page);
    await page.goto(`${origin}/console#/runs?workflow_id=${workflow.id}&run_status=FAILED`);
    await page.getByRole('button', { name: 'Retry every failed run shown, from its failed step' }).click();
    await page.locator('#bulk-status', { hasText: 'Retried 2; skipped 0.' }).waitFor();
    const retries = await h
      .db('workflow_executions')
      .where({ workflow_id: workflow.id })
      .whereNotNull('retry_of');
    expect(retries).toHaveLength(2);

    await page.getByRole('link', { name: 'Data' }).click();
    await page.getByRole('link', { name: 'Prices table' }).click();
    await page.locator('#datastore-table tbody tr').first().waitFor();
    expect(await page.locator('#datastore-table tbody tr').count()).toBe(50);
    await page.getByRole('link', { name: 'Next →' }).click();
    await page.getByText('Rows 51–100 of 120').waitFor();
    await expect(
      page.locator('#datastore-table tbody tr').first().locator('td').first().textContent(),
    ).resolves.toBe('S51');
    await shot(page, '15-datastore');

    await page.getByRole('link', { name: 'Files' }).click();
    const download = page.locator('#files a', { hasText: 'Download' }).first();
    await download.waitFor();
    const fetched = await page.request.get(origin + (await download.getAttribute('href'))!);
    expect(fetched.status()).toBe(200);
    expect(await fetched.text()).toBe('symbol,price\nAAPL,1\n');

    await page.getByRole('link', { name: 'Reports' }).click();
    const opened = page.locator('#reports a', { hasText: 'Desk report' });
    await opened.waitFor();
    const reportPage = await page.request.get(origin + (await opened.getAttribute('href'))!);
    expect(reportPage.status()).toBe(200);
    expect(await reportPage.text()).toContain('Desk report');

    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.locator('#audit tbody tr').first().waitFor();
    // What was done here is on record as the web app's (PLATFORM).
    expect(await page.locator('#audit').textContent()).toContain('Downloaded file prices.csvVIEWPLATFORM');
    await shot(page, '16-audit-log');
    expect(problems).toEqual([]);
  }, 120_000);

  test('every page passes axe-core’s checks (WCAG 2 A and AA) at 1280×800 and on a phone', async () => {
    const axe = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
    const workflow = await gatedWorkflow(`axe-${Math.random().toString(36).slice(2, 8)}`);
    const run = await h.run(workflow.id);
    await h.pollUntilEnded(workflow.id, run.id);
    const templateId = (await h.call('GET', '/v2/worker_templates?page_size=1')).json().worker_templates[0]
      .id;
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      // axe is injected as a script of the test's own: this context alone lets it past the page's CSP.
      const context = await launch(viewport, true);
      const page = await context.newPage();
      const check = async (name: string) => {
        await page.addScriptTag({ content: axe });
        const violations = await page.evaluate(async () => {
          const result = await (
            globalThis as unknown as {
              axe: {
                run(
                  o: object,
                ): Promise<{ violations: Array<{ id: string; impact: string; nodes: unknown[] }> }>;
              };
            }
          ).axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] } });
          return result.violations.map(
            (v) =>
              `${v.id} (${v.impact}, ${JSON.stringify(v.nodes.map((n) => (n as { target: unknown }).target))})`,
          );
        });
        expect([name, violations]).toEqual([name, []]);
      };
      await page.goto(`${origin}/console`);
      await page.getByLabel('Account SID').waitFor();
      await check('sign-in');
      await signIn(page);
      await check('workflows');
      for (const [hash, ready] of [
        [`#/workflows/${workflow.id}`, '.graph'],
        ['#/workflows/new', '#wf-steps'],
        [`#/runs/${workflow.id}/${run.id}`, '#timeline'],
        ['#/runs', '#runs'],
        ['#/templates', 'table.list'],
        [`#/templates/${templateId}`, '#template-code .cm-content'],
        ['#/data', '#datastores, .note'],
        ['#/data/audit', '#audit'],
      ] as const) {
        await page.goto(`${origin}/console${hash}`);
        await page.locator(ready).first().waitFor();
        await check(hash);
      }
    }
  }, 120_000);

  test('a schedule shows its next five firings; a webhook its URL with the key masked, and a copy button', async () => {
    const [s, e] = [workerId(), workerId()];
    const chain = [
      { id: s, name: 'Start', type: 'STARTER', next: [e] },
      { id: e, name: 'End', type: 'ENDER' },
    ];
    const scheduled = await h.store({
      name: 'Weekday 07:00 Paris',
      trigger_type: 'TIME_BASED',
      trigger_config: { cron: '0 7 * * 1-5', timezone: 'Europe/Paris' },
      trigger_enabled: true,
      workers: chain,
    });
    const integration = await h.call('POST', '/v2/integrations', { name: 'Prices feed', type: 'WEBHOOK' });
    expect(integration.statusCode).toBe(200);
    const integrationId = integration.json().integration.id as string;
    const hooked = await h.store({
      name: 'On prices',
      trigger_type: 'FILE_RECEIVED',
      trigger_config: { integration_id: integrationId },
      workers: chain,
    });
    const context = await launch();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    const page = await context.newPage();
    const problems = watch(page);
    await signIn(page);
    await page.goto(`${origin}/console#/workflows/${scheduled.id}`);
    await page.locator('#next-firings li').nth(4).waitFor();
    const firings = await page.locator('#next-firings li').allTextContents();
    expect(firings).toHaveLength(5);
    for (const text of firings) {
      // 07:00 in Paris is 05:00 or 06:00 UTC, Monday to Friday.
      const at = new Date(text.replace(' UTC', 'Z').replace(' ', 'T'));
      expect([5, 6]).toContain(at.getUTCHours());
      expect(at.getUTCMinutes()).toBe(0);
      expect([1, 2, 3, 4, 5]).toContain(at.getUTCDay());
      expect(at.getTime()).toBeGreaterThan(Date.now());
    }
    await shot(page, '17-schedule');

    await page.goto(`${origin}/console#/workflows/${hooked.id}`);
    await page.locator('#webhook-url').waitFor();
    await expect(page.locator('#webhook-url').textContent()).resolves.toBe(
      `${origin}/v2/integrations/${integrationId}/webhook?key=••••••••`,
    );
    expect(await page.content()).not.toContain(h.account.key.auth_token);
    await page.getByRole('button', { name: 'Copy URL' }).click();
    await page.getByText(/^Copied/).waitFor();
    const clip = await page.evaluate(() =>
      (
        globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
      ).navigator.clipboard.readText(),
    );
    expect(clip).toBe(`${origin}/v2/integrations/${integrationId}/webhook?key=YOUR_AUTH_TOKEN`);
    expect(problems).toEqual([]);
    // Its Temporal Schedule goes with it (the suites share one Temporal server).
    expect((await h.call('DELETE', `/v2/workflows/${scheduled.id}`)).statusCode).toBe(200);
  });

  /** A session's cookie and CSRF token, opened through the route the page uses. */
  async function session(who: TestAccount = h.account) {
    const res = await h.t.app.inject({
      method: 'POST',
      url: '/console/session',
      payload: { sid: who.key.account_sid, token: who.key.auth_token },
    });
    expect(res.statusCode).toBe(200);
    const cookie = /pas_console=([^;]+)/.exec(String(res.headers['set-cookie']))![1]!;
    return { cookie: `pas_console=${cookie}`, token: cookie, csrf: res.json().csrf_token as string };
  }

  test('an OAuth client signs in too; its revocation ends the session; a wrong secret or mixed fields are refused', async () => {
    const client = await createOAuthClient(h.db, { accountId: h.account.accountId, name: 'console probe' });
    const context = await launch();
    const page = await context.newPage();
    await page.goto(`${origin}/console`);
    await page.getByRole('button', { name: 'OAuth client' }).click();
    await page.getByLabel('Client id').fill(client.client_id);
    await page.getByLabel('Client secret').fill(client.client_secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Workflows' }).waitFor();
    const cookie = (await context.cookies())[0]!;
    const ask = () =>
      h.t.app.inject({
        method: 'GET',
        url: '/v2/workflows',
        headers: { cookie: `pas_console=${cookie.value}` },
      });
    expect((await ask()).statusCode).toBe(200);
    const login = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, operation: 'LOGIN', credential_id: client.client_id })
      .first();
    expect(login).toMatchObject({ source: 'PLATFORM', entity_type: 'UserEvent' });
    await h.db('oauth_clients').where({ client_id: client.client_id }).update({ revoked_at: h.db.fn.now() });
    expect((await ask()).statusCode).toBe(401);
    for (const payload of [
      { client_id: client.client_id, client_secret: 'wrong' },
      { sid: h.account.key.account_sid, token: h.account.key.auth_token, client_id: client.client_id },
      { sid: h.account.key.account_sid },
    ]) {
      const res = await h.t.app.inject({ method: 'POST', url: '/console/session', payload });
      expect([400, 401]).toContain(res.statusCode);
      expect(res.headers['set-cookie']).toBeUndefined();
    }
  });

  test('a change without the session’s CSRF token is refused and changes nothing; with it, it is made', async () => {
    const s = await session();
    const body = { name: 'csrf probe', data: [] };
    const count = async () =>
      Number(
        (
          await h
            .db('entities')
            .where({ account_id: h.account.accountId, name: 'csrf probe' })
            .count({ n: '*' })
        )[0]!.n,
      );
    for (const headers of [{ cookie: s.cookie }, { cookie: s.cookie, 'x-csrf-token': 'guess' }]) {
      const res = await h.t.app.inject({ method: 'POST', url: '/v2/datastores', payload: body, headers });
      expect(res.statusCode).toBe(403);
      expect(res.json().message).toContain('CSRF');
    }
    expect(await count()).toBe(0);
    const denied = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, status: 'DENIED', source: 'PLATFORM' })
      .first();
    expect(denied).toBeDefined();
    // Reads need no token; a change with it goes through, audited as the web app's.
    expect(
      (await h.t.app.inject({ method: 'GET', url: '/v2/datastores', headers: { cookie: s.cookie } }))
        .statusCode,
    ).toBe(200);
    const made = await h.t.app.inject({
      method: 'POST',
      url: '/v2/datastores',
      payload: body,
      headers: { cookie: s.cookie, 'x-csrf-token': s.csrf },
    });
    expect(made.statusCode).toBe(200);
    expect(await count()).toBe(1);
    const created = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, operation: 'CREATE', entity_id: made.json().datastore.id })
      .first();
    expect(created).toMatchObject({ source: 'PLATFORM' });
    // Sign-out is a change too.
    expect(
      (await h.t.app.inject({ method: 'DELETE', url: '/console/session', headers: { cookie: s.cookie } }))
        .statusCode,
    ).toBe(403);
  });

  test('another account’s workflow is not found, in the API and on the page', async () => {
    const workflow = await gatedWorkflow(`theirs-${Math.random().toString(36).slice(2, 8)}`);
    const s = await session(other);
    const res = await h.t.app.inject({
      method: 'GET',
      url: `/v2/workflows/${workflow.id}`,
      headers: { cookie: s.cookie },
    });
    expect(res.statusCode).toBe(404);
    const context = await launch();
    const page = await context.newPage();
    await signIn(page, other);
    await expect(page.getByRole('link', { name: workflow.name }).count()).resolves.toBe(0);
    await page.goto(`${origin}/console#/workflows/${workflow.id}`);
    await expect(page.getByRole('alert').textContent()).resolves.toContain('404');
  });

  test('a session ends when idle too long, at its absolute expiry, and when its key is revoked', async () => {
    const ask = (cookie: string) =>
      h.t.app.inject({ method: 'GET', url: '/v2/workflows', headers: { cookie } });
    const idle = await session();
    expect((await ask(idle.cookie)).statusCode).toBe(200);
    await h
      .db('console_sessions')
      .update({ last_seen_at: h.db.raw("now() - interval '31 minutes'") })
      .whereRaw('true');
    expect((await ask(idle.cookie)).statusCode).toBe(401);
    const old = await session();
    await h
      .db('console_sessions')
      .update({ expires_at: h.db.raw("now() - interval '1 second'") })
      .whereRaw('true');
    expect((await ask(old.cookie)).statusCode).toBe(401);
    const revoked = await createTestAccount(h.db);
    const theirs = await session(revoked);
    expect((await ask(theirs.cookie)).statusCode).toBe(200);
    await h.db('api_keys').where({ sid: revoked.key.account_sid }).update({ revoked_at: h.db.fn.now() });
    expect((await ask(theirs.cookie)).statusCode).toBe(401);
    // A cookie with an Authorization header beside it: the header wins (the API's own rule).
    const both = await session();
    const res = await h.t.app.inject({
      method: 'POST',
      url: '/v2/datastores',
      payload: { name: 'by header', data: [] },
      headers: { cookie: both.cookie, authorization: h.account.bearer },
    });
    expect(res.statusCode).toBe(200);
  });

  test('on a 390×844 phone screen the pages fit and work', async () => {
    const context = await launch({ width: 390, height: 844 });
    const page = await context.newPage();
    await signIn(page);
    const overflow = await page.evaluate(() => {
      const view = globalThis as unknown as {
        document: { documentElement: { scrollWidth: number } };
        innerWidth: number;
      };
      return view.document.documentElement.scrollWidth - view.innerWidth;
    });
    expect(overflow).toBeLessThanOrEqual(0);
    await shot(page, '09-phone-workflows');
  });
});
