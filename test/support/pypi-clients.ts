import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { pythonVenv } from './python-venv';

const run = promisify(execFile);
const CLIENTS_DIR = path.resolve(__dirname, '..', 'clients');
/** The market data the calculation scenarios read (imported by each suite its own way). */
export const MARKET_DATA = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');

/** The two PyPI clients our users have, each in its own virtualenv (both install the module `everysk`). */
export const PYPI_CLIENTS = [
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
export type PypiClient = (typeof PYPI_CLIENTS)[number] | typeof SDK_CLIENT;

/**
 * everysk-lib's SDK layer (`everysk.sdk`) needs httpx with HTTP/2, which no extra of the package
 * pulls in without a web server: its own virtualenv, pointed at the service by EVERYSK_SDK_URL.
 */
export const SDK_CLIENT = {
  name: 'lib',
  venv: 'everysk-lib-1.14.2-sdk',
  requirements: ['everysk-lib[requests]==1.14.2', 'httpx[http2]==0.28.1'],
  urlVariable: 'EVERYSK_SDK_URL',
} as const;

/** test/clients/client_scenarios.py prints one line per scenario, in this order. */
export const EXPECTED_SCENARIOS = [
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
  'marginal_tracking_error',
  'backtest',
  'backtest_statistics',
  'api_error_bodies',
  'workflow_success',
  'workflow_failure',
];

/**
 * The scenario scripts beside client_scenarios.py, one per layer of the clients, each with the
 * scenarios it prints in order. `clients` narrows a script to the clients it is written for.
 */
export const LAYER_SCRIPTS: ReadonlyArray<{
  script: string;
  scenarios: readonly string[];
  /** The clients that run it (both PyPI clients when absent). */
  clients?: readonly PypiClient[];
}> = [
  {
    script: 'market_data_scenarios.py',
    scenarios: [
      'symbols_search',
      'symbols_check_before_creating_a_portfolio',
      'symbols_price_and_historical',
      'latest_prices',
      'market_data_error_bodies',
    ],
  },
  { script: 'filter_scenarios.py', scenarios: ['portfolio_filter_by_tags', 'datastore_filter'] },
  {
    script: 'sdk_scenarios.py',
    clients: [SDK_CLIENT],
    scenarios: [
      'portfolio_entity_lifecycle',
      'validation_matches_v2',
      'many_forms',
      'queries',
      'custom_index_by_symbol',
      'private_security_instrument_types',
      'file_entity',
      'report_entity',
      'workflow_run_and_wait',
      'market_data',
      'user_cache',
      'user_lock',
      'not_offered',
    ],
  },
];

/** The enders of the two STARTER → ENDER workflows the scenarios run: one doubles `amount`, one fails. */
export const SCENARIO_ENDERS = {
  ok: 'function main(args) { return { doubled: args.inputs.amount * 2 }; }',
  fail: 'function main(args) { throw new Error("the ender refuses"); }',
} as const;

export interface ScenarioTarget {
  baseUrl: string;
  sid: string;
  token: string;
  workflowOk: string;
  workflowFail: string;
  reportId: string;
}

/** Runs every scenario with `client` against `target`; answers what it printed, parsed. */
export async function runClientScenarios(
  client: PypiClient,
  target: ScenarioTarget,
  script = 'client_scenarios.py',
): Promise<{ results: Array<{ name: string; ok: boolean; detail: unknown }>; stderr: string }> {
  const bin = await pythonVenv(client.venv, [...client.requirements]);
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    PAS_CLIENT: client.name,
    // The scripts import scenario_kit.py beside them: no __pycache__ left in the work tree.
    PYTHONDONTWRITEBYTECODE: '1',
    [client.urlVariable]: target.baseUrl,
    EVERYSK_API_SID: target.sid,
    EVERYSK_API_TOKEN: target.token,
    PAS_WORKFLOW_OK: target.workflowOk,
    PAS_WORKFLOW_FAIL: target.workflowFail,
    PAS_REPORT_ID: target.reportId,
  };
  let stdout = '';
  let stderr = '';
  try {
    ({ stdout, stderr } = await run(path.join(bin, 'python'), [path.join(CLIENTS_DIR, script)], {
      env,
      timeout: 240_000,
    }));
  } catch (error) {
    ({ stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string });
  }
  const results = stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { name: string; ok: boolean; detail: unknown });
  return { results, stderr };
}
