// Real bubblewrap sandboxes throughout (Debian's /usr/bin/bwrap and /usr/bin/python3.11): every case
// runs a Python script through runPythonScript, and each hostile case is followed by a normal run to
// show the host process is still healthy.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import type { SandboxErrorKind, ScriptOutcome } from '../../plugins/sandbox/script-sandbox';
import { PYTHON_FIXED_LIMITS, runPythonScript, type PythonRun } from '../../plugins/sandbox/python-sandbox';

type Success = Extract<ScriptOutcome, { ok: true }>;
type Failure = Extract<ScriptOutcome, { ok: false }>;

/** Small limits keep the hostile cases fast. */
const QUICK = { timeoutMs: 4_000, memoryLimitMb: 64, maxOutputBytes: 1024 * 1024, maxLogBytes: 64 * 1024 };

function run(source: string, options: Partial<PythonRun> = {}): Promise<ScriptOutcome> {
  return runPythonScript({ args: null, ...options, source, limits: { ...QUICK, ...options.limits } });
}

function expectSuccess(outcome: ScriptOutcome): Success {
  if (!outcome.ok) throw new Error(`expected success, got ${outcome.error.kind}: ${outcome.error.message}`);
  return outcome;
}

function expectFailure(outcome: ScriptOutcome, kind: SandboxErrorKind, message?: RegExp): Failure {
  if (outcome.ok) throw new Error(`expected a ${kind} failure, got result ${JSON.stringify(outcome.result)}`);
  expect(outcome.error).toEqual({ kind, message: expect.stringMatching(message ?? /./) });
  return outcome;
}

async function expectHealthy(): Promise<void> {
  const outcome = await run('def main(args):\n    return {"sum": args["x"] + args["y"]}\n', {
    args: { x: 1, y: 2 },
  });
  expect(expectSuccess(outcome).result).toEqual({ sum: 3 });
}

// A secret the host process holds: no sandboxed script may see it.
const SENTINEL = `pas-sentinel-${process.pid}-${Date.now()}`;
beforeAll(() => {
  process.env.PAS_PYTHON_SANDBOX_SENTINEL = SENTINEL;
});
afterAll(() => {
  delete process.env.PAS_PYTHON_SANDBOX_SENTINEL;
});

