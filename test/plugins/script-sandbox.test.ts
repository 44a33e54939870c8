// Real isolates throughout: every case runs a script through runScript, and each hostile case is
// followed by a normal run to show the host process is still healthy.
import ivm from 'isolated-vm';
import path from 'node:path';
import {
  DEFAULT_SANDBOX_LIMITS,
  runScript,
  type HostFunction,
  type SandboxErrorKind,
  type ScriptOutcome,
  type ScriptRun,
} from '../../plugins/sandbox/script-sandbox';

type Success = Extract<ScriptOutcome, { ok: true }>;
type Failure = Extract<ScriptOutcome, { ok: false }>;

/** Small limits keep the hostile cases fast. */
const QUICK = { timeoutMs: 2_000, memoryLimitMb: 32 };

function run(source: string, options: Partial<ScriptRun> = {}): Promise<ScriptOutcome> {
  return runScript({ args: null, ...options, source, limits: { ...QUICK, ...options.limits } });
}

function expectSuccess(outcome: ScriptOutcome): Success {
  if (!outcome.ok) throw new Error(`expected success, got ${outcome.error.kind}: ${outcome.error.message}`);
  return outcome;
}

function expectFailure(outcome: ScriptOutcome, kind: SandboxErrorKind, message?: string | RegExp): Failure {
  if (outcome.ok) throw new Error(`expected a ${kind} failure, got result ${JSON.stringify(outcome.result)}`);
  expect(outcome.error.kind).toBe(kind);
  if (typeof message === 'string') expect(outcome.error.message).toBe(message);
  if (message instanceof RegExp) expect(outcome.error.message).toMatch(message);
  return outcome;
}

async function expectHealthy(): Promise<void> {
  const outcome = await runScript({
    source: 'function main(args) { return { sum: args.x + args.y } }',
    args: { x: 1, y: 2 },
  });
  expect(expectSuccess(outcome).result).toEqual({ sum: 3 });
}

const echo: HostFunction = async (...args) => args;

