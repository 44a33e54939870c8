import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import type { Database } from '../../engine/platform/database';
import { createTestAccount, createTestApp, type TestAccount, type TestApp } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';
import { testChromium } from '../support/chromium';

const ARTIFACTS = path.resolve(__dirname, '..', '..', 'test-artifacts');

const REPORT = {
  name: 'Q1 2024 Risk Review — Global Equity Fund',
  description: 'Quarterly risk summary prepared for the investment committee. #risk #quarterly',
  date: '20240328',
  data: [
    ['Measure', 'Portfolio', 'Benchmark'],
    ['CVaR- (95%)', -0.0523, -0.0481],
    ['Expected value', 0.0071, 0.0064],
    ['CVaR+ (95%)', 0.0588, 0.0533],
  ],
  widgets: [
    {
      id: 'holdings',
      name: 'Holdings',
      type: 'table',
      description: 'Positions at the close of 28 March 2024.',
      columns: [
        'Security',
        'Sector',
        { name: 'Weight', format: 'percent' },
        { name: 'Market value', format: 'currency' },
        { name: 'P&L', format: 'currency' },
      ],
      rows: [
        ['AAPL:XNAS', 'Technology', 0.1842, 1843200.5, 120453.2],
        ['MSFT:XNAS', 'Technology', 0.1537, 1537000, 98211.75],
        ['JPM:XNYS', 'Financials', 0.0921, 921450.25, -15320.4],
        ['XOM:XNYS', 'Energy', 0.0712, 712000, -42110],
        ['JNJ:XNYS', 'Health care', 0.0654, 654320, 8120.55],
      ],
    },
    {
      id: 'mctr',
      name: 'Contribution to risk (MCTR)',
      type: 'bar',
      description: 'Marginal contribution to total risk by security.',
      format: 'percent',
      labels: ['AAPL', 'MSFT', 'JPM', 'XOM', 'JNJ', 'TLT', 'GLD'],
      values: [0.0412, 0.0351, 0.0198, 0.0143, 0.0061, -0.0122, -0.0047],
    },
    {
      id: 'nav',
      name: 'Net asset value',
      type: 'line',
      format: 'currency',
      x: Array.from({ length: 60 }, (_, i) =>
        new Date(Date.UTC(2024, 0, 2 + i)).toISOString().slice(0, 10).replace(/-/g, ''),
      ),
      series: [
        {
          name: 'Portfolio',
          values: Array.from({ length: 60 }, (_, i) => 1e7 * (1 + 0.002 * i + 0.01 * Math.sin(i / 4))),
        },
        {
          name: 'Benchmark',
          values: Array.from({ length: 60 }, (_, i) => 1e7 * (1 + 0.0015 * i + 0.006 * Math.cos(i / 5))),
        },
      ],
    },
    {
      id: 'comment',
      name: 'Commentary',
      type: 'text',
      text: 'Equity exposure rose through March while rates volatility eased.\n\nThe portfolio stays overweight technology; energy detracted.',
    },
  ],
};

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

