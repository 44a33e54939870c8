import { useTestApp } from '../support/use-test-app';

/** Every endpoint of the interface (and our extensions) is in the served OpenAPI document. */
describe('OpenAPI document', () => {
  const h = useTestApp();

  const EXPECTED: Array<[string, string]> = [
    ['get', '/health_check'],
    ['post', '/oauth/token'],
    ['post', '/oauth/revoke'],
    ['post', '/workspaces'],
    ['get', '/workspaces'],
    ['get', '/workspaces/{id}'],
    ['put', '/workspaces/{id}'],
    ['delete', '/workspaces/{id}'],
    ...(['portfolios', 'datastores', 'custom_indexes', 'private_securities'] as const).flatMap((r) => [
      ['post', `/${r}`] as [string, string],
      ['get', `/${r}`] as [string, string],
      ['get', `/${r}/{id}`] as [string, string],
      ['put', `/${r}/{id}`] as [string, string],
      ['delete', `/${r}/{id}`] as [string, string],
    ]),
    ['get', '/reports'],
    ['get', '/reports/{id}'],
    ['post', '/reports/{id}/share'],
    ['delete', '/reports/{id}'],
    ['post', '/reports'],
    ['put', '/reports/{id}'],
    ['get', '/report_templates'],
    ['get', '/report_templates/{id}'],
    ['delete', '/report_templates/{id}'],
    ['get', '/worker_templates'],
    ['get', '/worker_templates/{id}'],
    ['post', '/worker_templates'],
    ['put', '/worker_templates/{id}'],
    ['get', '/user_apps'],
    ['get', '/user_apps/{id}'],
    ['post', '/user_apps'],
    ['put', '/user_apps/{id}'],
    ['get', '/audit_logs'],
    ['get', '/audit_logs/all'],
    ['get', '/audit_logs/{id}'],
    ['post', '/integrations'],
    ['get', '/integrations'],
    ['get', '/integrations/{id}'],
    ['delete', '/integrations/{id}'],
    ['post', '/integrations/{id}/webhook'],
    ['post', '/workflows'],
    ['get', '/workflows'],
    ['get', '/workflows/{id}'],
    ['put', '/workflows/{id}'],
    ['delete', '/workflows/{id}'],
    ['post', '/workflows/{id}/run'],
    ['get', '/workflows/{id}/workflow_executions'],
    ['get', '/workflows/{id}/worker_executions'],
    ['get', '/workflows/worker_executions'],
    ['post', '/calculations/stress_test'],
    ['post', '/calculations/risk_attribution'],
    ['post', '/calculations/exposure'],
    ['post', '/calculations/parametric_risk_attribution'],
    ['post', '/calculations/sensitivity'],
    ['post', '/calculations/underlying_stress_sensitivity'],
    ['post', '/calculations/properties'],
  ];

  test.each(EXPECTED)('%s %s is documented with a 200-range response', async (method, path) => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    const operation = doc.paths[path]?.[method];
    expect(operation).toBeDefined();
    expect(Object.keys(operation.responses).some((status) => status.startsWith('2'))).toBe(true);
  });

  test('no schema in the document is an unresolved TypeBox construct', async () => {
    const text = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).body;
    expect(text).not.toMatch(/"target":"(Partial|Required|Pick|Omit)"/);
  });
});
