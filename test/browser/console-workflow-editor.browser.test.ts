/**
 * The console's workflow editor in headless Chromium, on the real app with a real Temporal worker
 * (JavaScript isolates and the bubblewrap Python sandbox): a branching workflow built from nothing
 * on the graph (a condition with both edges, a fan-out joined by a BARRIER, an inline JavaScript
 * and an inline Python step, two paths joining at the ENDER), saved, run both ways with the branch
 * taken read off the run's time line; a step's script edited and tried; the API's messages on the
 * step and edge they name; undo and redo; unsaved changes kept in the tab and asked about before
 * leaving; workflows made through the API opened and saved without a change come back identical;
 * axe at 1280×800 and 390×844. Screenshots to test-artifacts/console/.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { publishBuiltinTemplates } from '../../engine/worker-templates/builtin-templates';
import { testChromium } from '../support/chromium';
import { startHarness, type WorkflowHarness, workerId } from '../workflows/workflow-harness';

const SHOTS = path.resolve(__dirname, '..', '..', 'test-artifacts', 'console');
const HISTORIES = path.resolve(__dirname, '..', 'workflows', 'fixtures', 'histories', 'no-patch-markers');
const WRITABLE = [
  'name',
  'description',
  'tags',
  'trigger_type',
  'trigger_config',
  'trigger_enabled',
  'gui',
  'on_failure',
  'workers',
];

describe('the console’s workflow editor in headless Chromium', () => {
  let h: WorkflowHarness;
  let origin: string;
  let browser: Awaited<ReturnType<typeof testChromium>>;
  const profiles: string[] = [];
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    browser = await testChromium();
    mkdirSync(SHOTS, { recursive: true });
    h = await startHarness({ worker: true, sandboxLimits: { timeoutMs: 30_000 } });
    await publishBuiltinTemplates(h.db);
    origin = await h.t.app.listen({ port: 0, host: '127.0.0.1' });
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    for (const profile of profiles) rmSync(profile, { recursive: true, force: true });
    await h?.close();
  });

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

  function watch(page: Page): string[] {
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    return problems;
  }

  async function signIn(page: Page) {
    await page.goto(`${origin}/console`);
    await page.getByLabel('Account SID').fill(h.account.key.account_sid);
    await page.getByLabel('Auth token').fill(h.account.key.auth_token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Workflows' }).waitFor();
  }

  async function shot(page: Page, name: string) {
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  }

  /** Replaces the chosen step's script in the code editor, as typed. */
  async function writeCode(page: Page, text: string) {
    const code = page.locator('#step-code .cm-content');
    await code.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(text);
  }

  /** Chooses a step on the graph by its name, with a click. */
  async function choose(page: Page, name: string) {
    await page
      .locator('#wf-steps g.node')
      .filter({ has: page.locator('text.node-name').getByText(name, { exact: true }) })
      .click();
    await page.getByRole('heading', { name: `Step: ${name}`, exact: true }).waitFor();
  }

  /** Waits (up to 10 s) until `ready` answers true. */
  async function until(ready: () => Promise<boolean>) {
    const deadline = Date.now() + 10_000;
    while (!(await ready())) {
      if (Date.now() > deadline) throw new Error('timed out waiting');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** The steps a run went through, as its time line names them. */
  async function timeline(page: Page): Promise<string[]> {
    await page.locator('#timeline li').first().waitFor();
    return (await page.locator('#timeline .step .name').allTextContents()).map((t) => t.trim());
  }

  function writable(workflow: Record<string, unknown>) {
    return Object.fromEntries(WRITABLE.filter((key) => key in workflow).map((key) => [key, workflow[key]]));
  }

  test('build a branching workflow on the graph, save it, run it both ways, see the branch taken; edit a step and try it', async () => {
    const context = await launch();
    const page = await context.newPage();
    const problems = watch(page);
    await signIn(page);
    await page.getByRole('link', { name: 'New workflow' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Route symbols');
    await page
      .getByLabel('Description')
      .fill('Measures each symbol in parallel, or says there is nothing to do.');

    // Start → a condition (it takes over the edge to End as its true edge).
    await choose(page, 'Start');
    await page.locator('#add-next-type').selectOption('CONDITIONAL');
    await page.locator('#add-on-next').click();
    // The new step is chosen, its name field focused.
    await expect(
      page.evaluate(
        () =>
          (globalThis as unknown as { document: { activeElement: { id: string } | null } }).document
            .activeElement?.id,
      ),
    ).resolves.toBe('step-name');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('Any symbols?');
    await writeCode(page, 'function main(args) {\n  return (args.inputs.symbols || []).length > 0;\n}\n');

    // True: fan out, one branch per symbol, each measured by a Python step, joined by a BARRIER.
    await page.locator('#add-next_true-type').selectOption('FORKER');
    await page.locator('#add-on-next_true').click();
    await page.getByLabel('Step name').fill('Each symbol');
    await page.getByLabel('Runs').selectOption('script:javascript');
    await writeCode(page, 'function main(args) {\n  return args.inputs.symbols;\n}\n');
    await page.locator('#add-next-type').selectOption('BASIC');
    await page.locator('#add-on-next').click();
    await page.getByLabel('Step name').fill('Measure symbol');
    await page.getByLabel('Runs').selectOption('script:python3.11');
    await page.locator('#python-note').waitFor();
    await writeCode(
      page,
      'def main(args):\n    symbol = args["inputs"]\n    return {"symbol": symbol, "letters": len(symbol)}\n',
    );
    await page.locator('#add-next-type').selectOption('BARRIER');
    await page.locator('#add-on-next').click();
    await page.getByLabel('Step name').fill('Join');

    // False: an inline JavaScript step, joined to the same ENDER.
    await choose(page, 'Any symbols?');
    await page.locator('#add-next_false-type').selectOption('BASIC');
    await page.locator('#add-on-next_false').click();
    await page.getByLabel('Step name').fill('Nothing to do');
    await writeCode(page, 'function main(args) {\n  return { note: "nothing to do", symbols: [] };\n}\n');
    await page.locator('#connect-next').selectOption({ label: 'End (ENDER)' });
    await page.getByRole('button', { name: 'Connect next to the step chosen' }).click();
    await choose(page, 'End');
    await expect(page.locator('#step-panel').textContent()).resolves.toContain('the branches join here');

    // Seven boxes; the condition's two labelled edges; End reached from the join and the false step.
    expect(await page.locator('#wf-steps g.node').count()).toBe(7);
    expect(await page.locator('#wf-steps .edge-label').allTextContents()).toEqual(['true', 'false']);
    const endId = await page.locator('#wf-steps g.node', { hasText: 'End' }).getAttribute('data-worker');
    expect(await page.locator(`#wf-steps path.edge[data-to="${endId}"]`).count()).toBe(2);
    await shot(page, '32-editor-built');

    await page.getByRole('button', { name: 'Create workflow' }).click();
    await page.getByRole('heading', { name: 'Route symbols', exact: true }).waitFor();
    const id = /#\/workflows\/(wrkf_\w+)/.exec(page.url())![1]!;
    const stored = (await h.call('GET', `/v2/workflows/${id}`)).json().workflow;
    expect(stored.workers.map((w: { name: string; type: string }) => `${w.name}:${w.type}`)).toEqual([
      'Start:STARTER',
      'Any symbols?:CONDITIONAL',
      'Nothing to do:BASIC',
      'Each symbol:FORKER',
      'Measure symbol:BASIC',
      'Join:BARRIER',
      'End:ENDER',
    ]);
    expect(stored.workers[4]).toMatchObject({ script_runtime: 'python3.11' });
    expect(stored.workers[2]).not.toHaveProperty('script_runtime');

    // Two symbols: the true branch, fanned out in two, joined.
    await page.getByLabel(/^Input/).fill('{"symbols": ["AAPL", "JPM"]}');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.locator('h1 .badge-succeeded').waitFor({ timeout: 60_000 });
    const taken = await timeline(page);
    expect(taken).toEqual(
      expect.arrayContaining([
        'Start',
        'Any symbols?',
        'Each symbol',
        'Measure symbol [0]',
        'Measure symbol [1]',
        'Join',
        'End',
      ]),
    );
    expect(taken).not.toContain('Nothing to do');
    await page.locator('#timeline button', { hasText: 'End' }).click();
    await expect(page.locator('#step-result').textContent()).resolves.toContain('"letters": 4');
    await shot(page, '33-editor-run-true');

    // No symbols: the false branch.
    await page.getByRole('link', { name: 'Workflow', exact: true }).click();
    await page.getByLabel(/^Input/).fill('{"symbols": []}');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.locator('h1 .badge-succeeded').waitFor({ timeout: 60_000 });
    const other = await timeline(page);
    expect(other).toEqual(['Start', 'Any symbols?', 'Nothing to do', 'End']);
    await shot(page, '34-editor-run-false');

    // The workflow page's graph opens the editor on the step clicked; its script, edited, is tried.
    await page.getByRole('link', { name: 'Workflow', exact: true }).click();
    await page.locator('.graph g.node', { hasText: 'Nothing to do' }).click();
    await page.getByRole('heading', { name: 'Step: Nothing to do' }).waitFor();
    await expect(page.locator('#editor-status').textContent()).resolves.toBe('No unsaved changes.');
    await writeCode(
      page,
      'function main(args) {\n  console.log("tried <b>here</b>");\n  return { tried: args.inputs };\n}\n',
    );
    await page.getByLabel(/^Input \(what/).fill('{"symbols": []}');
    await page.getByRole('button', { name: 'Try it' }).click();
    await page.locator('#step-try-result').waitFor({ timeout: 30_000 });
    await expect(page.locator('#step-try-result').textContent()).resolves.toContain('"tried"');
    await expect(page.locator('#step-try-log').textContent()).resolves.toContain('tried <b>here</b>');
    expect(await page.locator('#step-try-output b').count()).toBe(0);
    await shot(page, '35-editor-try');
    // The Python step is tried by a run, and the page says so.
    await choose(page, 'Measure symbol');
    await page.getByRole('button', { name: 'Try it' }).click();
    await expect(page.locator('#step-try-output').textContent()).resolves.toContain(
      'A Python step is tried by a run',
    );

    // Unsaved: going elsewhere asks; called off, the editor stays.
    await expect(page.locator('#editor-status').textContent()).resolves.toContain('Unsaved changes');
    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.dismiss();
    });
    const editUrl = page.url();
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await until(async () => asked.length === 1);
    expect(asked[0]).toContain('Route symbols has unsaved changes');
    // The address goes back once the question is answered; the editor never left.
    await until(async () => page.url() === editUrl);
    await page.getByRole('heading', { name: 'Step: Measure symbol' }).waitFor();
    await expect(page.locator('#editor-status').textContent()).resolves.toContain('Unsaved changes');
    // A reload (asked about too) brings the draft back from the tab.
    page.on('dialog', (dialog) => void dialog.accept());
    await page.reload();
    await page
      .locator('#draft-note', { hasText: 'Your unsaved changes from earlier in this tab are back.' })
      .waitFor();
    await choose(page, 'Nothing to do');
    await expect(page.locator('#step-code .cm-content').textContent()).resolves.toContain(
      'tried <b>here</b>',
    );

    // The API's message on the step and edge it names: a condition without its false edge.
    await choose(page, 'Any symbols?');
    await page.getByRole('button', { name: 'Remove edge (when false) to Nothing to do' }).click();
    await page.getByRole('button', { name: 'Save' }).click();
    const alert = page.locator('fieldset[data-edge="next_false"] [role=alert]');
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toMatch(
      /^Worker wrkr_\w+ \(CONDITIONAL\) needs exactly one next_true and one next_false worker\.$/,
    );
    expect(await page.locator('#wf-steps g.node.node-error', { hasText: 'Any symbols?' }).count()).toBe(1);
    await shot(page, '36-editor-errors');
    // Undo (Ctrl+Z, outside any text field) brings the edge back; Redo takes it away again; Undo.
    await page.locator('#undo').focus();
    await page.keyboard.press('Control+z');
    await page.locator('fieldset[data-edge="next_false"] li', { hasText: 'Nothing to do' }).waitFor();
    await page.keyboard.press('Control+Shift+z');
    await expect(page.locator('fieldset[data-edge="next_false"] li').count()).resolves.toBe(0);
    await page.getByRole('button', { name: 'Undo' }).click();
    await page.locator('fieldset[data-edge="next_false"] li', { hasText: 'Nothing to do' }).waitFor();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'Route symbols', exact: true }).waitFor();
    const saved = (await h.call('GET', `/v2/workflows/${id}`)).json().workflow;
    expect(saved.workers.find((w: { name: string }) => w.name === 'Nothing to do').script).toContain(
      'tried <b>here</b>',
    );
    // Saved: nothing kept in the tab any more.
    expect(
      await page.evaluate(() =>
        Object.keys((globalThis as unknown as { sessionStorage: object }).sessionStorage).filter((k) =>
          k.includes('workflow-draft'),
        ),
      ),
    ).toEqual([]);
    // The browser reports the refused save as a failed load; nothing else may complain.
    expect(problems).toEqual([expect.stringContaining('400 (Bad Request)')]);
  }, 240_000);

  test('workflows made through the API, opened in the editor and saved without a change, are identical', async () => {
    const [s, c, t, f, e] = [workerId(), workerId(), workerId(), workerId(), workerId()];
    const bodies: Array<Record<string, unknown>> = [
      {
        name: 'Branches and a join',
        description: 'A condition whose paths meet again',
        trigger_type: 'TIME_BASED',
        trigger_config: { cron: '0 7 * * 1-5', timezone: 'Europe/Paris' },
        workers: [
          { id: s, name: 'Start', type: 'STARTER', next: c, script_inputs: { limit: 3 } },
          {
            id: c,
            name: 'Enough?',
            type: 'CONDITIONAL',
            script: 'function main(a) { return true; }',
            next_true: [t],
            next_false: [f],
          },
          {
            id: t,
            name: 'Yes',
            type: 'BASIC',
            script: 'def main(args):\n    return 1\n',
            script_runtime: 'python3.11',
            next: [e],
          },
          { id: f, name: 'No', type: 'BASIC', script: 'function main() { return 0; }', next: [e] },
          { id: e, name: 'End', type: 'ENDER' },
        ],
      },
    ];
    // The workflows the recorded run histories ran (a fork and its join among them).
    for (const file of readdirSync(HISTORIES).filter((name) => name.endsWith('.json'))) {
      const history = JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8'));
      const input = JSON.parse(
        Buffer.from(
          history.events[0].workflowExecutionStartedEventAttributes.input.payloads[0].data,
          'base64',
        ).toString(),
      );
      // Templates of the account that recorded them are not this account's.
      if (input.workers.some((w: { template_id: string | null }) => w.template_id)) continue;
      bodies.push({ name: input.workflowName, workers: input.workers });
    }
    expect(bodies.length).toBeGreaterThanOrEqual(3);
    expect(bodies.some((b) => (b.workers as Array<{ type: string }>).some((w) => w.type === 'FORKER'))).toBe(
      true,
    );
    const context = await launch();
    const page = await context.newPage();
    const problems = watch(page);
    const sent: unknown[] = [];
    page.on('request', (request) => {
      if (request.method() === 'PUT' && /\/v2\/workflows\/wrkf_\w+$/.test(new URL(request.url()).pathname)) {
        sent.push(request.postDataJSON());
      }
    });
    await signIn(page);
    for (const body of bodies) {
      const made = await h.store(body);
      const before = (await h.call('GET', `/v2/workflows/${made.id}`)).json().workflow;
      await page.goto(`${origin}/console#/workflows/${made.id}/edit`);
      await page.locator('#wf-steps g.node').first().waitFor();
      await expect(page.locator('#editor-status').textContent()).resolves.toBe('No unsaved changes.');
      // With the keyboard: a box of the graph is a button (Tab to it, Enter).
      await page.locator('#wf-steps g.node').nth(1).focus();
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: `Step: ${before.workers[1].name}`, exact: true }).waitFor();
      // Every step opened once: drawing its panel changes nothing.
      for (const worker of before.workers as Array<{ name: string }>) await choose(page, worker.name);
      if (body === bodies[0]) await shot(page, '37-editor-branching-fixture');
      // Nothing to undo or redo: opening and reading made no change.
      await expect(page.locator('#undo').isDisabled()).resolves.toBe(true);
      await expect(page.locator('#redo').isDisabled()).resolves.toBe(true);
      await expect(page.locator('#editor-status').textContent()).resolves.toBe('No unsaved changes.');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('heading', { name: String(body.name), exact: true }).waitFor();
      const after = (await h.call('GET', `/v2/workflows/${made.id}`)).json().workflow;
      expect(after.workers).toEqual(before.workers);
      expect(JSON.stringify(after.workers)).toBe(JSON.stringify(before.workers));
      expect(writable(after)).toEqual(writable(before));
      const put = sent.pop() as Record<string, unknown>;
      expect({ ...put, workspace: undefined }).toEqual({ ...writable(before), workspace: undefined });
    }
    expect(problems).toEqual([]);
  }, 240_000);

  test('the editor passes axe-core’s checks at 1280×800 and on a phone, where it says how to edit', async () => {
    const axe = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
    const [s, c, t, e] = [workerId(), workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Axe branching',
      trigger_type: 'TIME_BASED',
      trigger_config: { cron: '30 6 * * *', timezone: 'UTC' },
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [c] },
        {
          id: c,
          name: 'Check',
          type: 'CONDITIONAL',
          script: 'function main() { return true; }',
          next_true: [t],
          next_false: [e],
        },
        {
          id: t,
          name: 'Python step',
          type: 'BASIC',
          script: 'def main(args):\n    return 1\n',
          script_runtime: 'python3.11',
          next: [e],
        },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    });
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      const phone = viewport.width < 700;
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
        expect([name, viewport.width, violations]).toEqual([name, viewport.width, []]);
      };
      await signIn(page);
      await page.goto(`${origin}/console#/workflows/new`);
      await page.locator('#wf-steps g.node').first().waitFor();
      await check('new workflow');
      await page.goto(`${origin}/console#/workflows/${workflow.id}/edit?step=${t}`);
      await page.locator('#step-code .cm-content').waitFor();
      await page.locator('#next-firings li').first().waitFor();
      await check('a Python step chosen');
      // A schedule changed and not saved yet: a preview of its next firings, computed in the page.
      await page.getByLabel(/^Schedule/).fill('0 9 * * MON');
      await expect(page.locator('#next-firings-preview li').count()).resolves.toBe(5);
      for (const text of await page.locator('#next-firings-preview li').allTextContents()) {
        expect(new Date(text.replace(' UTC', 'Z').replace(' ', 'T')).getUTCDay()).toBe(1);
      }
      await page.getByLabel('Edit step').selectOption({ label: 'Check (CONDITIONAL)' });
      await page.locator('#step-code .cm-content').waitFor();
      await page.getByLabel('Step name').fill('');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.locator('#step-panel [role=alert]').waitFor();
      await check('a condition chosen, with an error');
      if (phone) {
        // The graph scrolls sideways inside the page; the page itself does not.
        const overflow = await page.evaluate(() => {
          const view = globalThis as unknown as {
            document: { documentElement: { scrollWidth: number } };
            innerWidth: number;
          };
          return view.document.documentElement.scrollWidth - view.innerWidth;
        });
        if (overflow > 0) {
          console.log(
            await page.evaluate(() => {
              const view = globalThis as unknown as {
                document: {
                  querySelectorAll(s: string): ArrayLike<{
                    getBoundingClientRect(): { right: number };
                    tagName: string;
                    id: string;
                    className: string;
                  }>;
                };
                innerWidth: number;
              };
              return Array.from(view.document.querySelectorAll('*'))
                .filter((e) => e.getBoundingClientRect().right > view.innerWidth)
                .map((e) => `${e.tagName}#${e.id}.${String(e.className)} ${e.getBoundingClientRect().right}`)
                .slice(0, 30)
                .join('\n');
            }),
          );
        }
        expect(overflow).toBeLessThanOrEqual(0);
        await expect(page.locator('#phone-note').isVisible()).resolves.toBe(true);
        await shot(page, '38-editor-phone');
      } else {
        await expect(page.locator('#phone-note').isVisible()).resolves.toBe(false);
      }
    }
  }, 240_000);
});