describe('runScript: results and arguments', () => {
  test('returns the result of a synchronous main', async () => {
    const outcome = expectSuccess(
      await run('function main(args) { return { doubled: args.n * 2 } }', { args: { n: 21 } }),
    );
    expect(outcome.result).toEqual({ doubled: 42 });
    expect(outcome.logs).toEqual([]);
  });

  test('awaits an async main', async () => {
    const source = 'async function main(args) { await null; return [args.a, "done"] }';
    expect(expectSuccess(await run(source, { args: { a: 1 } })).result).toEqual([1, 'done']);
  });

  test('finds an entry point declared with const and a custom entry point name', async () => {
    expect(expectSuccess(await run('const main = async () => "arrow"')).result).toBe('arrow');
    const source = 'function main() { return "main" }\nfunction report(args) { return args.id }';
    expect(expectSuccess(await run(source, { entryPoint: 'report', args: { id: 'x7' } })).result).toBe('x7');
  });

  test('undefined becomes a null result and plain values pass through', async () => {
    expect(expectSuccess(await run('function main() {}')).result).toBeNull();
    expect(expectSuccess(await run('function main() { return 1.5 }')).result).toBe(1.5);
    expect(expectSuccess(await run('function main() { return "text" }')).result).toBe('text');
  });

  test('args go in as a JSON copy: mutating them in the script leaves the host object alone', async () => {
    const args = { list: [1, 2], nested: { a: 1 }, when: new Date('2024-01-02T03:04:05.000Z'), fn: () => 1 };
    const source = `function main(args) {
      args.list.push(3);
      args.nested.a = 99;
      args.added = true;
      return { args, whenType: typeof args.when, hasFn: 'fn' in args, plain: Object.getPrototypeOf(args) === Object.prototype };
    }`;
    const outcome = expectSuccess(await run(source, { args }));
    expect(outcome.result).toEqual({
      args: { list: [1, 2, 3], nested: { a: 99 }, when: '2024-01-02T03:04:05.000Z', added: true },
      whenType: 'string',
      hasFn: false,
      plain: true,
    });
    expect(args.list).toEqual([1, 2]);
    expect(args.nested).toEqual({ a: 1 });
    expect('added' in args).toBe(false);
  });

  test('each run gets a fresh isolate: globals and prototype changes do not carry over', async () => {
    await run('globalThis.leaked = 1; Object.prototype.polluted = true; function main() { return 1 }');
    const outcome = expectSuccess(
      await run('function main() { return [typeof leaked, ({}).polluted === undefined] }'),
    );
    expect(outcome.result).toEqual(['undefined', true]);
  });

  test('the script sees the standard built-ins plus console and sdk, nothing else', async () => {
    const bare = new ivm.Isolate({ memoryLimit: 8 });
    let builtIns: string[];
    try {
      builtIns = JSON.parse(
        bare.createContextSync().evalSync('JSON.stringify(Object.getOwnPropertyNames(globalThis))') as string,
      ) as string[];
    } finally {
      bare.dispose();
    }
    const source = `function main() {
      return { names: Object.getOwnPropertyNames(globalThis), types: [typeof process, typeof require, typeof setTimeout, typeof fetch, typeof module] };
    }`;
    const result = expectSuccess(await run(source)).result as { names: string[]; types: string[] };
    expect([...result.names].sort()).toEqual([...new Set([...builtIns, 'console', 'sdk', 'main'])].sort());
    expect(result.types).toEqual(['undefined', 'undefined', 'undefined', 'undefined', 'undefined']);
  });

  test('DEFAULT_SANDBOX_LIMITS are the documented defaults', () => {
    expect(DEFAULT_SANDBOX_LIMITS).toEqual({
      memoryLimitMb: 128,
      timeoutMs: 30_000,
      maxInputBytes: 16 * 1024 * 1024,
      maxOutputBytes: 16 * 1024 * 1024,
      maxLogBytes: 1024 * 1024,
    });
  });

  test('rejects limits isolated-vm cannot honour', async () => {
    await expect(run('function main() {}', { limits: { memoryLimitMb: 4 } })).rejects.toThrow(
      'Sandbox limit memoryLimitMb must be at least 8',
    );
    await expect(run('function main() {}', { limits: { timeoutMs: 0 } })).rejects.toThrow(
      'Sandbox limit timeoutMs must be a positive number, got 0',
    );
  });
});

describe('runScript: script errors', () => {
  test('a missing entry point', async () => {
    expectFailure(
      await run('function mian() {}'),
      'script',
      'Entry point main is not defined: the script must define function main(args)',
    );
    expectFailure(
      await run('const main = 5'),
      'script',
      'Entry point main is a number, not a function: the script must define function main(args)',
    );
  });

  test('an entry point name that is not an identifier is refused before anything runs', async () => {
    expectFailure(
      await run('function main() {}', { entryPoint: 'main;globalThis.x=1' }),
      'script',
      'Entry point "main;globalThis.x=1" is not a valid function name',
    );
  });

  test('a syntax error names the line and column', async () => {
    expectFailure(
      await run('function main(args) {\n  return args +;\n}'),
      'script',
      "SyntaxError: Unexpected token ';' (worker.js:2:16)",
    );
  });

  test('a thrown error gives its message and where it was raised', async () => {
    const source =
      'function main(args) {\n  if (!args) {\n    throw new TypeError("args are required");\n  }\n}';
    expectFailure(await run(source), 'script', 'args are required (worker.js:3:11)');
  });

  test('an error thrown by top-level code', async () => {
    expectFailure(await run('\n\nthrow new Error("top level")'), 'script', 'top level (worker.js:3:7)');
  });

  test('thrown values that are not errors', async () => {
    expectFailure(await run('function main() { throw { code: 7 } }'), 'script', '{"code":7}');
    expectFailure(await run('async function main() { throw "plain text" }'), 'script', 'plain text');
    expectFailure(await run('throw "at top level"'), 'script', 'at top level');
  });

  test('a rejection nobody handles fails the run, as it would end a Node process', async () => {
    const source = 'function main() {\n  Promise.reject(new Error("forgotten"));\n  return 1;\n}';
    expectFailure(await run(source), 'script', 'forgotten (worker.js:2:18)');
  });

  test('an error whose message getter throws still gives a script error', async () => {
    const source = `function main() {
      throw Object.defineProperty(new Error('x'), 'message', { get() { throw new Error('nested') } });
    }`;
    expectFailure(await run(source), 'script', 'Error (worker.js:2:35)');
    await expectHealthy();
  });
});

