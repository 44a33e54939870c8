/**
 * The console's page and bundle as the server sends them: built from api/console/ui on the first
 * request, within the first-load budget (250 KB of compressed JavaScript), cached by content hash,
 * under the console's CSP; and its code builds the page without any HTML parsing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { acceptsGzip, consoleBundle } from '../../api/console/assets';
import type { Database } from '../../engine/platform/database';
import { createTestAccount, createTestApp, type TestApp } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

const UI = path.resolve(__dirname, '..', '..', 'api', 'console', 'ui');

describe('the console page and its bundle', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let t: TestApp;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    t = await createTestApp(db);
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  test('the page names its hashed script and style; the script is at most 250 KB gzipped', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/console' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['x-frame-options']).toBe('DENY');
    // No inline script: the page only points at its bundle.
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const script = /src="\/console\/assets\/(console\.[A-Z0-9]+\.js)"/.exec(page.body)![1]!;
    const style = /href="\/console\/assets\/(console\.[A-Z0-9]+\.css)"/.exec(page.body)![1]!;
    const js = await t.app.inject({
      method: 'GET',
      url: `/console/assets/${script}`,
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toContain('text/javascript');
    expect(js.headers['content-encoding']).toBe('gzip');
    expect(js.headers['cache-control']).toContain('immutable');
    expect(js.rawPayload.length).toBeLessThanOrEqual(250 * 1024);
    const css = await t.app.inject({ method: 'GET', url: `/console/assets/${style}` });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toContain('text/css');
    // The code editor, loaded on the pages that show one, is within the same budget.
    const { assets } = await consoleBundle();
    const chunks = [...assets.keys()].filter((name) => name.startsWith('chunk.'));
    expect(chunks.length).toBeGreaterThan(0);
    for (const chunk of chunks) {
      const res = await t.app.inject({
        method: 'GET',
        url: `/console/assets/${chunk}`,
        headers: { 'accept-encoding': 'gzip' },
      });
      expect(res.rawPayload.length).toBeLessThanOrEqual(250 * 1024);
    }
    // The workflow editor is a chunk of its own, loaded when first opened: the first load has none of it.
    const editorText = 'the branches join here';
    expect(chunks.filter((name) => assets.get(name)!.body.toString().includes(editorText))).toHaveLength(1);
    expect(assets.get(script)!.body.toString()).not.toContain(editorText);
    const missing = await t.app.inject({ method: 'GET', url: '/console/assets/console.NOPE.js' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 404 });
  });

  test('Try it without a worker polling answers 503 at once, saying so, instead of waiting', async () => {
    const account = await createTestAccount(db);
    const started = Date.now();
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/worker_templates/try',
      payload: { script: 'function main() { return 1; }' },
      headers: { authorization: account.bearer },
    });
    expect(res.statusCode).toBe(503);
    expect(res.json().message).toMatch(/^Try it needs a worker process: none polls task queue /);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  test('the console code never parses HTML (text nodes only)', () => {
    // pages/ and parts/ included: every file the bundle is built from.
    const files = readdirSync(UI, { recursive: true, encoding: 'utf8' }).filter((name) =>
      name.endsWith('.ts'),
    );
    expect(files).toEqual(expect.arrayContaining(['main.ts', path.join('pages', 'runs.ts')]));
    for (const file of files) {
      const source = readFileSync(path.join(UI, file), 'utf8');
      expect([
        file,
        /\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment)\b/.test(
          source,
        ),
      ]).toEqual([file, false]);
    }
  });

  test('assets go out gzipped at zlib’s highest level, made once, and plain to a client that refuses gzip', async () => {
    const { html, assets } = await consoleBundle();
    const script = /src="\/console\/assets\/(console\.[A-Z0-9]+\.js)"/.exec(html)![1]!;
    const body = assets.get(script)!.body;
    const get = (acceptEncoding?: string) =>
      t.app.inject({
        method: 'GET',
        url: `/console/assets/${script}`,
        headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding },
      });
    for (const accepted of ['gzip', 'gzip, deflate, br', '*', 'br;q=1, gzip;q=0.5']) {
      const res = await get(accepted);
      expect(res.headers['content-encoding']).toBe('gzip');
      expect(res.headers.vary).toMatch(/accept-encoding/i);
      expect(res.rawPayload.equals(gzipSync(body, { level: 9 }))).toBe(true);
    }
    for (const refused of [undefined, 'identity', 'br', 'gzip;q=0', '*, gzip;q=0']) {
      const res = await get(refused);
      expect([refused, res.headers['content-encoding']]).toEqual([refused, undefined]);
      expect(res.rawPayload.equals(body)).toBe(true);
    }
  });

  test.each([
    ['gzip', true],
    ['GZIP;q=0.1', true],
    ['x-gzip', true],
    ['deflate, *;q=0.2', true],
    ['gzip;q=0', false],
    ['gzip;q=0.0, *', false],
    ['*;q=0', false],
    ['br, deflate', false],
    ['', false],
  ])('Accept-Encoding %j accepts gzip: %s', (header, accepted) => {
    expect(acceptsGzip(header)).toBe(accepted);
  });
});
