import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';

/** The boundary table of docs/architecture.md is enforced by lint; these cases prove the rule bites. */
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
    // Inside engine/, a room imports only the rooms before it in the layer order.
    [
      'engine/platform/thing.ts',
      "import { recordAudit } from '../store/audit-trail';\nexport const x = recordAudit;\n",
    ],
    [
      'engine/store/thing.ts',
      "import type { Principal } from '../identity/account-store';\nexport type X = Principal;\n",
    ],
    [
      'engine/kinds/thing.ts',
      "import { checkWidgets } from '../reports/report-store';\nexport const x = checkWidgets;\n",
    ],
    [
      'engine/workflows/thing.ts',
      "import { Supervisor } from '../../ops/launcher/supervisor';\nexport const x = Supervisor;\n",
    ],
    ['engine/store/thing.ts', "import { main } from '../../ops/cli/main';\nexport const x = main;\n"],
    [
      'api/thing.ts',
      "import { createBackup } from '../ops/backup/create-backup';\nexport const x = createBackup;\n",
    ],
    ['ops/cli/thing.ts', "import { buildApp } from '../../api/app';\nexport const x = buildApp;\n"],
    ['engine/store/thing.ts', "import { buildApp } from '../../api/app';\nexport const x = buildApp;\n"],
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
    [
      'engine/identity/thing.ts',
      "import { recordAudit } from '../store/audit-trail';\nexport const x = recordAudit;\n",
    ],
    [
      'engine/workflows/thing.ts',
      "import { INTEGRATION } from '../kinds/integration';\nexport const x = INTEGRATION;\n",
    ],
    [
      'ops/cli/thing.ts',
      "import { runWorkflow } from '../../engine/workflows/run-workflow';\nexport const x = runWorkflow;\n",
    ],
  ])('%s: an allowed import passes', async (file, code) => {
    expect(await violations(file, code)).toEqual([]);
  });

  // A room missing from the layer table would escape the rule: each one but the last must refuse
  // an import of the sdk (the top room).
  test.each(
    readdirSync(path.resolve(__dirname, '../../engine'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && entry.name !== 'sdk')
      .map((entry) => entry.name),
  )('engine/%s/ is in the layer order', async (room) => {
    const code =
      "import { parseSdkRequest } from '../sdk/sdk-function';\nexport const x = parseSdkRequest;\n";
    expect(await violations(`engine/${room}/thing.ts`, code)).toHaveLength(1);
  });

  test('engine/ holds only the domain and its platform: no entry point is left in it', () => {
    const rooms = readdirSync(path.resolve(__dirname, '../../engine'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(rooms).not.toContain('runtime');
  });
});
