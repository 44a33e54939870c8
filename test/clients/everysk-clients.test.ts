import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import {
  EXPECTED_SCENARIOS,
  LAYER_SCRIPTS,
  MARKET_DATA,
  PYPI_CLIENTS,
  runClientScenarios,
  SCENARIO_ENDERS,
  SDK_CLIENT,
} from '../support/pypi-clients';
import { pythonVenv } from '../support/python-venv';
import { startHarness, workerId, type WorkflowHarness } from '../workflows/workflow-harness';

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
    await importMarketCsv(h.db, path.join(MARKET_DATA, 'sp500_index_1990_2022.csv'));
    await importMarketCsv(h.db, path.join(MARKET_DATA, 'us_stocks_daily.csv'), { columns: ['AAPL', 'JPM'] });
    await h.t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(h.t.app.server.address() as AddressInfo).port}`;

    const created = await h.call('POST', '/v2/workspaces', { name: 'clients' });
    expect(created.statusCode).toBe(200);
    for (const [key, ender] of Object.entries(SCENARIO_ENDERS)) {
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
    await Promise.all(
      [...PYPI_CLIENTS, SDK_CLIENT].map((client) => pythonVenv(client.venv, [...client.requirements])),
    );
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

  test.each(PYPI_CLIENTS.map((client) => [client.name, client] as const))(
    '%s: every scenario passes',
    async (_name, client) => {
      const { results, stderr } = await runClientScenarios(client, {
        baseUrl,
        sid: h.account.key.account_sid,
        token: h.account.key.auth_token,
        workflowOk: workflows.ok!,
        workflowFail: workflows.fail!,
        reportId: await newReport(),
      });
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

  // One script per layer of the clients (market data, filter, …), each run by the clients it is for.
  test.each(
    LAYER_SCRIPTS.flatMap((layer) =>
      (layer.clients ?? PYPI_CLIENTS).map((client) => [layer.script, client.venv, layer, client] as const),
    ),
  )(
    '%s with %s: every scenario passes',
    async (_script, _name, layer, client) => {
      const { results, stderr } = await runClientScenarios(
        client,
        {
          baseUrl,
          sid: h.account.key.account_sid,
          token: h.account.key.auth_token,
          workflowOk: workflows.ok!,
          workflowFail: workflows.fail!,
          reportId: '',
        },
        layer.script,
      );
      const failures = results.filter((result) => !result.ok).map((r) => `${r.name}: ${String(r.detail)}`);
      const complete = results.length === layer.scenarios.length;
      expect({ failures, stderr: failures.length || !complete ? stderr : '' }).toEqual({
        failures: [],
        stderr: '',
      });
      expect(results.map((result) => result.name)).toEqual(layer.scenarios);
    },
    300_000,
  );
});
