/**
 * The console's Secrets and Integrations pages, its workflow form's "On failure" field and a step's
 * "Outbound calls", in headless Chromium on the real app with a real Temporal worker: store a secret
 * (its value nowhere the page can reach afterwards: its HTML, its fields, the answers it received,
 * its storage), give it a new value, build HTTP and SMTP integrations that name secrets, read the
 * API's messages beside the fields, edit one, delete the secret; a run whose step calls an HTTP
 * server and an SMTP server of the test's own, and is refused a private address. axe-core on each
 * page at both sizes; screenshots to test-artifacts/console/.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page, type Response } from 'playwright-core';
import { SMTPServer } from 'smtp-server';
import { outboundCalls, parseOutboundCall } from '../../api/console/ui/outbound-log';
import { testChromium } from '../support/chromium';
import { startHarness, type WorkflowHarness, workerId } from '../workflows/workflow-harness';

const SHOTS = path.resolve(__dirname, '..', '..', 'test-artifacts', 'console');
/** Values no other text of the suite holds: finding one anywhere the page reaches is a leak. */
const VALUE = 'tok_Qm7v-' + 'x9Lp'.repeat(4) + '-first';
const ROTATED = 'tok_Wz3k-' + 'r5Tn'.repeat(4) + '-second';
const SMTP_PASSWORD = 'pw_Hq2j-' + 'm8Vd'.repeat(4);

