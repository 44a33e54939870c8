import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { pythonVenv } from '../support/python-venv';
import { useTestApp } from '../support/use-test-app';

const run = promisify(execFile);
const ARTIFACTS = path.resolve(__dirname, '..', '..', 'test-artifacts');

/** Pinned: a new schemathesis release brings new checks, which should arrive by a deliberate bump. */
const SCHEMATHESIS = 'schemathesis==4.32.5';

/**
 * The contract tested from outside: schemathesis, as an integrator would run it, against the live app on
 * a loopback socket with a valid API key, every check on every operation. Zero failures is the bar.
 * Examples per operation are capped so the run stays within a few minutes on two cores.
 */
describe('schemathesis against the served OpenAPI document', () => {
  const h = useTestApp({ rateLimitPerMinute: 1_000_000 });
  let baseUrl = '';
  let bin = '';

  beforeAll(async () => {
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    // CPython 3.11.7 trips over its own AST checks inside hypothesis ("AST constructor recursion depth
    // mismatch"); a newer interpreter, where one is installed, does not.
    bin = await pythonVenv('schemathesis', [SCHEMATHESIS], { preferPython: ['python3.13', 'python3.12'] });
  }, 300_000);

  test('every operation, --checks all: no failure', async () => {
    const args = [
      '--config-file',
      path.join(__dirname, 'schemathesis.toml'),
      'run',
      `${baseUrl}/v2/openapi.json`,
      '--checks',
      'all',
      '--header',
      `Authorization: ${h.account.bearer}`,
      '--max-examples',
      '12',
      '--phases',
      'examples,coverage,fuzzing',
      '--workers',
      '2',
      '--generation-deterministic',
      '--suppress-health-check',
      'all',
      '--no-color',
    ];
    mkdirSync(ARTIFACTS, { recursive: true });
    let output = '';
    let code = 0;
    try {
      const { stdout, stderr } = await run(path.join(bin, 'st'), args, {
        timeout: 290_000,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, PYTHONUNBUFFERED: '1' },
        // Its example database stays with the other test artifacts, out of the work tree.
        cwd: ARTIFACTS,
      });
      output = stdout + stderr;
    } catch (error) {
      const failed = error as { stdout?: string; stderr?: string; code?: number };
      output = (failed.stdout ?? '') + (failed.stderr ?? '');
      code = failed.code ?? 1;
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(path.join(ARTIFACTS, 'schemathesis.txt'), output);
    const summary = output.split('\n').filter((line) => /failures|passed|errors|warnings/i.test(line));
    expect({ code, summary, tail: code === 0 ? '' : output.slice(-6000) }).toEqual({
      code: 0,
      summary: expect.any(Array),
      tail: '',
    });
  }, 300_000);
});
