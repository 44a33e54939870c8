import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import { pythonVenv } from '../support/python-venv';
import { startHarness, workerId, type WorkflowHarness } from '../workflows/workflow-harness';

const run = promisify(execFile);
const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');
const SCENARIOS = path.join(__dirname, 'client_scenarios.py');

/** The two PyPI clients our users have, each in its own virtualenv (both install the module `everysk`). */
const CLIENTS = [
  {
    name: 'legacy',
    venv: 'everysk-1.0.17',
    requirements: ['everysk==1.0.17'],
    urlVariable: 'EVERYSK_API_ENTRY',
  },
  {
    name: 'lib',
    venv: 'everysk-lib-1.14.2',
    requirements: ['everysk-lib[requests]==1.14.2'],
    urlVariable: 'EVERYSK_API_URL',
  },
] as const;

const EXPECTED_SCENARIOS = [
  'workspace_crud',
  'portfolio_crud',
  'datastore_crud',
  'file_base64_round_trip',
  'custom_index_crud',
  'private_security_crud',
  'report_share_and_remove',
  'workflows_listed_and_retrieved',
  'stress_test',
  'risk_attribution',
  'exposure',
  'parametric_risk_attribution',
  'sensitivity',
  'underlying_stress_sensitivity',
  'properties',
  'api_error_bodies',
  'workflow_success',
  'workflow_failure',
];

/**
 * The contract tested from outside: both PyPI clients, unchanged, against a live service on a loopback
 * socket (real PostgreSQL, real Temporal worker). Each scenario is a few client calls a user would make.
 */
describe('the PyPI clients everysk 1.0.17 and everysk-lib 1.14.2 against a live service', () => {
  let h: WorkflowHarness;
  let baseUrl: string;
  const workflows: Record<string, string> = {};

  beforeAll(async () => {
    h = await startHarness({ worker: true });
    await importMarketCsv(h.db, path.join(MARKET, 'sp500_index_1990_2022.csv'));
    await importMarketCsv(h.db, path.join(MARKET, 'us_stocks_daily.csv'), { columns: ['AAPL', 'JPM'] });
    await h.t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(h.t.app.server.address() as AddressInfo).port}`;

    const created = await h.call('POST', '/v2/workspaces', { name: 'clients' });
    expect(created.statusCode).toBe(200);
    for (const [key, ender] of [
      ['ok', 'function main(args) { return { doubled: args.inputs.amount * 2 }; }'],
      ['fail', 'function main(args) { throw new Error("the ender refuses"); }'],
    ] as const) {
      const s = workerId();
      const e = workerId();
      const workflow = await h.store({
        name: `client ${key}`,
        workspace: 'clients',
        workers: [
          { id: s, name: 'Start', type: 'STARTER', next: [e] },
          { id: e, name: 'End', type: 'ENDER', script: ender },
        ],
      });
      workflows[key] = workflow.id;
    }
    // Creating venvs the first time installs from PyPI; later runs reuse them.
    await Promise.all(CLIENTS.map((client) => pythonVenv(client.venv, [...client.requirements])));
  }, 300_000);

  afterAll(async () => {
    await h?.close();
  });

  async function newReport(): Promise<string> {
    const res = await h.call('POST', '/v2/reports', {
      name: 'Client report',
      workspace: 'clients',
      data: [],
    });
    expect(res.statusCode).toBe(200);
    return res.json().report.id;
  }

  test.each(CLIENTS.map((client) => [client.name, client] as const))(
    '%s: every scenario passes',
    async (_name, client) => {
      const bin = await pythonVenv(client.venv, [...client.requirements]);
      const env = {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        PAS_CLIENT: client.name,
        [client.urlVariable]: baseUrl,
        EVERYSK_API_SID: h.account.key.account_sid,
        EVERYSK_API_TOKEN: h.account.key.auth_token,
        PAS_WORKFLOW_OK: workflows.ok!,
        PAS_WORKFLOW_FAIL: workflows.fail!,
        PAS_REPORT_ID: await newReport(),
      };
      let stdout = '';
      let stderr = '';
      try {
        ({ stdout, stderr } = await run(path.join(bin, 'python'), [SCENARIOS], { env, timeout: 240_000 }));
      } catch (error) {
        const failed = error as { stdout?: string; stderr?: string };
        stdout = failed.stdout ?? '';
        stderr = failed.stderr ?? '';
      }
      const results = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { name: string; ok: boolean; detail: unknown });
      const failures = results.filter((result) => !result.ok).map((r) => `${r.name}: ${String(r.detail)}`);
      const complete = results.length === EXPECTED_SCENARIOS.length;
      expect({ failures, stderr: failures.length || !complete ? stderr : '' }).toEqual({
        failures: [],
        stderr: '',
      });
      expect(results.map((result) => result.name)).toEqual(EXPECTED_SCENARIOS);
    },
    300_000,
  );
});