describe('the console: secrets, integrations, on-failure, outbound calls', () => {
  let h: WorkflowHarness;
  let origin: string;
  let browser: Awaited<ReturnType<typeof testChromium>>;
  const profiles: string[] = [];
  const contexts: BrowserContext[] = [];
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    browser = await testChromium();
    mkdirSync(SHOTS, { recursive: true });
    h = await startHarness({ worker: true });
    origin = await h.t.app.listen({ port: 0, host: '127.0.0.1' });
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    for (const profile of profiles) rmSync(profile, { recursive: true, force: true });
    for (const close of closers) await close();
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

  /** Console complaints; a refused request (the API's 4xx) is reported by the browser as a failed load. */
  function watch(page: Page): string[] {
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    return problems;
  }
  const unexpected = (problems: string[]) =>
    problems.filter(
      (p) => !/^Failed to load resource: the server responded with a status of 4(00|09)/.test(p),
    );

  /** The bodies of every answer the page received (the event stream, which never ends, aside). */
  function recordAnswers(page: Page): () => Promise<string> {
    const bodies: Array<Promise<string>> = [];
    page.on('response', (response: Response) => {
      if (response.url().endsWith('/console/events')) return;
      bodies.push(response.text().catch(() => ''));
    });
    return async () => (await Promise.all(bodies)).join('\n');
  }

  /** Everything of the page a value could hide in: its HTML, its fields' values, its storage. */
  async function pageText(page: Page): Promise<string> {
    const html = await page.content();
    const rest = await page.evaluate(() => {
      const doc = globalThis as unknown as {
        document: { querySelectorAll(s: string): Iterable<{ value: string }> };
        localStorage: Record<string, string>;
        sessionStorage: Record<string, string>;
      };
      return [
        ...[...doc.document.querySelectorAll('input, textarea, select')].map((e) => e.value),
        JSON.stringify({ ...doc.localStorage }),
        JSON.stringify({ ...doc.sessionStorage }),
      ].join('\n');
    });
    return `${html}\n${rest}`;
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

  const alertIn = (page: Page, selector: string) => page.locator(`${selector} [role=alert]`);

  test('a secret is stored, given a new value and deleted, its value nowhere the page reaches; HTTP and SMTP integrations name secrets, errors beside their fields', async () => {
    const context = await launch();
    const page = await context.newPage();
    const problems = watch(page);
    const answers = recordAnswers(page);
    await signIn(page);

    // ---- Secrets: a name the API refuses, then a good one; the value is gone once stored.
    await page.getByRole('link', { name: 'Secrets' }).click();
    await page.getByRole('heading', { name: 'Secrets', exact: true }).waitFor();
    await page.getByText('No secrets in workspace main yet.').waitFor();
    await page.getByRole('button', { name: 'New secret' }).click();
    await page.getByLabel('Name').fill('1VENDOR');
    await page.getByLabel('Value', { exact: true }).fill(VALUE);
    await page.getByLabel('Description (optional)').fill('Prices vendor API token');
    await page.getByRole('button', { name: 'Store secret' }).click();
    const nameError = page.locator('#secret-form .field', { has: page.locator('#secret-name') });
    await alertIn(page, '#secret-form .field:has(#secret-name)').waitFor();
    await expect(nameError.getByRole('alert').textContent()).resolves.toMatch(/^name must be /);
    expect(await page.locator('#secret-name').getAttribute('aria-invalid')).toBe('true');
    // The value is kept while the form is corrected.
    await expect(page.locator('#secret-value').inputValue()).resolves.toBe(VALUE);
    await page.getByLabel('Name').fill('VENDOR_TOKEN');
    await shot(page, '20-secret-new');
    await page.getByRole('button', { name: 'Store secret' }).click();
    await page.locator('#secrets-status', { hasText: 'Stored VENDOR_TOKEN (version 1).' }).waitFor();
    await expect(page.locator('#secrets tbody tr').first().locator('td').allTextContents()).resolves.toEqual([
      'VENDOR_TOKEN',
      '1',
      'Prices vendor API token',
      expect.stringMatching(/ UTC$/),
      expect.stringMatching(/ UTC$/),
      'Set new valueDelete',
    ]);
    expect(await page.locator('#secret-value').count()).toBe(0);
    expect(await pageText(page)).not.toContain(VALUE);

    // The same name again: 409, said beside the name.
    await page.getByRole('button', { name: 'New secret' }).click();
    await page.getByLabel('Name').fill('VENDOR_TOKEN');
    await page.getByLabel('Value', { exact: true }).fill('another value');
    await page.getByRole('button', { name: 'Store secret' }).click();
    await expect(alertIn(page, '#secret-form .field:has(#secret-name)').textContent()).resolves.toBe(
      'A secret named VENDOR_TOKEN already exists in workspace main.',
    );
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.locator('#secret-form').count()).toBe(0);

    // A new value: version 2.
    await page.getByRole('button', { name: 'Set new value for VENDOR_TOKEN' }).click();
    await page.getByLabel('New value for VENDOR_TOKEN', { exact: true }).fill(ROTATED);
    await shot(page, '21-secret-rotate');
    await page.getByRole('button', { name: 'Save new value' }).click();
    await page.locator('#secrets-status', { hasText: 'VENDOR_TOKEN has a new value (version 2).' }).waitFor();
    await expect(page.locator('#secrets tbody tr').first().locator('td').nth(1).textContent()).resolves.toBe(
      '2',
    );
    expect(await page.locator('#secret-new-value').count()).toBe(0);
    const listed = (await h.call('GET', '/v2/secrets')).json().secrets;
    expect(listed).toEqual([expect.objectContaining({ name: 'VENDOR_TOKEN', version: '2' })]);

    // The SMTP password, stored through the API: the page lists it like any other.
    expect(
      (await h.call('POST', '/v2/secrets', { name: 'SMTP_PASSWORD', value: SMTP_PASSWORD })).statusCode,
    ).toBe(200);
    await page.reload();
    await page.locator('#secrets tbody tr').nth(1).waitFor();
    await shot(page, '22-secrets');

    // ---- An HTTP integration: http refused beside the base URL, a credential in clear beside its header.
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('heading', { name: 'Integrations' }).waitFor();
    await page.getByRole('link', { name: 'New integration' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Prices vendor');
    await expect(page.getByLabel('Type').inputValue()).resolves.toBe('HTTP');
    await page.getByLabel('Base URL').fill('http://api.vendor.test/v1');
    await page.getByRole('button', { name: 'Add a header' }).click();
    await page.getByLabel('Header 1 name').fill('Authorization');
    await page.getByLabel('Header 1 value').fill('Bearer abc123');
    await page.getByRole('button', { name: 'Create integration' }).click();
    await expect(alertIn(page, '.field:has(#intg-base-url)').textContent()).resolves.toBe(
      'base_url uses http: set allow_http to true to send in the clear, or use https.',
    );
    await page.getByLabel('Base URL').fill('https://api.vendor.test/v1');
    await page.getByRole('button', { name: 'Create integration' }).click();
    await expect(alertIn(page, '[data-header="0"]').textContent()).resolves.toBe(
      'headers.Authorization holds a credential: store it as a secret and write {{secret:NAME}} (e.g. "Bearer {{secret:VENDOR_TOKEN}}").',
    );
    expect(await page.getByLabel('Header 1 value').getAttribute('aria-invalid')).toBe('true');
    expect(await alertIn(page, '.field:has(#intg-base-url)').count()).toBe(0);
    await shot(page, '23-integration-errors');

    // The secret from the picker, at the cursor.
    await page.getByLabel('Header 1 value').fill('Bearer ');
    // Changed, the field's message goes.
    expect(await alertIn(page, '[data-header="0"]').count()).toBe(0);
    expect(await page.getByLabel('Header 1 value').getAttribute('aria-invalid')).toBeNull();
    await page.getByLabel('Secret to insert').selectOption('VENDOR_TOKEN');
    await page.getByRole('button', { name: 'Insert into the header value' }).click();
    await expect(page.getByLabel('Header 1 value').inputValue()).resolves.toBe(
      'Bearer {{secret:VENDOR_TOKEN}}',
    );
    await page.getByRole('button', { name: 'Add a header' }).click();
    await page.getByLabel('Header 2 name').fill('Accept');
    await page.getByLabel('Header 2 value').fill('application/json');
    await page.getByLabel('Timeout (ms').fill('5000');
    await page.getByLabel('PUT', { exact: true }).check();
    await shot(page, '24-integration-http');
    await page.getByRole('button', { name: 'Create integration' }).click();
    const httpRow = page.locator('#integrations tbody tr', { hasText: 'Prices vendor' });
    await httpRow.waitFor();
    await expect(httpRow.locator('td').allTextContents()).resolves.toEqual([
      'Prices vendor',
      'HTTP',
      'https://api.vendor.test/v1',
      'VENDOR_TOKEN',
      expect.stringMatching(/ UTC$/),
    ]);
    const httpId = (await httpRow.getAttribute('data-integration'))!;
    expect((await h.call('GET', `/v2/integrations/${httpId}`)).json().integration).toMatchObject({
      type: 'HTTP',
      base_url: 'https://api.vendor.test/v1',
      allow_http: false,
      headers: { Authorization: 'Bearer {{secret:VENDOR_TOKEN}}', Accept: 'application/json' },
      timeout_ms: 5000,
      allowed_methods: ['GET', 'POST', 'PUT'],
      secrets_used: ['VENDOR_TOKEN'],
      version: '1',
    });

    // ---- An SMTP integration, its password from the secrets list.
    await page.getByRole('link', { name: 'New integration' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Mail relay');
    await page.getByLabel('Type').selectOption('SMTP');
    await page.getByLabel('Host').fill('smtp.example.com');
    await page.getByLabel('Port').fill('2525');
    await page.getByLabel('Username (optional)').fill('risk@example.com');
    await expect(page.locator('#intg-password-secret option').allTextContents()).resolves.toEqual([
      '(none: no login)',
      'SMTP_PASSWORD',
      'VENDOR_TOKEN',
    ]);
    await page.getByLabel('Password secret').selectOption('SMTP_PASSWORD');
    await page.getByLabel('From').fill('Risk desk <risk@example.com>');
    await shot(page, '25-integration-smtp');
    await page.getByRole('button', { name: 'Create integration' }).click();
    const smtpRow = page.locator('#integrations tbody tr', { hasText: 'Mail relay' });
    await smtpRow.waitFor();
    await expect(smtpRow.locator('td').allTextContents()).resolves.toEqual([
      'Mail relay',
      'SMTP',
      'smtp.example.com:2525 (starttls)',
      'SMTP_PASSWORD',
      expect.stringMatching(/ UTC$/),
    ]);
    const smtpId = (await smtpRow.getAttribute('data-integration'))!;
    expect((await h.call('GET', `/v2/integrations/${smtpId}`)).json().integration).toMatchObject({
      type: 'SMTP',
      host: 'smtp.example.com',
      port: 2525,
      security: 'starttls',
      username: 'risk@example.com',
      password_secret: 'SMTP_PASSWORD',
      from: 'Risk desk <risk@example.com>',
      timeout_ms: 10000,
    });
    // A webhook still shows its path.
    const hook = await h.call('POST', '/v2/integrations', { name: 'Prices feed', type: 'WEBHOOK' });
    const hookId = hook.json().integration.id as string;
    await page.reload();
    await page.locator('#integrations tbody tr', { hasText: 'Prices feed' }).waitFor();
    await shot(page, '26-integrations');

    // ---- Edit the HTTP one: filled in as stored; a new base URL, the timeout back to its default.
    await page.getByRole('link', { name: 'Prices vendor' }).click();
    await page.getByRole('heading', { name: 'Edit Prices vendor' }).waitFor();
    // (Stored as JSON, the headers come back in the database's key order.)
    const headerRows = await page
      .locator('#intg-headers .header-row')
      .evaluateAll((rows) =>
        rows.map((row) =>
          Array.from(
            (
              row as unknown as { querySelectorAll(s: string): ArrayLike<{ value: string }> }
            ).querySelectorAll('input'),
            (input) => input.value,
          ),
        ),
      );
    expect(headerRows).toEqual([
      ['Accept', 'application/json'],
      ['Authorization', 'Bearer {{secret:VENDOR_TOKEN}}'],
    ]);
    await expect(page.getByLabel('Timeout (ms').inputValue()).resolves.toBe('5000');
    expect(await page.getByLabel('Type').count()).toBe(0);
    await page.getByLabel('Base URL').fill('https://api.vendor.test/v2');
    await page.getByLabel('Timeout (ms').fill('');
    await page.getByRole('button', { name: 'Save' }).click();
    await httpRow.locator('td', { hasText: 'https://api.vendor.test/v2' }).waitFor();
    expect((await h.call('GET', `/v2/integrations/${httpId}`)).json().integration).toMatchObject({
      base_url: 'https://api.vendor.test/v2',
      timeout_ms: 10000,
      allowed_methods: ['GET', 'POST', 'PUT'],
      version: '2',
    });
    await page.getByRole('link', { name: 'Prices feed' }).click();
    await expect(page.locator('#intg-webhook-path').textContent()).resolves.toBe(
      `${origin}/v2/integrations/${hookId}/webhook`,
    );

    // ---- Delete the secret: a confirm step that names who uses it, then gone.
    await page.getByRole('link', { name: 'Secrets' }).click();
    await page.getByRole('button', { name: 'Delete VENDOR_TOKEN' }).click();
    await page.locator('#delete-confirm', { hasText: 'Named by Prices vendor (HTTP)' }).waitFor();
    await shot(page, '27-secret-delete');
    // Cancel keeps it; the confirm deletes it.
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.locator('#delete-confirm').count()).toBe(0);
    await page.getByRole('button', { name: 'Delete VENDOR_TOKEN' }).click();
    await page.getByRole('button', { name: 'Yes, delete VENDOR_TOKEN' }).click();
    await page.locator('#secrets-status', { hasText: 'Deleted VENDOR_TOKEN.' }).waitFor();
    await expect(page.locator('#secrets tbody tr').allTextContents()).resolves.toEqual([
      expect.stringContaining('SMTP_PASSWORD'),
    ]);
    expect((await h.call('GET', '/v2/secrets')).json().secrets).toHaveLength(1);

    // No value anywhere the page reached: its HTML and fields, its storage, any answer it got.
    const seen = (await pageText(page)) + (await answers());
    for (const value of [VALUE, ROTATED, SMTP_PASSWORD]) expect(seen).not.toContain(value);
    expect(unexpected(problems)).toEqual([]);
  }, 120_000);

  test('a step’s outbound calls: a request through an HTTP integration, one refused, an e-mail, as a table', async () => {
    // The vendor: a server of the test's own on loopback (the suite's egress policy allows loopback).
    const seenAuth: string[] = [];
    const vendor = http.createServer((req, res) => {
      seenAuth.push(String(req.headers.authorization));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ prices: [1, 2, 3] }));
    });
    await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => vendor.close(() => resolve())));
    const mail: string[] = [];
    const smtp = new SMTPServer({
      logger: false,
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      disableReverseLookup: true,
      onRcptTo(address, _session, callback) {
        mail.push(address.address);
        callback();
      },
      onData(stream, _session, callback) {
        stream.resume();
        stream.on('end', () => callback());
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => smtp.close(() => resolve())));
    const vendorPort = (vendor.address() as AddressInfo).port;
    const smtpPort = (smtp.server.address() as AddressInfo).port;

    const token = 'tok_' + 'Pq9s'.repeat(5);
    expect((await h.call('POST', '/v2/secrets', { name: 'FEED_TOKEN', value: token })).statusCode).toBe(200);
    const make = async (body: object) => {
      const res = await h.call('POST', '/v2/integrations', body);
      expect([res.statusCode, res.body]).toEqual([200, expect.any(String)]);
      return res.json().integration.id as string;
    };
    const feed = await make({
      name: 'Loopback prices',
      type: 'HTTP',
      base_url: `http://127.0.0.1:${vendorPort}/v1`,
      allow_http: true,
      headers: { Authorization: 'Bearer {{secret:FEED_TOKEN}}' },
    });
    // Loopback outside the worker's allow list (127.0.0.1/32): refused by the policy, and even a
    // regression would send nothing off this machine.
    const internal = await make({ name: 'Internal', type: 'HTTP', base_url: 'https://127.0.0.2/api' });
    const relay = await make({
      name: 'Loopback mail',
      type: 'SMTP',
      host: '127.0.0.1',
      port: smtpPort,
      security: 'none',
      from: 'desk@pas.test',
    });
    const [s, call, e] = [workerId(), workerId(), workerId()];
    const workflow = await h.store({
      name: 'Call out',
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [call] },
        {
          id: call,
          name: 'Fetch and tell',
          type: 'BASIC',
          script: `async function main() {
            const answer = await sdk.request(${JSON.stringify(feed)}, { path: 'prices' });
            let refused = null;
            try { await sdk.request(${JSON.stringify(internal)}, { method: 'POST', path: 'x', body: {} }); }
            catch (error) { refused = String(error.message); }
            await sdk.sendEmail(${JSON.stringify(relay)}, { to: ['a@pas.test', 'b@pas.test'], subject: 'Prices', text: 'In.' });
            console.log('done');
            return { count: answer.body.prices.length, refused };
          }`,
          next: [e],
        },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    });
    const run = await h.run(workflow.id);
    expect(await h.pollUntilEnded(workflow.id, run.id)).toMatchObject({ run_status: 'SUCCEEDED' });
    expect(seenAuth).toEqual([`Bearer ${token}`]);
    expect(mail).toEqual(['a@pas.test', 'b@pas.test']);

    const context = await launch();
    const page = await context.newPage();
    const problems = watch(page);
    await signIn(page);
    await page.goto(`${origin}/console#/runs/${workflow.id}/${run.id}`);
    await page.locator('#timeline button', { hasText: 'Fetch and tell' }).click();
    await page.locator('#step-calls tbody tr').nth(2).waitFor();
    const rows = await page
      .locator('#step-calls tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) =>
          Array.from(
            (tr as unknown as { cells: ArrayLike<{ textContent: string }> }).cells,
            (c) => c.textContent,
          ),
        ),
      );
    expect(rows).toEqual([
      [
        'GET',
        `http://127.0.0.1:${vendorPort}/v1/prices`,
        '200',
        expect.stringMatching(/^\d+$/),
        expect.stringMatching(/^\d+ ms$/),
        'Loopback prices',
      ],
      [
        'POST',
        'https://127.0.0.2/api/x',
        expect.stringMatching(/^refused .*127\.0\.0\.2 is a loopback address/),
        '—',
        '—',
        '—',
      ],
      [
        'SMTP',
        `127.0.0.1:${smtpPort} · 2 recipient(s)`,
        'accepted 2, refused 0',
        '—',
        expect.stringMatching(/^\d+ ms$/),
        'Loopback mail',
      ],
    ]);
    // The step's log still has every line; the secret is in neither.
    await expect(page.locator('#step-log').textContent()).resolves.toContain('done');
    expect(await pageText(page)).not.toContain(token);
    await shot(page, '28-step-outbound-calls');
    // A step that called nothing has no such section.
    await page.locator('#timeline button', { hasText: 'End' }).click();
    await page.locator('#step-detail h3', { hasText: 'End' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Outbound calls' }).count()).toBe(0);
    expect(problems).toEqual([]);
  }, 120_000);

  test('every new page passes axe-core (WCAG 2 A and AA) at 1280×800 and on a 390×844 phone, without overflowing it', async () => {
    const axe = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
    const smtp = await h.call('POST', '/v2/integrations', {
      name: 'Axe mail',
      type: 'SMTP',
      host: 'smtp.example.com',
      username: 'axe@example.com',
      password_secret: 'AXE_PASSWORD',
      from: 'axe@example.com',
    });
    const smtpId = smtp.json().integration.id as string;
    await h.call('POST', '/v2/secrets', { name: 'AXE_PASSWORD', value: 'axe-value', description: 'For axe' });
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      const phone = viewport.width < 500;
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
        const overflow = await page.evaluate(() => {
          const view = globalThis as unknown as {
            document: { documentElement: { scrollWidth: number } };
            innerWidth: number;
          };
          return view.document.documentElement.scrollWidth - view.innerWidth;
        });
        expect([name, overflow]).toEqual([name, expect.any(Number)]);
        expect([name, overflow <= 0]).toEqual([name, true]);
      };
      await signIn(page);
      await page.goto(`${origin}/console#/secrets`);
      await page.locator('#secrets').waitFor();
      await check('secrets');
      // The forms open, and an error shown, as a person would see them.
      await page.getByRole('button', { name: 'New secret' }).click();
      await page.getByRole('button', { name: 'Store secret' }).click();
      await alertIn(page, '#secret-form').first().waitFor();
      await page.getByRole('button', { name: 'Set new value for AXE_PASSWORD' }).click();
      await check('secrets with forms open');
      if (phone) await shot(page, '30-phone-secrets');
      await page.goto(`${origin}/console#/integrations`);
      await page.locator('#integrations').waitFor();
      await check('integrations');
      await page.goto(`${origin}/console#/integrations/new`);
      await page.getByRole('button', { name: 'Add a header' }).click();
      await page.getByLabel('Name', { exact: true }).fill('Axe');
      await page.getByRole('button', { name: 'Create integration' }).click();
      await alertIn(page, '#integration-form').first().waitFor();
      await check('new HTTP integration, with an error');
      if (phone) await shot(page, '31-phone-integration-http');
      await page.goto(`${origin}/console#/integrations/${smtpId}`);
      await page.locator('#intg-host').waitFor();
      await check('SMTP integration');
      await page.goto(`${origin}/console#/workflows/new`);
      await page.locator('#on-failure').waitFor();
      await page.getByLabel('Alert through an integration').check();
      await check('workflow form, on failure');
    }
  }, 120_000);

  test('the log-line parser reads each line the worker writes, and nothing else', () => {
    const http200 = parseOutboundCall(
      '[http] GET https://api.vendor.test/v1/prices → 200, 1234 bytes, 56 ms (integration Prices vendor)',
    );
    expect(http200).toEqual({
      kind: 'http',
      method: 'GET',
      target: 'https://api.vendor.test/v1/prices',
      outcome: '200',
      ok: true,
      reason: null,
      recipients: null,
      bytes: 1234,
      ms: 56,
      integration: 'Prices vendor',
    });
    expect(
      parseOutboundCall('[http] PUT https://api.vendor.test/v1/x → 503, 0 bytes, 9 ms (integration A (b))'),
    ).toMatchObject({ outcome: '503', ok: false, integration: 'A (b)' });
    expect(
      parseOutboundCall(
        '[http] POST https://10.0.0.5/api refused: 10.0.0.5 is a private address (EGRESS_PRIVATE_ALLOW)',
      ),
    ).toMatchObject({
      method: 'POST',
      target: 'https://10.0.0.5/api',
      outcome: 'refused',
      ok: false,
      reason: '10.0.0.5 is a private address (EGRESS_PRIVATE_ALLOW)',
      integration: null,
    });
    // Refused before there was a URL: the line names the integration instead.
    expect(
      parseOutboundCall('[http] GET integration Prices vendor failed: Secret X not found in workspace main.'),
    ).toMatchObject({
      target: '',
      outcome: 'failed',
      integration: 'Prices vendor',
      reason: 'Secret X not found in workspace main.',
    });
    expect(
      parseOutboundCall(
        '[smtp] message to 2 recipient(s) through smtp.test:2525: accepted 2, refused 0, 40 ms (integration Mail)',
      ),
    ).toEqual({
      kind: 'smtp',
      method: 'SMTP',
      target: 'smtp.test:2525',
      outcome: 'accepted 2, refused 0',
      ok: true,
      reason: null,
      recipients: 2,
      bytes: null,
      ms: 40,
      integration: 'Mail',
    });
    expect(
      parseOutboundCall(
        '[smtp] message to 3 recipient(s) through m:25: accepted 2, refused 1, 4 ms (integration M)',
      ),
    ).toMatchObject({ ok: false });
    expect(
      parseOutboundCall(
        '[smtp] message through smtp.test:465 failed: the server’s certificate is not trusted',
      ),
    ).toMatchObject({
      target: 'smtp.test:465',
      outcome: 'failed',
      reason: 'the server’s certificate is not trusted',
    });
    for (const other of [
      'done',
      '[http] hello',
      'GET https://x → 200, 1 bytes, 1 ms (integration A)',
      '[smtp] message to two recipient(s)',
      '',
      42,
      null,
    ]) {
      expect([other, parseOutboundCall(other)]).toEqual([other, null]);
    }
    expect(
      outboundCalls([
        { message: 'starting' },
        { message: '[smtp] message through h:25 refused: 10.1.1.1 is a private address', source: 'egress' },
        // A script printing a look-alike line is not a call: only the worker's own lines count.
        { message: '[http] GET https://fake.test/ → 200, 1 bytes, 1 ms (integration A)' },
        {},
      ]).map((c) => c.outcome),
    ).toEqual(['refused']);
  });

  test('the workflow form’s "On failure" sends on_failure; the workflow page shows it', async () => {
    const mailId = (
      await h.call('POST', '/v2/integrations', {
        name: 'Failure mail',
        type: 'SMTP',
        host: 'smtp.example.com',
        from: 'alerts@example.com',
      })
    ).json().integration.id as string;
    const [s, e] = [workerId(), workerId()];
    const handler = await h.store({
      name: 'Clean up after a failure',
      workers: [
        { id: s, name: 'Start', type: 'STARTER', next: [e] },
        { id: e, name: 'End', type: 'ENDER' },
      ],
    });
    const context = await launch();
    const page = await context.newPage();
    const problems = watch(page);
    const sent: unknown[] = [];
    page.on('request', (request) => {
      if (
        /\/v2\/workflows(\/wrkf_\w+)?$/.test(new URL(request.url()).pathname) &&
        request.method() !== 'GET'
      ) {
        sent.push((request.postDataJSON() as { on_failure?: unknown }).on_failure);
      }
    });
    await signIn(page);
    await page.getByRole('link', { name: 'New workflow' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Nightly with an alert');
    await page.getByLabel('Alert through an integration').check();
    await page.getByLabel('Integration', { exact: true }).selectOption({ label: 'Failure mail (SMTP)' });
    // An SMTP alert needs addresses: the API says so beside the field.
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await expect(alertIn(page, '#on-failure').textContent()).resolves.toBe(
      'on_failure.to is required for an SMTP integration: the addresses to alert.',
    );
    await page.getByLabel(/^To \(/).fill('desk@example.com, ops@example.com');
    expect(await alertIn(page, '#on-failure').count()).toBe(0);
    await shot(page, '29-workflow-on-failure');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await page.getByRole('heading', { name: 'Nightly with an alert' }).waitFor();
    expect(sent).toEqual([
      { integration: mailId },
      { integration: mailId, to: ['desk@example.com', 'ops@example.com'] },
    ]);
    const id = /#\/workflows\/(wrkf_\w+)/.exec(page.url())![1]!;
    const stored = (await h.call('GET', `/v2/workflows/${id}`)).json().workflow;
    expect(stored.on_failure).toEqual({ integration: mailId, to: ['desk@example.com', 'ops@example.com'] });
    // The integration's id first, then its name once read.
    await page.locator('#on-failure-view a', { hasText: 'Failure mail' }).waitFor();
    await expect(page.locator('#on-failure-view').textContent()).resolves.toBe(
      'Alert through Failure mail (SMTP) to desk@example.com, ops@example.com',
    );
    await shot(page, '29b-workflow-on-failure-view');
    // Edit: a handler workflow instead.
    await page.getByRole('link', { name: 'Edit' }).click();
    await expect(page.getByLabel('Alert through an integration').isChecked()).resolves.toBe(true);
    await page.getByLabel('Run a handler workflow').check();
    await page.getByLabel('Handler workflow', { exact: true }).selectOption({ label: handler.name });
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('#on-failure-view', { hasText: `Run ${handler.name}` }).waitFor();
    expect(sent[2]).toEqual({ workflow_id: handler.id });
    expect(unexpected(problems)).toEqual([]);
  }, 120_000);
});
