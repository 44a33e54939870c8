import { createHash } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { EXPIRED_SHARE_RETENTION_SECONDS, pruneExpiredShares } from '../../engine/reports/report-store';
import { createTestAccount, createTestApp, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const WIDGET_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const REPORT = {
  name: 'Q1 risk <script>alert(1)</script>',
  description: 'Quarterly review for the client',
  date: '20240328',
  data: [
    ['Measure', 'Value'],
    ['CVaR-', -0.0523],
    ['EV', 0.0071],
  ],
  widgets: [
    {
      id: 'holdings',
      name: 'Holdings',
      type: 'table',
      columns: ['Security', { name: 'Weight', format: 'percent' }],
      rows: [
        ['AAPL', 0.25],
        ['<img src=x onerror=alert(1)>', 0.75],
      ],
    },
    {
      id: 'mctr',
      name: 'MCTR',
      type: 'bar',
      labels: ['AAPL', 'TLT'],
      values: [0.04, -0.01],
      format: 'percent',
    },
    { id: 'nav', name: 'NAV', type: 'line', x: ['20240101', '20240102', '20240103'], values: [100, 101, 99] },
  ],
};

describe('report pages', () => {
  let stranger: TestAccount;

  const h = useTestApp({
    setUp: async ({ db }) => {
      stranger = await createTestAccount(db);
    },
  });

  const api = async (method: 'POST' | 'DELETE' | 'PUT', url: string, payload?: object) => {
    const res = await h.app.inject({ method, url, payload, headers: { authorization: h.account.bearer } });
    expect(res.statusCode).toBe(200);
    return res.json();
  };
  const create = async (body: object = REPORT) => (await api('POST', '/v2/reports', body)).report;
  const share = async (id: string, terms: object = {}) =>
    (await api('POST', `/v2/reports/${id}/share`, terms)).report;
  const uidOf = (report: { relative_url: string }) => report.relative_url.split('/')[2]!;
  const get = (url: string, authorization?: string) =>
    h.app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {} });
  const basic = (account: TestAccount) =>
    'Basic ' + Buffer.from(`${account.key.account_sid}:${account.key.auth_token}`).toString('base64');
  const expectPageHeaders = (res: LightMyRequestResponse, csp = CSP) => {
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-security-policy']).toBe(csp);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-service-request-id']).toMatch(/^req_/);
    expect(res.body.startsWith('<!doctype html>')).toBe(true);
  };
  const shareRow = (token: string) => h.db('report_shares').where({ token_hash: sha256(token) });

  test('the owner (Bearer) sees the report: heading, table, charts, data, all escaped', async () => {
    const report = await create();
    const res = await get(report.relative_url, h.account.bearer);
    expect(res.statusCode).toBe(200);
    expectPageHeaders(res);
    const page = res.body;
    expect(page).toContain('<html lang="en" class="theme-light">');
    expect(page).toContain('<h1>Q1 risk &lt;script&gt;alert(1)&lt;/script&gt;</h1>');
    expect(page).toContain('<time>28 March 2024</time>');
    expect(page).toContain('<section class="card wide" id="widget-holdings" data-widget-type="table">');
    expect(page).toContain('<td class="num">25.00%</td>');
    expect(page).toContain('<td>&lt;img src=x onerror=alert(1)&gt;</td>');
    expect(page).toContain('<svg class="chart bar-chart"');
    expect(page).toContain('<rect class="bar neg"');
    expect(page).toContain('<svg class="chart line-chart"');
    expect(page).toContain('<section class="card wide" id="report-data"><h2>Data</h2>');
    expect(page).toContain('<td class="num neg">-0.0523</td>');
    expect(page).not.toMatch(/<script|<img/i);
    expect(page).not.toContain('Shared link');
  });

  test('HTTP Basic works too (what a browser sends after the prompt); the dark theme is a class', async () => {
    const report = await create();
    const res = await get(`/report/${uidOf(report)}/dark`, basic(h.account));
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<html lang="en" class="theme-dark">');
    expect(res.body).toContain('<svg class="chart bar-chart"');
  });

  test('the owner’s view is in the audit trail', async () => {
    const report = await create({ name: 'Audited page' });
    await get(report.relative_url, h.account.bearer);
    const records = await h.db('audit_logs').where({ entity_id: report.id, operation: 'VIEW' });
    expect(records.map((r) => [r.activity, r.entity_type, r.status])).toEqual([
      ['Viewed report Audited page on its page', 'Report', 'SUCCESS'],
    ]);
  });

  test('without credentials: 401 with a Basic challenge and a page, for any address', async () => {
    const report = await create();
    for (const url of [
      report.relative_url,
      '/report/NoSuchReport/light',
      `/report/${uidOf(report)}/widget/mctr/dark`,
    ]) {
      const res = await get(url);
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Basic realm="Portfolio Analytics"');
      expectPageHeaders(res);
      expect(res.body).toContain('<h1>Sign in to see this report</h1>');
      expect(res.body).not.toContain('Q1 risk');
    }
  });

  test('wrong credentials: 401 again, so the browser asks again', async () => {
    const report = await create();
    const res = await get(report.relative_url, `Basic ${Buffer.from('sid_nobody:wrong').toString('base64')}`);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Basic realm="Portfolio Analytics"');
  });

  test('another account, an unknown uid, a malformed uid: the same 404 page', async () => {
    const report = await create();
    const answers = await Promise.all([
      get(report.relative_url, stranger.bearer),
      get('/report/abcdefghijklmnopqrstuvwxyz012345/light', h.account.bearer),
      get(`/report/${encodeURIComponent('a\u0000b')}/light`, h.account.bearer),
      get(`/report/${'x'.repeat(80)}/light`, h.account.bearer),
    ]);
    for (const res of answers) {
      expect(res.statusCode).toBe(404);
      expectPageHeaders(res);
      expect(res.body).toContain('<h1>Report not found</h1>');
      expect(res.body).not.toContain('Q1 risk');
    }
  });

  test('a theme other than light or dark is 404', async () => {
    const report = await create();
    for (const theme of ['blue', 'Light', 'LIGHT']) {
      const res = await get(`/report/${uidOf(report)}/${theme}`, h.account.bearer);
      expect(res.statusCode).toBe(404);
      expectPageHeaders(res);
    }
    expect((await get(`/report/${uidOf(report)}/widget/mctr/sepia`, h.account.bearer)).statusCode).toBe(404);
  });

  test('a widget page shows that widget alone and may be framed; an unknown widget is 404', async () => {
    const report = await create();
    const widget = report.widgets.find((w: { id: string }) => w.id === 'mctr');
    expect(widget.relative_url).toBe(`/report/${uidOf(report)}/widget/mctr/light`);
    const res = await get(widget.relative_url, h.account.bearer);
    expect(res.statusCode).toBe(200);
    expectPageHeaders(res, WIDGET_CSP);
    expect(res.body).toContain('<section class="card" id="widget-mctr" data-widget-type="bar">');
    expect(res.body).not.toContain('id="widget-holdings"');
    expect(res.body).not.toContain('id="report-data"');
    const missing = await get(`/report/${uidOf(report)}/widget/nope/light`, h.account.bearer);
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toContain('<h1>Widget not found</h1>');
  });

  test('a share link opens the report without credentials, and its widgets, until it expires', async () => {
    const report = await create();
    const shared = await share(report.id, { skin_theme: 'Dark', expires_after: '600' });
    const path = new URL(shared.shared_url).pathname + new URL(shared.shared_url).search;
    expect(path).toBe(`/report/${uidOf(report)}/dark?token=${shared.url_token}`);
    const res = await get(path);
    expect(res.statusCode).toBe(200);
    expectPageHeaders(res);
    expect(res.body).toContain('class="theme-dark"');
    expect(res.body).toContain('<svg class="chart line-chart"');
    expect(res.body).toMatch(/Shared link · valid until \d{1,2} \w+ \d{4}, \d\d:\d\d UTC/);
    const widget = await get(`/report/${uidOf(report)}/widget/nav/light?token=${shared.url_token}`);
    expect(widget.statusCode).toBe(200);
    expect(widget.body).toContain('id="widget-nav"');
    // Viewing through a link is not the account's own action: nothing in its trail.
    expect(await h.db('audit_logs').where({ entity_id: report.id, operation: 'VIEW' })).toEqual([]);
  });

  test('a token opens only its own report', async () => {
    const mine = await create();
    const other = await create({ name: 'Another report' });
    const shared = await share(mine.id);
    const res = await get(`/report/${uidOf(other)}/light?token=${shared.url_token}`);
    expect(res.statusCode).toBe(404);
    expect(res.body).toContain('<h1>Link not found</h1>');
    expect(res.body).not.toContain('Another report');
  });

  test('an unknown token is 404, even for the owner’s own report', async () => {
    const report = await create();
    const res = await get(`${report.relative_url}?token=not-a-real-token`, h.account.bearer);
    expect(res.statusCode).toBe(404);
    expectPageHeaders(res);
    expect(res.body).toContain('<h1>Link not found</h1>');
  });

  test('after expiry: 410 with a clear page; long after, housekeeping forgets the link (404)', async () => {
    const report = await create();
    const shared = await share(report.id, { expires_after: '60' });
    const url = `/report/${uidOf(report)}/light?token=${shared.url_token}`;
    expect((await get(url)).statusCode).toBe(200);

    await shareRow(shared.url_token).update({ expires_at: new Date(Date.now() - 1000) });
    const expired = await get(url);
    expect(expired.statusCode).toBe(410);
    expectPageHeaders(expired);
    expect(expired.body).toContain('<h1>This shared link has expired</h1>');
    expect(expired.body).not.toContain('Q1 risk');
    expect(
      (await get(`/report/${uidOf(report)}/widget/mctr/light?token=${shared.url_token}`)).statusCode,
    ).toBe(410);
    // Pruning keeps a recently expired link, so its holder still reads "expired".
    await pruneExpiredShares(h.db);
    expect((await get(url)).statusCode).toBe(410);

    await shareRow(shared.url_token).update({
      expires_at: new Date(Date.now() - (EXPIRED_SHARE_RETENTION_SECONDS + 60) * 1000),
    });
    expect(await pruneExpiredShares(h.db)).toBeGreaterThanOrEqual(1);
    expect((await get(url)).statusCode).toBe(404);
  });

  test('deleting the report revokes its links (410); the owner’s page is gone (404)', async () => {
    const report = await create();
    const shared = await share(report.id);
    const url = `/report/${uidOf(report)}/light?token=${shared.url_token}`;
    expect((await get(url)).statusCode).toBe(200);
    await api('DELETE', `/v2/reports/${report.id}`);
    const revoked = await get(url);
    expect(revoked.statusCode).toBe(410);
    expect(revoked.body).toContain('<h1>This shared link has expired</h1>');
    expect((await get(report.relative_url, h.account.bearer)).statusCode).toBe(404);
  });

  test('an update shows on the next load (nothing cached)', async () => {
    const report = await create();
    await api('PUT', `/v2/reports/${report.id}`, { name: 'Renamed for the client' });
    const res = await get(report.relative_url, h.account.bearer);
    expect(res.body).toContain('<h1>Renamed for the client</h1>');
  });

  test('a malformed query answers a 400 page, not JSON', async () => {
    const report = await create();
    const res = await get(`${report.relative_url}?token=${'t'.repeat(600)}`);
    expect(res.statusCode).toBe(400);
    expectPageHeaders(res);
    expect(res.body).toContain('<h1>This page cannot be shown</h1>');
  });

  test('the rate limit answers a 429 page with Retry-After', async () => {
    const limited = await createTestApp(h.db, { rateLimitPerMinute: 1 });
    try {
      const report = await create();
      // A client address of its own: a fresh rate-limit bucket. Three requests at one a minute:
      // one of them is refused even when a minute turns between the first two.
      const answers = [];
      for (let i = 0; i < 3; i++) {
        answers.push(
          await limited.app.inject({
            method: 'GET',
            url: report.relative_url,
            remoteAddress: '198.51.100.7',
          }),
        );
      }
      expect(answers[0]!.statusCode).toBe(401);
      const refused = answers.find((res) => res.statusCode === 429)!;
      expect(refused).toBeDefined();
      expect(refused.headers['retry-after']).toBeDefined();
      expectPageHeaders(refused);
      expect(refused.body).toContain('Portfolio Analytics · 429');
    } finally {
      await limited.close();
    }
  });

  test('the JSON API is unchanged: an unknown path outside the pages is still a JSON 404', async () => {
    const res = await get('/report/only-one-segment', h.account.bearer);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ code: 404, message: 'Not Found: GET /report/only-one-segment' });
  });
});
