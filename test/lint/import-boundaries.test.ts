import path from 'node:path';
import { ESLint } from 'eslint';

/** The boundary table of architecture.md is enforced by lint; these cases prove the rule bites. */
describe('import boundaries', () => {
  const eslint = new ESLint({ cwd: path.resolve(__dirname, '../..') });

  async function violations(file: string, code: string): Promise<string[]> {
    const [result] = await eslint.lintText(code, { filePath: path.resolve(__dirname, '../..', file) });
    return (result?.messages ?? [])
      .filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports')
      .map((m) => m.message);
  }

  test.each([
    ['calc/model.ts', "import { loadConfig } from '../engine/config';\nexport const x = loadConfig;\n"],
    ['plugins/thing.ts', "import { buildApp } from '../api/app';\nexport const x = buildApp;\n"],
    ['engine/thing.ts', "import { buildApp } from '../api/app';\nexport const x = buildApp;\n"],
    [
      'api/thing.ts',
      "import { createTemporalWorker } from '../workers/temporal-worker';\nexport const x = createTemporalWorker;\n",
    ],
    ['workers/workflows/bad-workflow.ts', "import fs from 'node:fs';\nexport const x = fs;\n"],
    [
      'workers/workflows/bad-workflow.ts',
      "import { randomUUID } from 'crypto';\nexport const x = randomUUID;\n",
    ],
  ])('%s: a forbidden import is reported', async (file, code) => {
    expect((await violations(file, code)).length).toBeGreaterThan(0);
  });

  test.each([
    ['api/thing.ts', "import { loadConfig } from '../engine/config';\nexport const x = loadConfig;\n"],
    [
      'workers/thing.ts',
      "import { runScript } from '../plugins/sandbox/script-sandbox';\nexport const x = runScript;\n",
    ],
    [
      'workers/workflows/ok-workflow.ts',
      "import { proxyActivities } from '@temporalio/workflow';\nexport const x = proxyActivities;\n",
    ],
    [
      'workers/workflows/ok-workflow.ts',
      "import type { InterpreterInput } from '../../engine/workflows/run-input';\nexport type X = InterpreterInput;\n",
    ],
  ])('%s: an allowed import passes', async (file, code) => {
    expect(await violations(file, code)).toEqual([]);
  });
});
