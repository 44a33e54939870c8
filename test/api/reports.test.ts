import { createHash } from 'node:crypto';
import { todayYYYYMMDD } from '../../engine/store/entity-fields';
import {
  EXPIRED_SHARE_RETENTION_SECONDS,
  pruneExpiredShares,
  resolveShareToken,
} from '../../engine/reports/report-store';
import { validateReportBody } from '../../engine/reports/report-schemas';
import { InvalidInput } from '../../engine/platform/errors';
import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const BASE = 'http://pas.test'; // the publicUrl createTestApp configures
const deeplyNested = (depth: number): unknown[] => {
  let value: unknown[] = [];
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('reports', () => {
  const h = useTestApp();
  const { call } = h;
  const create = async (body: object) => {
    const res = await call('POST', '/v2/reports', body);
    expect(res.statusCode).toBe(200);
    return res.json().report;
  };
  const uidOf = (report: { relative_url: string }) => report.relative_url.split('/')[2]!;
  const entityCount = async () => Number((await h.db('entities').count({ n: '*' }).first())!.n);
  const shareCount = async () => Number((await h.db('report_shares').count({ n: '*' }).first())!.n);

  test('create → 200 with defaults and the report addresses', async () => {
    const res = await call('POST', '/v2/reports', {
      name: 'Risk summary',
      description: 'Weekly #risk',
      unknown_top_level: 1,
    });
    expect(res.statusCode).toBe(200);
    const { report } = res.json();
    const uid = uidOf(report);
    expect(uid).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(report).toEqual({
      id: expect.stringMatching(/^repo_[A-Za-z0-9]{25}$/),
      name: 'Risk summary',
      description: 'Weekly #risk',
      tags: ['risk'],
      date: todayYYYYMMDD(),
      data: [],
      authorization: 'PRIVATE',
      url: `${BASE}/report/${uid}/light`,
      absolute_url: `${BASE}/report/${uid}/light`,
      relative_url: `/report/${uid}/light`,
      widgets: [],
      workspace: 'main',
      link_uid: null,
      created: expect.any(Number),
      updated: expect.any(Number),
      version: '1',
    });
  });

  test('widgets: ids generated when missing, kept when given; extra keys stored but not shown', async () => {
    const report = await create({
      name: 'With widgets',
      date: '20240102',
      data: [{ section: 'summary', values: [1, 2] }],
      authorization: 'public',
      link_uid: 'batch-7',
      widgets: [
        { name: 'Exposure', type: 'chart', config: { stacked: true } },
        { id: 'var_table', name: 'VaR' },
      ],
    });
    const uid = uidOf(report);
    const generated = report.widgets[0].id;
    expect(generated).toMatch(/^[A-Za-z0-9]{25}$/);
    expect(report).toMatchObject({
      date: '20240102',
      data: [{ section: 'summary', values: [1, 2] }],
      authorization: 'PUBLIC',
      link_uid: 'batch-7',
    });
    expect(report.widgets).toEqual([
      {
        id: generated,
        name: 'Exposure',
        absolute_url: `${BASE}/report/${uid}/widget/${generated}/light`,
        relative_url: `/report/${uid}/widget/${generated}/light`,
      },
      {
        id: 'var_table',
        name: 'VaR',
        absolute_url: `${BASE}/report/${uid}/widget/var_table/light`,
        relative_url: `/report/${uid}/widget/var_table/light`,
      },
    ]);
    const got = await call('GET', `/v2/reports/${report.id}`);
    expect(got.json()).toEqual({ report });
    const row = await h.db('entities').where({ kind: 'report', id: report.id }).first();
    expect(row.body.widgets[0]).toEqual({
      id: generated,
      name: 'Exposure',
      type: 'chart',
      config: { stacked: true },
    });
  });

  test.each([
    [{}, 'name is required.'],
    [{ name: 'x', data: { not: 'an array' } }, 'data must be an array.'],
    [{ name: 'x', widgets: { name: 'w' } }, 'widgets must be an array.'],
    [{ name: 'x', widgets: ['w'] }, 'widgets[0] must be an object.'],
    [{ name: 'x', widgets: [{ name: 'a' }, { id: 'b' }] }, 'widgets[1].name is required.'],
    [
      { name: 'x', widgets: [{ id: 'a/b', name: 'w' }] },
      'widgets[0].id must be 1 to 64 letters, digits, _ or -.',
    ],
    [
      { name: 'x', widgets: [{ id: 7, name: 'w' }] },
      'widgets[0].id must be 1 to 64 letters, digits, _ or -.',
    ],
    [
      {
        name: 'x',
        widgets: [
          { id: 'w1', name: 'a' },
          { id: 'w1', name: 'b' },
        ],
      },
      'widgets[1].id "w1" is used by another widget.',
    ],
    [{ name: 'x', authorization: 'SECRET' }, 'authorization must be PRIVATE or PUBLIC.'],
    [{ name: 'x', date: '20241301' }, 'date must be a date in the format YYYYMMDD.'],
    [{ name: 'x', link_uid: 42 }, 'link_uid must be a string of at most 200 characters.'],
    [{ name: 'x', workspace: 'a b' }, 'workspace must be a workspace name without spaces.'],
    // PostgreSQL cannot store these in jsonb: a 400 naming the place, not a 500.
    [
      { name: 'x', data: [{ 'k\u0000': 1 }] },
      'data[0] has a key with a NUL character or an unpaired surrogate.',
    ],
    [
      { name: 'x', widgets: [{ name: 'w\udc00' }] },
      'widgets[0].name holds a NUL character or an unpaired surrogate.',
    ],
    [{ name: 'x', data: deeplyNested(150) }, 'data nests deeper than 100 levels.'],
    // Widgets of the types the report page draws must hold what the drawing needs.
    [
      { name: 'x', widgets: [{ name: 'w', type: 'bar', labels: ['A', 'B'], values: [1] }] },
      'widgets[0].values has 1 values but labels has 2.',
    ],
    [
      { name: 'x', widgets: [{ name: 'w', type: 'line', x: [1], series: [{ name: 's', values: ['1'] }] }] },
      'widgets[0].series[0].values[0] must be a number or null.',
    ],
    [
      { name: 'x', widgets: [{ name: 'w', type: 'table', columns: ['a'], rows: [[{ nested: 1 }]] }] },
      'widgets[0].rows[0][0] must be a string, number, boolean or null.',
    ],
    [
      { name: 'x', widgets: [{ name: 'w', type: 'text', text: 'ok', format: 'euro' }] },
      'widgets[0].format must be one of number, percent, currency, plain.',
    ],
  ])('invalid %j → 400 with its message, nothing stored', async (body, message) => {
    const before = await entityCount();
    const res = await call('POST', '/v2/reports', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await entityCount()).toBe(before);
  });

  test.each([
    [{}, 'name is required.'],
    [{ name: 'x', data: { not: 'an array' } }, 'data must be an array.'],
    [{ name: 'x', widgets: ['w'] }, 'widgets[0] must be an object.'],
    [
      { name: 'x', widgets: [{ id: 7, name: 'w' }] },
      'widgets[0].id must be 1 to 64 letters, digits, _ or -.',
    ],
    [{ name: 'x', widgets: [{ name: 'w', type: 7 }] }, 'widgets[0].type must be a string.'],
    [{ name: 'x', authorization: 'SECRET' }, 'authorization must be PRIVATE or PUBLIC.'],
    [{ name: 'x', link_uid: 42 }, 'link_uid must be a string of at most 200 characters.'],
    [
      { name: 'x', data: [{ 'k\u0000': 1 }] },
      'data[0] has a key with a NUL character or an unpaired surrogate.',
    ],
  ])('validateReportBody refuses %j with the route’s message', async (body, message) => {
    const res = await call('POST', '/v2/reports', body);
    expect(res.json()).toEqual({ code: 400, message });
    expect(() => validateReportBody('create', body)).toThrow(new InvalidInput(message));
    const { name: _name, ...fields } = body as Record<string, unknown>;
    if (Object.keys(fields).length > 0) {
      expect(() => validateReportBody('update', fields)).toThrow(new InvalidInput(message));
    }
  });

  test('validateReportBody passes what the route accepts, unchanged', () => {
    const body = { name: 'x', authorization: 'public', widgets: [{ name: 'w', extra: 1 }], other: 2 };
    const copy = structuredClone(body);
    expect(validateReportBody('create', body)).toBe(body);
    expect(body).toEqual(copy);
    expect(validateReportBody('update', {})).toEqual({});
  });

  test('widgets in the page format are stored as sent; a bad one is refused on update too', async () => {
    const widgets = [
      {
        id: 't',
        name: 'Holdings',
        type: 'table',
        columns: ['Symbol', { name: 'Weight', format: 'percent' }],
        rows: [['AAPL', 0.5]],
      },
      {
        id: 'b',
        name: 'MCTR',
        type: 'bar',
        labels: ['AAPL', 'TLT'],
        values: [0.04, -0.01],
        format: 'percent',
      },
      {
        id: 'l',
        name: 'NAV',
        type: 'line',
        x: ['20240101', '20240102'],
        series: [{ name: 'Fund', values: [1, null] }],
      },
      { id: 'n', name: 'Note', type: 'text', text: 'Risk fell.', description: 'Commentary' },
    ];
    const report = await create({ name: 'Formatted', widgets });
    const row = await h.db('entities').where({ kind: 'report', id: report.id }).first();
    expect(row.body.widgets).toEqual(widgets);
    const bad = await call('PUT', `/v2/reports/${report.id}`, {
      widgets: [{ id: 'b', name: 'MCTR', type: 'bar', labels: ['AAPL'], values: [0.04, 1] }],
    });
    expect(bad.json()).toEqual({ code: 400, message: 'widgets[0].values has 2 values but labels has 1.' });
  });

  test('update: fields change, version bumps, uid stays, derived widget URLs are not stored', async () => {
    const report = await create({ name: 'Editable', widgets: [{ id: 'w1', name: 'One' }], link_uid: 'l1' });
    // What a client sends back after retrieving: widgets with their URLs.
    const res = await call('PUT', `/v2/reports/${report.id}`, {
      name: 'Edited',
      authorization: 'PUBLIC',
      data: [1, 2, 3],
      widgets: [...report.widgets, { name: 'Two' }],
      link_uid: null,
    });
    expect(res.statusCode).toBe(200);
    const updated = res.json().report;
    expect(updated).toMatchObject({
      id: report.id,
      name: 'Edited',
      authorization: 'PUBLIC',
      data: [1, 2, 3],
      link_uid: null,
      date: report.date,
      url: report.url,
      version: '2',
    });
    expect(updated.widgets.map((w: { id: string }) => w.id)).toEqual(['w1', expect.any(String)]);
    const row = await h.db('entities').where({ kind: 'report', id: report.id }).first();
    expect(row.body.widgets[0]).toEqual({ id: 'w1', name: 'One' });

    const bad = await call('PUT', `/v2/reports/${report.id}`, { widgets: [{ id: 'w' }] });
    expect(bad.json()).toEqual({
      code: 400,
      message: 'widgets[0].name is required.',
    });
    expect((await call('GET', `/v2/reports/${report.id}`)).json().report).toEqual(updated);
  });

  test('list: without widgets, most recent first, by link_uid', async () => {
    const a = await create({ name: 'Listed A', link_uid: 'group-1', widgets: [{ name: 'w' }] });
    const b = await create({ name: 'Listed B', link_uid: 'group-1' });
    await create({ name: 'Listed C', link_uid: 'group-2' });
    const res = await call('GET', `/v2/reports?query=${encodeURIComponent('&group-1')}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.next_page_token).toBeNull();
    expect(body.reports.map((r: { id: string }) => r.id)).toEqual([b.id, a.id]);
    const { widgets: _omitted, ...aWithoutWidgets } = a;
    expect(body.reports[1]).toEqual(aWithoutWidgets);
  });

  test('share: default terms, token shown once and stored only as its digest, resolvable', async () => {
    const report = await create({
      name: 'Shared',
      link_uid: 'ln',
      date: '20240301',
      widgets: [{ name: 'w' }],
    });
    const uid = uidOf(report);
    const before = Date.now();
    const res = await call('POST', `/v2/reports/${report.id}/share`, {});
    expect(res.statusCode).toBe(200);
    const shared = res.json().report;
    const token = shared.url_token;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const { widgets: _widgets, ...reportFields } = report;
    expect(shared).toEqual({
      ...reportFields,
      shared_url: `${BASE}/report/${uid}/light?token=${token}`,
      url_token: token,
      expires_after: 3600,
      widgets: null,
      date: '20240301',
      date_time: expect.stringMatching(/^\d{8} \d{2}:\d{2}:\d{2}$/),
      link_uid: 'ln',
    });
    const sharedAt = Date.UTC(
      Number(shared.date_time.slice(0, 4)),
      Number(shared.date_time.slice(4, 6)) - 1,
      Number(shared.date_time.slice(6, 8)),
      Number(shared.date_time.slice(9, 11)),
      Number(shared.date_time.slice(12, 14)),
      Number(shared.date_time.slice(15, 17)),
    );
    expect(Math.abs(sharedAt - before)).toBeLessThan(5000);

    const rows = await h.db('report_shares').where({ report_id: report.id });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      token_hash: sha256(token),
      account_id: h.account.accountId,
      skin_theme: 'Light',
    });
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows[0].expires_at.getTime() - rows[0].created_at.getTime()).toBe(3600 * 1000);

    const resolved = await resolveShareToken(h.db, token);
    expect(resolved).toMatchObject({ id: report.id, accountId: h.account.accountId, name: 'Shared' });
    expect(await resolveShareToken(h.db, token + 'x')).toBeNull();
    expect(await resolveShareToken(h.db, 'unknown')).toBeNull();
  });

  test('share terms from the query string (no body), dark theme, in a workspace', async () => {
    const report = await create({ name: 'Ops report', workspace: 'ops' });
    const uid = uidOf(report);
    const res = await h.app.inject({
      method: 'POST',
      url: `/v2/reports/${report.id}/share?expires_after=60&skin_theme=Dark&workspace=ops`,
      headers: { authorization: h.account.bearer },
    });
    expect(res.statusCode).toBe(200);
    const shared = res.json().report;
    expect(shared).toMatchObject({
      expires_after: 60,
      workspace: 'ops',
      url: `${BASE}/report/${uid}/dark`,
      absolute_url: `${BASE}/report/${uid}/dark`,
      relative_url: `/report/${uid}/dark`,
      shared_url: `${BASE}/report/${uid}/dark?token=${shared.url_token}`,
    });
    const row = await h
      .db('report_shares')
      .where({ token_hash: sha256(shared.url_token) })
      .first();
    expect(row.skin_theme).toBe('Dark');
    expect(row.expires_at.getTime() - row.created_at.getTime()).toBe(60_000);
    expect((await resolveShareToken(h.db, shared.url_token))?.workspace).toBe('ops');

    // The body wins over the query string; a number is accepted for expires_after.
    const both = await call('POST', `/v2/reports/${report.id}/share?workspace=ops&expires_after=60`, {
      expires_after: 120,
      skin_theme: 'light',
    });
    expect(both.json().report).toMatchObject({ expires_after: 120, relative_url: `/report/${uid}/light` });
    // Without the workspace the report is not found.
    expect((await call('POST', `/v2/reports/${report.id}/share`, {})).statusCode).toBe(404);
  });

  test.each([
    [{ expires_after: '0' }, 'expires_after must be a whole number of seconds from 1 to 2592000 (30 days).'],
    [{ expires_after: '-5' }, 'expires_after must be a whole number of seconds from 1 to 2592000 (30 days).'],
    [
      { expires_after: '1.5' },
      'expires_after must be a whole number of seconds from 1 to 2592000 (30 days).',
    ],
    [{ expires_after: '1h' }, 'expires_after must be a whole number of seconds from 1 to 2592000 (30 days).'],
    [
      { expires_after: '2592001' },
      'expires_after must be a whole number of seconds from 1 to 2592000 (30 days).',
    ],
    [{ expires_after: 36.5 }, 'expires_after must be a whole number of seconds from 1 to 2592000 (30 days).'],
    [{ expires_after: true }, 'expires_after must be a whole number of seconds from 1 to 2592000 (30 days).'],
    [{ skin_theme: 'Blue' }, 'skin_theme must be Dark or Light.'],
    [{ skin_theme: 1 }, 'skin_theme must be Dark or Light.'],
  ])('share with %j → 400, no link made', async (body, message) => {
    const report = await create({ name: 'Not shared' });
    const before = await shareCount();
    const res = await call('POST', `/v2/reports/${report.id}/share`, body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
    expect(await shareCount()).toBe(before);
  });

  test('the longest share (30 days) is accepted', async () => {
    const report = await create({ name: 'Long share' });
    const res = await call('POST', `/v2/reports/${report.id}/share`, { expires_after: '2592000' });
    expect(res.json().report.expires_after).toBe(2592000);
  });

  test('an expired share token opens nothing; pruning drops only links expired past the retention', async () => {
    const report = await create({ name: 'Short-lived' });
    const token = (await call('POST', `/v2/reports/${report.id}/share`, { expires_after: '60' })).json()
      .report.url_token;
    const other = (await call('POST', `/v2/reports/${report.id}/share`, {})).json().report.url_token;
    const row = await h
      .db('report_shares')
      .where({ token_hash: sha256(token) })
      .first();
    const expiresAt: Date = row.expires_at;

    expect(await resolveShareToken(h.db, token, new Date(expiresAt.getTime() - 1000))).not.toBeNull();
    expect(await resolveShareToken(h.db, token, expiresAt)).toBeNull();
    expect(await resolveShareToken(h.db, token, new Date(expiresAt.getTime() + 1000))).toBeNull();

    await h
      .db('report_shares')
      .where({ token_hash: sha256(token) })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expect(await resolveShareToken(h.db, token)).toBeNull();
    expect(await resolveShareToken(h.db, other)).not.toBeNull();

    // Just expired: kept, so the report page can answer 410 ("expired") rather than 404.
    await pruneExpiredShares(h.db);
    expect(
      await h
        .db('report_shares')
        .where({ token_hash: sha256(token) })
        .first(),
    ).toBeDefined();

    await h
      .db('report_shares')
      .where({ token_hash: sha256(token) })
      .update({ expires_at: new Date(Date.now() - (EXPIRED_SHARE_RETENTION_SECONDS + 1) * 1000) });
    expect(await pruneExpiredShares(h.db)).toBeGreaterThanOrEqual(1);
    expect(
      await h
        .db('report_shares')
        .where({ token_hash: sha256(token) })
        .first(),
    ).toBeUndefined();
    expect(
      await h
        .db('report_shares')
        .where({ token_hash: sha256(other) })
        .first(),
    ).toBeDefined();
  });

  test('delete → {report: {deleted, id}}, its share links stop working', async () => {
    const report = await create({ name: 'Doomed' });
    const token = (await call('POST', `/v2/reports/${report.id}/share`, {})).json().report.url_token;
    expect(await resolveShareToken(h.db, token)).not.toBeNull();
    const res = await call('DELETE', `/v2/reports/${report.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ report: { deleted: true, id: report.id } });
    // Revoked by expiring them now (not dropped), so their holders are told the link expired.
    const rows = await h.db('report_shares').where({ report_id: report.id });
    expect(rows).toHaveLength(1);
    expect(rows[0].expires_at.getTime()).toBeLessThanOrEqual(Date.now());
    expect(await resolveShareToken(h.db, token)).toBeNull();
    expect((await call('GET', `/v2/reports/${report.id}`)).json()).toEqual({
      code: 404,
      message: `Report ${report.id} not found.`,
    });
    expect((await call('POST', `/v2/reports/${report.id}/share`, {})).statusCode).toBe(404);
  });

  test("another account's report is 404 on every route", async () => {
    const report = await create({ name: 'Private' });
    const other = await createTestAccount(h.db);
    const notFound = { code: 404, message: `Report ${report.id} not found.` };
    expect((await call('GET', `/v2/reports/${report.id}`, undefined, other)).json()).toEqual(notFound);
    expect((await call('PUT', `/v2/reports/${report.id}`, { name: 'hijack' }, other)).json()).toEqual(
      notFound,
    );
    expect((await call('POST', `/v2/reports/${report.id}/share`, {}, other)).json()).toEqual(notFound);
    expect((await call('DELETE', `/v2/reports/${report.id}`, undefined, other)).json()).toEqual(notFound);
    expect((await call('GET', '/v2/reports', undefined, other)).json()).toEqual({
      reports: [],
      next_page_token: null,
    });
    expect((await call('GET', `/v2/reports/${report.id}`)).json().report.name).toBe('Private');
  });

  test('every action is in the audit trail; the share record keeps the terms, never the token', async () => {
    const report = await create({ name: 'Audited' });
    await call('GET', `/v2/reports/${report.id}`);
    await call('PUT', `/v2/reports/${report.id}`, { name: 'Audited 2' });
    const token = (
      await call('POST', `/v2/reports/${report.id}/share`, { expires_after: '600', skin_theme: 'Dark' })
    ).json().report.url_token;
    await call('POST', `/v2/reports/${report.id}/share`, { skin_theme: 'Blue' });
    await call('DELETE', `/v2/reports/${report.id}`);
    const records = await h.db('audit_logs').where({ entity_id: report.id }).orderBy('created_at');
    expect(records.map((r) => [r.operation, r.entity_type, r.entity_name, r.status])).toEqual([
      ['CREATE', 'Report', 'Audited', 'SUCCESS'],
      ['VIEW', 'Report', 'Audited', 'SUCCESS'],
      ['UPDATE', 'Report', 'Audited 2', 'SUCCESS'],
      ['SHARE', 'Report', 'Audited 2', 'SUCCESS'],
      ['SHARE', 'Report', null, 'ERROR'],
      ['DELETE', 'Report', 'Audited 2', 'SUCCESS'],
    ]);
    expect(records[3].after).toEqual({
      skin_theme: 'Dark',
      expires_after: 600,
      expires_at: expect.any(Number),
    });
    expect(JSON.stringify(records)).not.toContain(token);
    // Sharing does not change the report: it was still at the update's version when deleted.
    expect(records[5].before.version).toBe('2');
  });

  test('the OpenAPI document lists the report routes, the extensions marked', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    expect(Object.keys(doc.paths['/reports']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/reports/{id}']).sort()).toEqual(['delete', 'get', 'put']);
    expect(Object.keys(doc.paths['/reports/{id}/share'])).toEqual(['post']);
    expect(doc.paths['/reports'].post.summary).toContain('Extension');
    expect(doc.paths['/reports/{id}'].put.summary).toContain('Extension');
    expect(doc.paths['/reports/{id}'].get.summary).not.toContain('Extension');
  });
});