describe('runPythonScript: results, arguments, errors, logs', () => {
  test('the entry point gets the arguments object and its JSON return value is the result', async () => {
    const outcome = await run(
      'import math\n\ndef main(args):\n    return {"n": len(args["xs"]), "root": math.sqrt(args["xs"][-1]), "none": None}\n',
      { args: { xs: [1, 4, 9] } },
    );
    expect(expectSuccess(outcome).result).toEqual({ n: 3, root: 3, none: null });
  });

  test('script_entry_point picks another function; async functions are awaited', async () => {
    const source = 'async def compute(args):\n    return args * 2\n';
    expect(expectSuccess(await run(source, { entryPoint: 'compute', args: 21 })).result).toBe(42);
    expectFailure(await run(source), 'script', /defines no function named main/);
  });

  test('NaN and infinities become null, as in JavaScript; tuples and sets become lists', async () => {
    const outcome = await run('def main(args):\n    return [float("nan"), float("inf"), (1, 2), {3}]\n');
    expect(expectSuccess(outcome).result).toEqual([null, null, [1, 2], [3]]);
  });

  test('an exception is the error, with its type, message and line in worker.py', async () => {
    const outcome = await run('def main(args):\n    x = 1\n    raise ValueError("no data for " + args)\n', {
      args: 'SPY',
    });
    expectFailure(outcome, 'script', /^ValueError: no data for SPY \(worker\.py:3\)$/);
  });

  test('a syntax error names its line', async () => {
    expectFailure(
      await run('def main(args):\n    return (\n'),
      'script',
      /^SyntaxError: .*\(worker\.py:\d\)/,
    );
  });

  test('a result that is not JSON fails as invalid_output', async () => {
    expectFailure(
      await run('def main(args):\n    return object()\n'),
      'invalid_output',
      /not JSON-serialisable/,
    );
  });

  test('print goes to the log as info and stderr as error, line by line', async () => {
    const outcome = await run(
      'import sys, logging\n\ndef main(args):\n    print("one")\n    print("two")\n    print("bad", file=sys.stderr)\n    logging.warning("careful")\n    return 1\n',
    );
    expect(expectSuccess(outcome).logs.map(({ level, message }) => [level, message])).toEqual([
      ['info', 'one'],
      ['info', 'two'],
      ['error', 'bad'],
      ['error', 'WARNING:root:careful'],
    ]);
    expect(outcome.cpuTimeMs).toBeGreaterThan(0);
  });

  test('the sdk object calls the host bridge over the channel; host errors arrive as SdkError', async () => {
    const calls: unknown[][] = [];
    const outcome = await run(
      [
        'import urllib.request, json',
        'from pas_sdk import SdkError',
        'def main(args):',
        '    out = {"echo": sdk.echo(1, {"a": [2]}), "snake": sdk.echo_twice("x")}',
        '    try:',
        '        sdk.fail()',
        '    except SdkError as error:',
        '        out["error"] = [str(error), error.status, error.code]',
        '    try:',
        '        sdk.nowhere()',
        '    except SdkError as error:',
        '        out["missing"] = str(error)',
        // Any HTTP client reaches the channel on the loopback.
        '    request = urllib.request.Request("http://127.0.0.1:8765/v1/worker_sdk/echo", data=b"[7]", method="POST")',
        '    out["urllib"] = json.load(urllib.request.urlopen(request))',
        '    return out',
      ].join('\n'),
      {
        bridge: {
          echo: async (...args) => (calls.push(args), args),
          echoTwice: async (value) => [value, value],
          fail: async () => {
            throw new Error('portfolio not found');
          },
        },
      },
    );
    expect(expectSuccess(outcome).result).toEqual({
      echo: [1, { a: [2] }],
      snake: ['x', 'x'],
      error: ['portfolio not found', 400, 'sdk_error'],
      missing: 'sdk.nowhere is not available',
      urllib: { result: [7] },
    });
    expect(calls).toEqual([[1, { a: [2] }], [7]]);
  });

  test('other routes of the channel are served by exact path', async () => {
    const outcome = await run(
      'import urllib.request, json\n\ndef main(args):\n    request = urllib.request.Request("http://127.0.0.1:8765/v1/sdk_function", data=b"{\\"x\\": 1}", method="POST")\n    return json.load(urllib.request.urlopen(request))\n',
      {
        routes: {
          '/v1/sdk_function': async (body) => ({ status: 200, body: { got: JSON.parse(body.toString()) } }),
        },
      },
    );
    expect(expectSuccess(outcome).result).toEqual({ got: { x: 1 } });
  });

  test('a route sees the request headers and may answer JSON text as it is', async () => {
    const outcome = await run(
      'import urllib.request, json\n\ndef main(args):\n    request = urllib.request.Request("http://127.0.0.1:8765/v1/sdk_function", data=b"{}", headers={"Authorization": "Bearer a:b"}, method="POST")\n    return json.load(urllib.request.urlopen(request))\n',
      {
        routes: {
          '/v1/sdk_function': async (_body, headers) => ({
            status: 200,
            body: JSON.stringify(headers.authorization),
          }),
        },
      },
    );
    expect(expectSuccess(outcome).result).toBe('Bearer a:b');
  });

  test('environment variables of the step are set; the sandbox’s own ones cannot be replaced', async () => {
    const outcome = await run(
      'import os\n\ndef main(args):\n    return os.environ.get("EVERYSK_API_SID")\n',
      {
        environment: { EVERYSK_API_SID: 'wkex_step' },
      },
    );
    expect(expectSuccess(outcome).result).toBe('wkex_step');
    for (const name of ['PATH', 'PAS_SDK_URL', 'PYTHONPATH', 'LD_PRELOAD', 'lower', 'A=B']) {
      const refused = await run('def main(args):\n    return 1\n', { environment: { [name]: 'x' } });
      expect(refused).toMatchObject({ ok: false, error: { kind: 'script' } });
    }
  });
});