describe('runScript: cancellation', () => {
  test('aborting the signal stops a busy script and a waiting one at once; the host stays healthy', async () => {
    for (const source of [
      'function main() { for (;;) {} }',
      'async function main() { await sdk.forever(); }',
    ]) {
      const controller = new AbortController();
      const started = performance.now();
      setTimeout(() => controller.abort(), 100);
      const outcome = await run(source, {
        signal: controller.signal,
        bridge: { forever: () => new Promise(() => {}) },
      });
      expectFailure(outcome, 'cancelled', 'The script was stopped: its caller cancelled it.');
      // Well before the 2 s time limit.
      expect(performance.now() - started).toBeLessThan(1_500);
    }
    const aborted = new AbortController();
    aborted.abort();
    expectFailure(await run('function main() { return 1; }', { signal: aborted.signal }), 'cancelled');
    await expectHealthy();
  });
});

describe('runScript: console capture', () => {
  test('captures each level, formats values, and stamps the host time', async () => {
    const before = Date.now();
    const source = `function main() {
      console.log('log', 1, true, null, undefined);
      console.info('info', { a: [1, 'b'] });
      console.debug('debug');
      console.warn(new TypeError('careful'));
      console.error('error', () => 1, Symbol('s'), 10n);
    }`;
    const outcome = expectSuccess(await run(source));
    const after = Date.now();
    expect(outcome.logs.map(({ level, message }) => ({ level, message }))).toEqual([
      { level: 'info', message: 'log 1 true null undefined' },
      { level: 'info', message: 'info {"a":[1,"b"]}' },
      { level: 'debug', message: 'debug' },
      { level: 'warn', message: 'TypeError: careful' },
      { level: 'error', message: 'error [Function] Symbol(s) 10' },
    ]);
    for (const line of outcome.logs) {
      expect(line.at).toBeGreaterThanOrEqual(before);
      expect(line.at).toBeLessThanOrEqual(after);
    }
  });

  test('logs stop at maxLogBytes with a marker line, cutting the last line between characters', async () => {
    const source = `function main() {
      console.log('0123456789');
      console.log('abcdefghij');
      console.log('never');
      return 'finished';
    }`;
    const outcome = expectSuccess(await run(source, { limits: { maxLogBytes: 15 } }));
    expect(outcome.logs.map((line) => line.message)).toEqual([
      '0123456789',
      'abcde',
      '[log truncated: over 15 bytes]',
    ]);
    expect(outcome.result).toBe('finished');

    const multiByte = expectSuccess(
      await run('function main() { console.log("ééé") }', { limits: { maxLogBytes: 5 } }),
    );
    expect(multiByte.logs.map((line) => line.message)).toEqual(['éé', '[log truncated: over 5 bytes]']);
  });

  test('logs from a run that fails are kept', async () => {
    const outcome = expectFailure(
      await run('function main() { console.warn("about to fail"); null.x }'),
      'script',
    );
    expect(outcome.logs.map((line) => line.message)).toEqual(['about to fail']);
  });
});

