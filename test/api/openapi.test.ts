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

  /** The served document, read loosely (its schemas are walked by key). */
  async function document() {
    return (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json() as {
      openapi: string;
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      paths: Record<string, Record<string, any>>;
    };
  }
  const body = (doc: Awaited<ReturnType<typeof document>>, method: string, path: string) =>
    doc.paths[path]![method].requestBody.content['application/json'].schema;

  // The contract test (test/contract/) lists no exemption for these: the document states them.
  test('OpenAPI 3.1, so rules on object keys are stated with propertyNames', async () => {
    const doc = await document();
    expect(doc.openapi).toBe('3.1.0');
    const envVars = body(doc, 'post', '/user_apps').properties.env_vars.anyOf[0];
    expect(envVars.propertyNames.allOf).toContainEqual({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' });
    expect(envVars.additionalProperties.pattern).toBe('^[^\\u0000]*$');
    // A tuple in 2020-12 form: draft 7's `items: [...]` would be an invalid 3.1 schema.
    expect(JSON.stringify(doc)).not.toMatch(/"items":\[/);
    const point = body(doc, 'post', '/custom_indexes').properties.data.items;
    expect(point).toMatchObject({ items: false, prefixItems: [expect.any(Object), expect.any(Object)] });
  });

  test('no JSON body may hold a key named __proto__ (the parser refuses it)', async () => {
    const doc = await document();
    for (const [path, method] of [
      ['/datastores', 'post'],
      ['/workflows/{id}', 'put'],
      ['/calculations/stress_test', 'post'],
    ] as const) {
      expect(body(doc, method, path).propertyNames).toEqual({ not: { const: '__proto__' } });
    }
  });

  test('the webhook body is stated as the receiver checks it: an object with at least one key', async () => {
    const doc = await document();
    expect(body(doc, 'post', '/integrations/{id}/webhook')).toMatchObject({
      type: 'object',
      minProperties: 1,
    });
    // The receiver still words each refusal itself.
    const made = await h.call('POST', '/v2/integrations', { name: 'Hook', type: 'WEBHOOK' });
    const id = (made.json() as { integration: { id: string } }).integration.id;
    const res = await h.call('POST', `/v2/integrations/${id}/webhook`, []);
    expect(res.json()).toEqual({
      code: 400,
      message: 'The webhook body must be a JSON object with at least one key, not a list.',
    });
  });

  test('a multipart part requires the fields every part needs, in the document', async () => {
    const doc = await document();
    const form = doc.paths['/files']!.post.requestBody.content['multipart/form-data'].schema;
    expect(form.required).toEqual(['upload_id', 'part_number', 'total_parts', 'chunk']);
    expect(form).not.toHaveProperty('x-document-required');
  });

  test('a period on date is offered only to kinds with a date', async () => {
    const doc = await document();
    const periodField = (path: string) =>
      doc.paths[path]!.get.parameters.find((p: { name: string }) => p.name === 'period_field').schema;
    expect(JSON.stringify(periodField('/portfolios'))).toContain('"date"');
    expect(JSON.stringify(periodField('/worker_templates'))).not.toContain('"date"');
    expect(JSON.stringify(periodField('/workflows'))).not.toContain('"date"');
    const refused = await h.call('GET', '/v2/worker_templates?period_field=date');
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toEqual({
      code: 400,
      message: 'These entities have no date: use period_field=updated_on.',
    });
  });
});
