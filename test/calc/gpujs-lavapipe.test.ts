import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { lavapipeEnvironment } from '../support/lavapipe';

/**
 * The gpu.js kernels executed, not only validated: gpujs-kernels.test.ts runs again in webgpu mode
 * on Mesa's lavapipe (Vulkan on the CPU, through LLVM), fetched into tools/lavapipe by
 * scripts/install-lavapipe.mjs (Debian bookworm-backports .debs, SHA-256 pinned, `dpkg -x`).
 * Only that run's processes see it (VK_ICD_FILENAMES, LD_LIBRARY_PATH); nothing is installed into
 * the system. gpujs-api.test.ts runs with them: a stress test and a cvar through the HTTP API with
 * CALC_BACKEND=gpujs on lavapipe, on this run's PostgreSQL (TEST_DATABASE_ADMIN_URL, inherited).
 * Where lavapipe cannot be had (another OS or architecture) this fails with one line
 * saying what is missing: it is never skipped on the Debian x86-64 machines the suite runs on.
 */
const ROOT = path.resolve(__dirname, '..', '..');

test('the kernels in webgpu mode on lavapipe: the generator bit for bit, every book, chunking, reuse, finish() and the HTTP API match wasm', () => {
  const lavapipe = lavapipeEnvironment();
  const run = spawnSync(
    process.execPath,
    [
      '--no-node-snapshot',
      '--experimental-vm-modules',
      '--disable-warning=ExperimentalWarning',
      path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
      '--config',
      path.join(ROOT, 'test', 'calc', 'support', 'lavapipe-jest.config.js'),
      '--runInBand',
      'test/calc/gpujs-kernels.test.ts',
      'test/calc/gpujs-api.test.ts',
    ],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 300_000,
      env: {
        ...process.env,
        PAS_TEST_WEBGPU: 'lavapipe',
        ...lavapipe,
      },
    },
  );
  const output = `${run.stdout}\n${run.stderr}`;
  // The adapter is named in the output, and it is lavapipe's.
  const adapter = /webgpu adapter: (.*)/.exec(output)?.[1];
  console.log(`webgpu-mode kernel tests ran on: ${adapter ?? 'no adapter'}`);
  expect({ status: run.status, tail: run.status === 0 ? '' : output.slice(-4000) }).toEqual({
    status: 0,
    tail: '',
  });
  expect(adapter).toMatch(/^mesa software \(llvmpipe: Mesa 25\./);
  expect(output).toMatch(/Tests: +1 skipped, (\d+) passed/);
  expect(output).toMatch(/gpujs through the API on: gpu\.js webgpu on mesa software \(llvmpipe/);
  expect(output).toMatch(/Test Suites: +2 passed, 2 total/);
  expect(output).not.toMatch(/\d+ failed/);
}, 600_000);