describe('runScript: sdk bridge', () => {
  test('an sdk call resolves with the host function result, and arguments arrive as JSON copies', async () => {
    const received: unknown[][] = [];
    const bridge = {
      add: async (a: unknown, b: unknown) => Number(a) + Number(b),
      record: async (...args: unknown[]) => {
        received.push(args);
        return { stored: true };
      },
    };
    const source = `async function main() {
      const sum = await sdk.add(2, 3);
      const stored = await sdk.record({ when: new Date(0), list: [1, undefined] }, 'x');
      return { sum, stored, names: Object.keys(sdk), frozen: Object.isFrozen(sdk) };
    }`;
    const outcome = expectSuccess(await run(source, { bridge }));
    expect(outcome.result).toEqual({
      sum: 5,
      stored: { stored: true },
      names: ['add', 'record'],
      frozen: true,
    });
    expect(received).toEqual([[{ when: '1970-01-01T00:00:00.000Z', list: [1, null] }, 'x']]);
  });

  test('sdk calls run concurrently', async () => {
    let running = 0;
    let mostAtOnce = 0;
    const slowEcho: HostFunction = async (value) => {
      running += 1;
      mostAtOnce = Math.max(mostAtOnce, running);
      await new Promise((resolve) => setTimeout(resolve, 50));
      running -= 1;
      return value;
    };
    const source =
      'async function main() { return Promise.all([sdk.slowEcho(1), sdk.slowEcho(2), sdk.slowEcho(3)]) }';
    const outcome = expectSuccess(await run(source, { bridge: { slowEcho } }));
    expect(outcome.result).toEqual([1, 2, 3]);
    expect(mostAtOnce).toBe(3);
  });

  test('a host error rejects inside the script with only its message', async () => {
    const bridge = {
      fetchPrices: async () => {
        throw new Error('quota exceeded');
      },
    };
    const source = `async function main() {
      try {
        await sdk.fetchPrices('AAPL');
      } catch (error) {
        return { message: error.message, isError: error instanceof Error, stack: error.stack };
      }
    }`;
    const result = expectSuccess(await run(source, { bridge })).result as {
      message: string;
      isError: boolean;
      stack: string;
    };
    expect(result.message).toBe('quota exceeded');
    expect(result.isError).toBe(true);
    expect(result.stack).not.toContain(path.basename(__filename));
    expect(result.stack).not.toContain(__dirname);
    expect(result.stack).not.toContain('host-bridge');
  });

  test('an uncaught host error fails the run as a script error with that message', async () => {
    const bridge = {
      fetchPrices: async () => {
        throw new Error('quota exceeded');
      },
    };
    const source = 'async function main() {\n  await sdk.fetchPrices();\n}';
    expectFailure(await run(source, { bridge }), 'script', 'quota exceeded (worker.js:2:3)');
  });

  test('a host result that is not JSON fails the run with a bridge error, even when the script catches it', async () => {
    const bridge = { broken: async () => 10n };
    const source = 'async function main() { try { await sdk.broken() } catch {} return "carried on" }';
    expectFailure(
      await run(source, { bridge }),
      'bridge',
      'sdk.broken returned a value that is not JSON-serialisable: Do not know how to serialize a BigInt',
    );
    await expectHealthy();
  });

  test('a host result above maxInputBytes fails the run with a bridge error', async () => {
    const bridge = { big: async () => 'x'.repeat(200) };
    expectFailure(
      await run('async function main() { return sdk.big() }', { bridge, limits: { maxInputBytes: 100 } }),
      'bridge',
      'sdk.big returned 202 bytes of JSON, over the limit of 100 bytes',
    );
  });

  test('sdk arguments that are not JSON reject inside the script', async () => {
    const source = 'async function main() {\n  await sdk.echo(1n);\n}';
    expectFailure(
      await run(source, { bridge: { echo } }),
      'script',
      /^Do not know how to serialize a BigInt/,
    );
  });

  test('a script without a bridge sees an empty sdk', async () => {
    expect(expectSuccess(await run('function main() { return Object.keys(sdk) }')).result).toEqual([]);
  });
});