describe('runPythonScript: hostile scripts end in an error or see nothing, and leave the host healthy', () => {
  afterEach(expectHealthy);

  test('host files are not there: only the interpreter, the script and the sandbox folders', async () => {
    const outcome = await run(
      [
        'import os',
        'def main(args):',
        '    seen = {}',
        '    for path in ["/etc/passwd", "/etc/shadow", "/root", "/work", "/home", "/var", "/usr/local", "/usr/share", "/proc/1/root/etc/passwd"]:',
        '        seen[path] = os.path.exists(path)',
        '    return {"root": sorted(os.listdir("/")), "usr": sorted(os.listdir("/usr")), "seen": seen}',
      ].join('\n'),
    );
    const result = expectSuccess(outcome).result as {
      root: string[];
      usr: string[];
      seen: Record<string, boolean>;
    };
    expect(result.root).toEqual(expect.arrayContaining(['dev', 'lib', 'proc', 'sandbox', 'tmp', 'usr']));
    expect(result.root).not.toEqual(expect.arrayContaining(['etc']));
    expect(result.usr.sort()).toEqual(existsSync('/usr/lib64') ? ['bin', 'lib', 'lib64'] : ['bin', 'lib']);
    expect(Object.values(result.seen).every((present) => !present)).toBe(true);
  });

  test('the host environment is empty in there, in every process the sandbox can see', async () => {
    const outcome = await run(
      [
        'import os',
        'def main(args):',
        '    blobs = [repr(dict(os.environ))]',
        '    for pid in os.listdir("/proc"):',
        '        if pid.isdigit():',
        '            try:',
        '                blobs.append(open("/proc/%s/environ" % pid, "rb").read().decode("latin-1"))',
        '            except OSError as error:',
        '                blobs.append(str(error))',
        '    return {"env": sorted(os.environ), "blob": "\\n".join(blobs), "pids": len([p for p in os.listdir("/proc") if p.isdigit()])}',
      ].join('\n'),
    );
    const result = expectSuccess(outcome).result as { env: string[]; blob: string; pids: number };
    expect(result.blob).not.toContain(SENTINEL);
    expect(result.env).not.toContain('PAS_PYTHON_SANDBOX_SENTINEL');
    expect(result.env).not.toContain('PATH');
    expect(result.pids).toBeLessThanOrEqual(3);
  });

  test('the network is unreachable: neither the host loopback nor the outside', async () => {
    const server = net.createServer((socket) => socket.end('host secret'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const outcome = await run(
        [
          'import socket',
          'def attempt(host, port):',
          '    try:',
          '        s = socket.create_connection((host, port), timeout=1)',
          '        return "connected: %r" % s.recv(100)',
          '    except OSError as error:',
          '        return type(error).__name__',
          'def main(args):',
          `    return [attempt("127.0.0.1", ${port}), attempt("1.1.1.1", 53), attempt("pypi.org", 443)]`,
        ].join('\n'),
      );
      const result = expectSuccess(outcome).result as string[];
      for (const answer of result) expect(answer).not.toMatch(/connected/);
    } finally {
      server.close();
    }
  });

  test('a fork bomb stops at the process limit', async () => {
    const outcome = await run('import os\n\ndef main(args):\n    while True:\n        os.fork()\n');
    expectFailure(outcome, 'script', new RegExp(`at most ${PYTHON_FIXED_LIMITS.maxProcesses} processes`));
  });

  test('a memory bomb stops at the memory limit, all at once or bit by bit', async () => {
    expectFailure(
      await run('def main(args):\n    return len(bytearray(1 << 30))\n'),
      'memory',
      /memory limit of 64 MB/,
    );
    expectFailure(
      await run('def main(args):\n    hoard = []\n    while True:\n        hoard.append("x" * 1000000)\n'),
      'memory',
      /memory limit of 64 MB/,
    );
  });

  test('an infinite loop stops at the time limit, busy or asleep', async () => {
    const limits = { timeoutMs: 1_500 };
    expectFailure(
      await run('def main(args):\n    while True:\n        pass\n', { limits }),
      'timeout',
      /limit/,
    );
    expectFailure(
      await run('import time\n\ndef main(args):\n    time.sleep(60)\n', { limits }),
      'timeout',
      /timed out after 1500 ms \(the wall-time limit\)/,
    );
  });

  test('a huge result fails as invalid_output; a flood of output stops at the output limit', async () => {
    expectFailure(
      await run('def main(args):\n    return "x" * (2 * 1024 * 1024)\n'),
      'invalid_output',
      /exceeds the limit of 1048576 bytes/,
    );
    expectFailure(
      await run('def main(args):\n    while True:\n        print("x" * 10000)\n'),
      'output',
      /the output limit/,
    );
  });

  test('ctypes can crash only its own process and gains nothing', async () => {
    const outcome = await run(
      [
        'import ctypes, os',
        'def main(args):',
        '    libc = ctypes.CDLL(None, use_errno=True)',
        '    return {"setuid": libc.setuid(0), "unshare": libc.unshare(0x10000000), "uid": os.getuid()}',
      ].join('\n'),
    );
    expect(expectSuccess(outcome).result).toEqual({ setuid: -1, unshare: -1, uid: 1000 });
    expectFailure(
      await run('import ctypes\n\ndef main(args):\n    return ctypes.string_at(0xDEAD0000, 10)\n'),
      'script',
      /killed by SIGSEGV/,
    );
  });

  test('nothing outside /tmp is writable; /tmp is private and bounded', async () => {
    const marker = `pas-sandbox-${process.pid}-${Date.now()}`;
    const outcome = await run(
      [
        'import os',
        'def attempt(path):',
        '    try:',
        '        open(path, "w").write("x")',
        '        return "written"',
        '    except OSError as error:',
        '        return type(error).__name__',
        'def main(args):',
        `    open("/tmp/${marker}", "w").write("inside")`,
        '    return [attempt(p) for p in ["/sandbox/script.py", "/sandbox/x", "/usr/bin/x", "/x", "/proc/sys/kernel/hostname", "/dev/x", "/dev/shm/x", "/run/pas/x"]]',
      ].join('\n'),
    );
    const result = expectSuccess(outcome).result as string[];
    for (const answer of result) expect(answer).not.toBe('written');
    expect(existsSync(`${os.tmpdir()}/${marker}`)).toBe(false);
    expect(existsSync(`/tmp/${marker}`)).toBe(false);
    const fill = await run(
      'def main(args):\n    for i in range(1000):\n        open("/tmp/f%d" % i, "wb").write(b"x" * 1000000)\n',
      { limits: { maxOutputBytes: 4 * 1024 * 1024 } },
    );
    expectFailure(fill, 'script', /temporary folder holds at most|files of at most/);
  });

  test('open files stop at their limit', async () => {
    expectFailure(
      await run('def main(args):\n    return [open("/dev/null") for _ in range(100000)]\n'),
      'script',
      new RegExp(`at most ${PYTHON_FIXED_LIMITS.maxOpenFiles} open files`),
    );
  });

  test('signals reach no process outside the sandbox', async () => {
    const outcome = await run(
      [
        'import os, signal',
        'def main(args):',
        '    answers = []',
        `    for pid in [${process.pid}, ${process.ppid}]:`,
        '        try:',
        '            os.kill(pid, 0)',
        '            answers.append("visible")',
        '        except OSError as error:',
        '            answers.append(type(error).__name__)',
        '    return answers',
      ].join('\n'),
    );
    const answers = expectSuccess(outcome).result as string[];
    // The pid numbers may exist inside the sandbox's own namespace only if they are tiny; ours are not.
    expect(answers).toEqual(['ProcessLookupError', 'ProcessLookupError']);
    // Killing everything it can see ends only the sandbox.
    expectFailure(
      await run('import os, signal\n\ndef main(args):\n    os.kill(-1, signal.SIGKILL)\n'),
      'script',
    );
    expect(process.kill(process.pid, 0)).toBe(true);
  });

  test('many runs at once, hostile and normal, each get their own outcome', async () => {
    const outcomes = await Promise.all([
      run('def main(args):\n    return args\n', { args: 'a' }),
      run('import os\n\ndef main(args):\n    while True:\n        os.fork()\n'),
      run('def main(args):\n    return args\n', { args: 'b' }),
      run('def main(args):\n    return len(bytearray(1 << 30))\n'),
    ]);
    expect(expectSuccess(outcomes[0]!).result).toBe('a');
    expect(outcomes[1]!.ok).toBe(false);
    expect(expectSuccess(outcomes[2]!).result).toBe('b');
    expectFailure(outcomes[3]!, 'memory');
  });

  test('the script cannot read the bootstrap of the host or other runs’ scripts', async () => {
    const outcome = await run('import os\n\ndef main(args):\n    return sorted(os.listdir("/sandbox"))\n');
    expect(expectSuccess(outcome).result).toEqual(['bootstrap.py', 'lib', 'script.py']);
    expect(await readFile(__filename, 'utf8')).toContain('runPythonScript');
  });
});

describe('runPythonScript: refusals', () => {
  test('an unknown runtime names the accepted ones', async () => {
    expectFailure(
      await run('def main(a):\n    return 1\n', { runtime: 'python2.7' }),
      'script',
      /use python3\.11/,
    );
  });

  test('cancelling stops the script', async () => {
    const controller = new AbortController();
    const pending = run('import time\n\ndef main(args):\n    time.sleep(30)\n', {
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 300);
    expectFailure(await pending, 'cancelled');
  });
});
