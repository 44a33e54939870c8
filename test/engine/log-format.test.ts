import { PassThrough } from 'node:stream';
import { logFormatOf, prettyLine, prettyStream, processLog } from '../../engine/platform/log-format';
import { isBundleListing } from '../../workers/temporal-runtime';

/** The console for people and the JSON lines for machines (issue 32). */
describe('log format', () => {
  test('LOG_FORMAT wins; unset, a terminal gets pretty and anything else json', () => {
    expect(logFormatOf({ logFormat: 'json' }, { isTTY: true })).toBe('json');
    expect(logFormatOf({ logFormat: 'pretty' }, { isTTY: false })).toBe('pretty');
    expect(logFormatOf({ logFormat: null }, { isTTY: true })).toBe('pretty');
    expect(logFormatOf({ logFormat: null }, {})).toBe('json');
  });

  test('a request is one short line: method, route, status, time; warnings and errors are marked', () => {
    const time = Date.UTC(2026, 10, 28, 9, 15, 2, 345);
    expect(
      prettyLine({
        level: 30,
        time,
        component: 'api',
        msg: 'request',
        request: { method: 'GET', route: '/v2/workspaces', status: 200, ms: 3.14 },
      }),
    ).toBe('09:15:02.345 INFO  api    GET /v2/workspaces 200 3.1 ms');
    expect(prettyLine({ level: 40, time, component: 'api', msg: 'api: rate-limit pruning failed' })).toBe(
      '09:15:02.345 WARN  api    rate-limit pruning failed',
    );
    const error = prettyLine(
      {
        level: 50,
        time,
        component: 'worker',
        msg: 'run dispatch failed',
        err: { message: 'boom', stack: 'Error: boom\n    at dispatch (run.ts:1:1)' },
      },
      true,
    );
    expect(error).toContain('\u001b[31mERROR\u001b[0m');
    expect(error).toContain('run dispatch failed — boom (at dispatch (run.ts:1:1))');
  });

  test('the pretty stream turns pino lines into readable ones and drops Fastify’s own two request lines', async () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const stream = prettyStream(out);
    const time = Date.UTC(2026, 10, 28, 9, 0, 0, 0);
    stream.write(`${JSON.stringify({ level: 30, time, msg: 'incoming request', req: { url: '/' } })}\n`);
    stream.write(
      `${JSON.stringify({ level: 30, time, component: 'api', msg: 'Server listening' })}\n{"level":30,`,
    );
    stream.write(`"time":${time},"msg":"request completed"}\nnot json\n`);
    await new Promise((resolve) => setImmediate(resolve));
    expect(text.split('\n')).toEqual(['09:00:00.000 INFO  api    Server listening', 'not json', '']);
  });

  test('a process log writes the process’s format', () => {
    const lines: string[] = [];
    const sink = {
      write: (line: string) => lines.push(line),
      isTTY: false,
    } as unknown as NodeJS.WritableStream;
    processLog('json', 'worker', sink).warn('slow', { ms: 5 });
    processLog('pretty', 'worker', sink).info('worker: polling task queue q');
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, component: 'worker', msg: 'slow', ms: 5 });
    expect(lines[1]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}worker polling task queue q\n$/);
  });

  test('webpack’s listing of the workflow bundle is recognised (it goes to debug), other lines are not', () => {
    expect(
      isBundleListing(
        'asset workflow-bundle-3f2.js 1.2 MiB [emitted]\nmodules by path ./node_modules/ 900 KiB\nwebpack 5.98.0 compiled successfully in 812 ms',
      ),
    ).toBe(true);
    expect(isBundleListing('Workflow bundle created')).toBe(false);
    expect(isBundleListing('Worker state changed')).toBe(false);
  });
});