describe('runScript: limits', () => {
  test('the timeout stops a busy loop within timeout + 1 s', async () => {
    const started = performance.now();
    const outcome = expectFailure(
      await run('function main() { while (true) {} }', { limits: { timeoutMs: 500 } }),
      'timeout',
      'Script timed out after 500 ms',
    );
    const elapsed = performance.now() - started;
    expect(outcome.wallTimeMs).toBeGreaterThanOrEqual(490);
    expect(elapsed).toBeLessThan(1_500);
    await expectHealthy();
  });

  test('the timeout covers time spent waiting on the host', async () => {
    const never: HostFunction = () => new Promise(() => {});
    const started = performance.now();
    const outcome = expectFailure(
      await run('async function main() { return sdk.never() }', {
        bridge: { never },
        limits: { timeoutMs: 300 },
      }),
      'timeout',
      'Script timed out after 300 ms',
    );
    expect(performance.now() - started).toBeLessThan(1_300);
    expect(outcome.cpuTimeMs).toBeLessThan(outcome.wallTimeMs);
    await expectHealthy();
  });

  test('cpuTimeMs counts a busy script and stays within wall time', async () => {
    const source =
      'function main() { const end = Date.now() + 200; let n = 0; while (Date.now() < end) n++; return n > 0 }';
    const outcome = expectSuccess(await run(source));
    expect(outcome.cpuTimeMs).toBeGreaterThan(50);
    expect(outcome.cpuTimeMs).toBeLessThanOrEqual(outcome.wallTimeMs + 5);
  });

  test('cpuTimeMs stays small while the script waits', async () => {
    const wait: HostFunction = () => new Promise((resolve) => setTimeout(resolve, 200));
    const outcome = expectSuccess(
      await run('async function main() { await sdk.wait() }', { bridge: { wait } }),
    );
    expect(outcome.wallTimeMs).toBeGreaterThanOrEqual(200);
    expect(outcome.cpuTimeMs).toBeGreaterThan(0);
    expect(outcome.cpuTimeMs).toBeLessThan(100);
  });

  test('args above maxInputBytes are refused', async () => {
    expectFailure(
      await run('function main() {}', { args: 'x'.repeat(200), limits: { maxInputBytes: 100 } }),
      'invalid_input',
      'Arguments are 202 bytes of JSON, over the limit of 100 bytes',
    );
  });

  test('args that are not JSON-serialisable are refused', async () => {
    expectFailure(
      await run('function main() {}', { args: { amount: 10n } }),
      'invalid_input',
      'Arguments are not JSON-serialisable: Do not know how to serialize a BigInt',
    );
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expectFailure(
      await run('function main() {}', { args: cyclic }),
      'invalid_input',
      /^Arguments are not JSON-serialisable: Converting circular structure/,
    );
  });

  test('a result above maxOutputBytes is refused, counting UTF-8 bytes', async () => {
    const limits = { maxOutputBytes: 100 };
    expect(
      expectSuccess(await run('function main() { return "x".repeat(98) }', { limits })).result,
    ).toHaveLength(98);
    expectFailure(
      await run('function main() { return "x".repeat(200) }', { limits }),
      'invalid_output',
      'The result JSON exceeds the limit of 100 bytes',
    );
    // 62 UTF-16 units but 122 bytes: only the host's byte count catches it.
    expectFailure(
      await run('function main() { return "é".repeat(60) }', { limits }),
      'invalid_output',
      'The result JSON exceeds the limit of 100 bytes',
    );
  });
});