describe('the report page in headless Debian Chromium', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let t: TestApp;
  let owner: TestAccount;
  let origin: string;
  let browser: Awaited<ReturnType<typeof testChromium>>;
  const profiles: string[] = [];
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    // Debian's Chromium, else the one @sparticuz/chromium ships: never skipped, never downloaded.
    browser = await testChromium();
    mkdirSync(ARTIFACTS, { recursive: true });
    database = await createTestDatabase();
    db = database.db;
    t = await createTestApp(db);
    owner = await createTestAccount(db);
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });

  afterAll(async () => {
    for (const context of contexts) await context.close();
    for (const profile of profiles) rmSync(profile, { recursive: true, force: true });
    await t?.close();
    await database?.drop();
  });

  /** A fresh browser with an empty profile of its own. */
  async function launch(options: { httpCredentials?: { username: string; password: string } } = {}) {
    const profile = mkdtempSync(path.join(os.tmpdir(), 'pas-chromium-'));
    profiles.push(profile);
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: browser.executablePath,
      headless: true,
      args: browser.args,
      viewport: { width: 1280, height: 900 },
      ...options,
    });
    contexts.push(context);
    return context;
  }

  async function createReport(body: object = REPORT) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/reports',
      payload: body,
      headers: { authorization: owner.bearer },
    });
    expect(res.statusCode).toBe(200);
    return res.json().report;
  }

  async function shareReport(id: string, terms: object) {
    const res = await t.app.inject({
      method: 'POST',
      url: `/v2/reports/${id}/share`,
      payload: terms,
      headers: { authorization: owner.bearer },
    });
    expect(res.statusCode).toBe(200);
    return res.json().report;
  }

  /** The test app's public URL is not this socket's: keep the link's path and token, use our origin. */
  const onSocket = (url: string) => {
    const parsed = new URL(url, 'http://placeholder');
    return origin + parsed.pathname + parsed.search;
  };

  async function boxOf(page: Page, selector: string): Promise<Box> {
    const box = await page.locator(selector).first().boundingBox();
    if (!box) throw new Error(`${selector} is not drawn`);
    return box;
  }

  /** Console complaints (a CSP refusal, a failed load) mean the page did not render as written. */
  function watchConsole(page: Page): string[] {
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    return problems;
  }

  test('a shared link draws the table and the charts, in both themes (screenshots saved)', async () => {
    const report = await createReport();
    const browser = await launch();
    for (const theme of ['Light', 'Dark'] as const) {
      const shared = await shareReport(report.id, { skin_theme: theme, expires_after: '600' });
      const page = await browser.newPage();
      const problems = watchConsole(page);
      const response = await page.goto(onSocket(shared.shared_url));
      expect(response?.status()).toBe(200);
      expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");

      await expect(page.locator('h1').textContent()).resolves.toBe(REPORT.name);
      expect(await page.locator('#widget-holdings tbody tr').count()).toBe(5);
      expect(await page.locator('#widget-holdings td.neg').count()).toBe(2);

      // Every bar has an area on screen, negative ones included, and they sit below the positive ones' base.
      const bars = page.locator('#widget-mctr svg rect.bar');
      expect(await bars.count()).toBe(7);
      const positive = await boxOf(page, '#widget-mctr svg rect.bar.pos');
      const negative = await boxOf(page, '#widget-mctr svg rect.bar.neg');
      expect(positive.width).toBeGreaterThan(10);
      expect(positive.height).toBeGreaterThan(50);
      expect(negative.height).toBeGreaterThan(5);
      expect(negative.y).toBeGreaterThanOrEqual(positive.y + positive.height - 1);

      // The lines are drawn, across most of the chart's width, in the theme's colours (the CSP let the style in).
      const chart = await boxOf(page, '#widget-nav svg');
      const line = await boxOf(page, '#widget-nav svg path.line');
      expect(line.width).toBeGreaterThan(chart.width * 0.7);
      expect(line.height).toBeGreaterThan(20);
      expect(await page.locator('#widget-nav svg path.line').count()).toBe(2);
      const barFill = await page
        .locator('#widget-mctr svg rect.bar.pos')
        .first()
        .evaluate((element) => {
          const view = globalThis as unknown as { getComputedStyle(e: unknown): { fill: string } };
          return view.getComputedStyle(element).fill;
        });
      expect(barFill).toBe(theme === 'Light' ? 'rgb(37, 99, 201)' : 'rgb(91, 149, 240)');
      await expect(page.locator('#report-data').textContent()).resolves.toContain('CVaR- (95%)');
      await expect(page.locator('footer').textContent()).resolves.toContain('Shared link · valid until');

      await page.screenshot({
        path: path.join(ARTIFACTS, `report-page-${theme.toLowerCase()}.png`),
        fullPage: true,
      });
      expect(problems).toEqual([]);
      await page.close();
    }
  });

  test('a widget page draws its chart alone', async () => {
    const report = await createReport();
    const shared = await shareReport(report.id, {});
    const token = new URL(shared.shared_url).searchParams.get('token');
    const browser = await launch();
    const page = await browser.newPage();
    const response = await page.goto(
      `${origin}/report/${report.relative_url.split('/')[2]}/widget/mctr/light?token=${token}`,
    );
    expect(response?.status()).toBe(200);
    expect(await page.locator('section.card').count()).toBe(1);
    expect((await boxOf(page, 'svg rect.bar')).height).toBeGreaterThan(0);
    await page.screenshot({ path: path.join(ARTIFACTS, 'report-widget-page.png'), fullPage: true });
  });

  test('an expired link shows the 410 page', async () => {
    const report = await createReport({ name: 'Short-lived' });
    const shared = await shareReport(report.id, { expires_after: '60' });
    await db('report_shares')
      .where({ report_id: report.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const browser = await launch();
    const page = await browser.newPage();
    const response = await page.goto(onSocket(shared.shared_url));
    expect(response?.status()).toBe(410);
    await expect(page.locator('h1').textContent()).resolves.toBe('This shared link has expired');
    expect(await page.locator('text=Short-lived').count()).toBe(0);
    await page.screenshot({ path: path.join(ARTIFACTS, 'report-link-expired.png') });
  });

  test('the owner answers the Basic prompt with the SID and token and sees the report', async () => {
    const report = await createReport();
    // Without credentials the browser meets the Basic challenge; a headless browser driven by
    // Playwright has nobody to type into the prompt, so it gives up on the navigation.
    const anonymous = await (await launch()).newPage();
    const attempt = await anonymous.goto(onSocket(report.relative_url)).then(
      (response) => ({ status: response?.status() ?? null }),
      (error: Error) => ({ error: error.message }),
    );
    // Debian's Chromium gives up on the prompt; the headless shell @sparticuz/chromium ships shows the 401.
    expect(attempt).toEqual(
      browser.source === 'debian'
        ? { error: expect.stringMatching(/ERR_INVALID_AUTH_CREDENTIALS/) }
        : { status: 401 },
    );

    const signedIn = await launch({
      httpCredentials: { username: owner.key.account_sid, password: owner.key.auth_token },
    });
    const page = await signedIn.newPage();
    const response = await page.goto(onSocket(report.relative_url));
    expect(response?.status()).toBe(200);
    await expect(page.locator('h1').textContent()).resolves.toBe(REPORT.name);
    expect((await boxOf(page, 'svg rect.bar')).width).toBeGreaterThan(0);
  });
});