describe('runScript: hostile scripts end in an error and leave the host healthy', () => {
  const hostile: [name: string, source: string, kind: SandboxErrorKind, message: string | RegExp][] = [
    ['an infinite loop', 'function main() { while (true) {} }', 'timeout', 'Script timed out after 300 ms'],
    ['an infinite loop at top level', 'for (;;) {}', 'timeout', 'Script timed out after 300 ms'],
    [
      'an infinite async loop',
      'async function main() { for (;;) await null }',
      'timeout',
      'Script timed out after 300 ms',
    ],
    [
      'an infinite loop after an sdk call',
      'async function main() { await sdk.echo(1); while (true) {} }',
      'timeout',
      'Script timed out after 300 ms',
    ],
    [
      'a log flood',
      'function main() { for (;;) console.log("flood") }',
      'timeout',
      'Script timed out after 300 ms',
    ],
    [
      'a memory bomb of arrays',
      'function main() { const keep = []; for (;;) keep.push(new Array(1e5).fill(1.5)) }',
      'memory',
      'Script exceeded the memory limit of 32 MB',
    ],
    [
      'a memory bomb of strings',
      // repeat() builds a cheap rope; toUpperCase() flattens it so each string really takes 1 MB.
      'function main() { const keep = []; for (let i = 0; ; i++) keep.push(("x".repeat(1e6) + i).toUpperCase()) }',
      'memory',
      'Script exceeded the memory limit of 32 MB',
    ],
    [
      'a memory bomb of typed arrays',
      'function main() { const keep = []; for (;;) keep.push(new Float64Array(1e6)) }',
      'memory',
      'Script exceeded the memory limit of 32 MB',
    ],
    [
      'a memory bomb at top level',
      'const keep = []; for (;;) keep.push(new Array(1e5).fill(1.5))',
      'memory',
      'Script exceeded the memory limit of 32 MB',
    ],
    [
      'deep recursion',
      'function main() {\n  function down(n) { return down(n + 1) + 1 }\n  return down(0);\n}',
      'script',
      'Maximum call stack size exceeded (worker.js:2:22)',
    ],
    [
      'Object.prototype.toJSON that throws',
      'function main() { Object.prototype.toJSON = function () { throw new Error("no JSON for you") }; return { a: 1 } }',
      'invalid_output',
      /^The result is not JSON-serialisable: no JSON for you \(worker\.js:1:\d+\)$/,
    ],
    [
      'a result with a getter that throws',
      'function main() { return { get total() { throw new Error("boom") } } }',
      'invalid_output',
      /^The result is not JSON-serialisable: boom \(worker\.js:1:\d+\)$/,
    ],
    [
      'a proxy result whose traps throw',
      'function main() { return new Proxy({}, { ownKeys() { throw new Error("trap") } }) }',
      'invalid_output',
      /^The result is not JSON-serialisable: trap \(worker\.js:1:\d+\)$/,
    ],
    [
      'a cyclic result',
      'function main() { const node = {}; node.self = node; return node }',
      'invalid_output',
      /^The result is not JSON-serialisable: Converting circular structure to JSON/,
    ],
    [
      'a function result',
      'function main() { return () => 1 }',
      'invalid_output',
      'The result is a function, which is not JSON-serialisable',
    ],
    [
      'a BigInt result',
      'function main() { return 10n }',
      'invalid_output',
      'The result is not JSON-serialisable: Do not know how to serialize a BigInt',
    ],
    [
      'reaching process',
      'function main() { return process.env }',
      'script',
      /^process is not defined \(worker\.js:1:\d+\)$/,
    ],
    [
      'calling require',
      'function main() { return require("fs") }',
      'script',
      /^require is not defined \(worker\.js:1:\d+\)$/,
    ],
    [
      'the Function constructor trick',
      'function main() { return globalThis.constructor.constructor("return process")() }',
      'script',
      /^process is not defined \(worker\.js:1:\d+\)$/,
    ],
    [
      'a dynamic import',
      'async function main() { return await import("fs") }',
      'script',
      /^Not supported \(worker\.js:1:\d+\)$/,
    ],
    [
      'the sdk function constructor trick',
      'function main() { return sdk.echo.constructor("return process")() }',
      'script',
      /^process is not defined \(worker\.js:1:\d+\)$/,
    ],
  ];

  test.each(hostile)('%s', async (_name, source, kind, message) => {
    // Memory bombs get time to reach the memory limit even on a loaded machine; loops time out fast.
    const timeoutMs = kind === 'memory' ? 20_000 : 300;
    expectFailure(await run(source, { bridge: { echo }, limits: { timeoutMs } }), kind, message);
    await expectHealthy();
  });

  test('a log flood keeps the lines up to the budget and a marker', async () => {
    const outcome = await run('function main() { for (;;) console.log("flood") }', {
      limits: { timeoutMs: 300, maxLogBytes: 1_000 },
    });
    expectFailure(outcome, 'timeout');
    expect(outcome.logs).toHaveLength(201);
    expect(outcome.logs.slice(0, 200).every((line) => line.message === 'flood')).toBe(true);
    expect(outcome.logs[200]?.message).toBe('[log truncated: over 1000 bytes]');
  });

  test('sdk functions lead only to the isolate’s own Function', async () => {
    const source = `function main() {
      const F = sdk.echo.constructor;
      return [F === Function, F('return typeof process + "," + typeof require')(), Object.getOwnPropertyNames(sdk.echo).sort()];
    }`;
    const outcome = expectSuccess(await run(source, { bridge: { echo } }));
    expect(outcome.result).toEqual([true, 'undefined,undefined', ['length', 'name']]);
  });

  test('stack trace hooks see no this or function in the sandbox’s own frames', async () => {
    const source = `async function main() {
      const frames = [];
      Error.prepareStackTrace = (error, callSites) => {
        for (const site of callSites) {
          frames.push({ file: site.getFileName(), self: typeof site.getThis(), fn: typeof site.getFunction() });
        }
        return 'hooked';
      };
      try { await sdk.fail() } catch (error) { error.stack }
      return frames.filter((frame) => frame.file === 'sandbox-bootstrap.js');
    }`;
    const fail: HostFunction = async () => {
      throw new Error('no');
    };
    const frames = expectSuccess(await run(source, { bridge: { fail } })).result as {
      self: string;
      fn: string;
    }[];
    expect(frames.length).toBeGreaterThan(0);
    for (const frame of frames) expect(frame).toMatchObject({ self: 'undefined', fn: 'undefined' });
  });

  test('polluted prototypes and globals do not change how values cross the bridge', async () => {
    const received: unknown[] = [];
    const record: HostFunction = async (value) => {
      received.push(value);
      return { echoed: value };
    };
    const source = `async function main() {
      Object.prototype.reference = true;
      Object.prototype.result = { reference: true };
      Object.prototype.arguments = { reference: true };
      Object.prototype.copy = false;
      Array.prototype.join = () => { throw new Error('join') };
      Array.prototype.map = () => { throw new Error('map') };
      Function.prototype.call = () => { throw new Error('call') };
      Function.prototype.apply = () => { throw new Error('apply') };
      Function.prototype.bind = () => { throw new Error('bind') };
      JSON.stringify = () => '"forged"';
      JSON.parse = () => 'forged';
      String.prototype.slice = () => 'forged';
      RegExp.prototype.exec = () => { throw new Error('exec') };
      globalThis.eval = () => 'forged';
      String = function () { return 'forged' };
      Error = function () {};
      console.log('still logging', { n: 1 });
      const reply = await sdk.record({ list: [1, 2] });
      return { reply, type: typeof reply };
    }`;
    const outcome = expectSuccess(await run(source, { bridge: { record } }));
    expect(outcome.result).toEqual({ reply: { echoed: { list: [1, 2] } }, type: 'object' });
    expect(outcome.logs.map((line) => line.message)).toEqual(['still logging {"n":1}']);
    expect(received).toEqual([{ list: [1, 2] }]);
    expect(received[0]).not.toBeInstanceOf(ivm.Reference);
    expect(JSON.stringify({ a: 1 })).toBe('{"a":1}');
    await expectHealthy();
  });

  test('a script that replaces Promise.prototype.then breaks only its own sdk calls', async () => {
    const source = `async function main() {
      Promise.prototype.then = function () { throw new Error('then replaced') };
      return await sdk.echo(1);
    }`;
    expectFailure(await run(source, { bridge: { echo } }), 'script', /then replaced/);
    await expectHealthy();
  });

  test('many runs at once, hostile and normal, each get their own outcome', async () => {
    const outcomes = await Promise.all([
      run('function main() { while (true) {} }', { limits: { timeoutMs: 300 } }),
      run('function main() { const keep = []; for (;;) keep.push(new Array(1e5).fill(1.5)) }'),
      ...Array.from({ length: 6 }, (_, i) =>
        run('async function main(args) { return args.i * 2 }', { args: { i } }),
      ),
    ]);
    expectFailure(outcomes[0]!, 'timeout');
    expectFailure(outcomes[1]!, 'memory');
    expect(outcomes.slice(2).map((outcome) => expectSuccess(outcome).result)).toEqual([0, 2, 4, 6, 8, 10]);
  });
});
