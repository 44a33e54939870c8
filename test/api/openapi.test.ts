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
      components: { schemas: Record<string, unknown> };
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

  type Schema = Record<string, unknown>;
  /** The schema, with a `$ref` into the document's components followed. */
  const follow = (doc: Awaited<ReturnType<typeof document>>, schema: unknown): Schema => {
    let node = schema as Schema;
    while (node && typeof node.$ref === 'string') {
      node = doc.components.schemas[node.$ref.replace('#/components/schemas/', '')] as Schema;
    }
    return node;
  };
  /** Whether a value of this schema may be null (a schema without a type takes any value). */
  const admitsNull = (doc: Awaited<ReturnType<typeof document>>, schema: unknown): boolean => {
    const node = follow(doc, schema);
    const branches = (node.anyOf ?? node.oneOf) as unknown[] | undefined;
    if (branches) return branches.some((branch) => admitsNull(doc, branch));
    if (node.const === null || (Array.isArray(node.enum) && node.enum.includes(null))) return true;
    return node.type === undefined || [node.type].flat().includes('null');
  };
  /**
   * Why `pointer` may find nothing usable in a value of `schema` (not required at some step, in some
   * branch of an anyOf or oneOf, or null there), or null when every value has a non-null one there.
   */
  const missing = (
    doc: Awaited<ReturnType<typeof document>>,
    schema: unknown,
    pointer: string[],
  ): string | null => {
    const node = follow(doc, schema);
    const branches = (node.anyOf ?? node.oneOf) as unknown[] | undefined;
    if (branches && pointer.length > 0) {
      return branches.map((branch) => missing(doc, branch, pointer)).find((why) => why !== null) ?? null;
    }
    if (pointer.length === 0) return admitsNull(doc, node) ? 'may be null' : null;
    const [head, ...rest] = pointer as [string, ...string[]];
    if (!(Array.isArray(node.required) && node.required.includes(head))) return `${head} is not required`;
    return missing(doc, (node.properties as Record<string, unknown>)[head], rest);
  };

  // schemathesis's stateful phase follows the document's links (and only those: schemathesis.toml
  // turns its own guesses off). A link read from a field that may be null or absent sends that
  // nothing as an id (`/workflows/None/…`), so each must read a required, non-nullable field.
  test('every link reads a field every answer has, never null', async () => {
    const doc = await document();
    const problems: string[] = [];
    const followed: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const [status, response] of Object.entries(
          (operation.responses ?? {}) as Record<
            string,
            { links?: object; content?: Record<string, { schema?: unknown }> }
          >,
        )) {
          for (const [name, raw] of Object.entries(response.links ?? {})) {
            const link = raw as { operationRef: string; parameters?: object; requestBody?: object };
            const where = `${method.toUpperCase()} ${path} ${status} → ${name}`;
            const [, targetPath, targetMethod] = /^#\/paths\/(.+)\/([a-z]+)$/.exec(link.operationRef) ?? [];
            const target =
              doc.paths[(targetPath ?? '').replace(/~1/g, '/').replace(/~0/g, '~')]?.[targetMethod ?? ''];
            if (!target) problems.push(`${where}: no operation ${link.operationRef}`);
            for (const key of Object.keys(link.parameters ?? {})) {
              const [location, parameter] = key.split('.');
              if (
                !target?.parameters?.some(
                  (p: { in: string; name: string }) => p.in === location && p.name === parameter,
                )
              )
                problems.push(`${where}: ${key} is not a parameter of the target`);
            }
            for (const expression of [
              ...Object.values(link.parameters ?? {}),
              ...Object.values(link.requestBody ?? {}),
            ]) {
              followed.push(`${where} ${String(expression)}`);
              const pointer = /^\$response\.body#\/(.+)$/.exec(String(expression))?.[1];
              if (pointer === undefined) {
                problems.push(`${where}: ${String(expression)} is not read from the answer's body`);
                continue;
              }
              const tokens = pointer.split('/').map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
              const why = missing(doc, response.content?.['application/json']?.schema, tokens);
              if (why !== null) problems.push(`${where}: ${String(expression)}: ${why}`);
            }
          }
        }
      }
    }
    expect(problems).toEqual([]);
    // The links are there: a create's answer leads to the record, a run's to its retry.
    expect(followed).toEqual(
      expect.arrayContaining([
        'POST /portfolios 200 → get_portfolios_id $response.body#/portfolio/id',
        'POST /portfolios 200 → get_portfolios_id $response.body#/portfolio/workspace',
        'POST /custom_indexes 200 → delete_custom_indexes_id $response.body#/custom_index/symbol',
        'GET /secrets/{id} 200 → put_secrets_id $response.body#/secret/workspace',
        'POST /workflows/{id}/run 202 → post_workflows_id_workflow_executions_execution_id_retry $response.body#/workflow_execution/id',
      ]),
    );
    // None from an answer that may lack the record (a staged upload part), or from a nullable field.
    expect(followed.filter((link) => link.startsWith('POST /files ') || link.includes('audit_logs'))).toEqual(
      [],
    );
    // The check itself sees both: an audit record's workflow_id may be null, a staged part has no file.
    const answer = (path: string, method: string) =>
      doc.paths[path]![method].responses['200'].content['application/json'].schema;
    expect(missing(doc, answer('/audit_logs/{id}', 'get'), ['entity', 'workflow_id'])).toBe('may be null');
    expect(missing(doc, answer('/files', 'post'), ['file', 'id'])).toBe('file is not required');
  });

  test('retry_failed states that it needs a period: {} is refused before the workflow is looked up', async () => {
    const doc = await document();
    const [fields, rule] = body(doc, 'post', '/workflows/{id}/retry_failed').allOf;
    expect(Object.keys(fields.properties)).toEqual(['start', 'end', 'date_time', 'limit', 'workspace']);
    expect(rule.anyOf.map((branch: { required: string[] }) => branch.required)).toEqual([
      ['start'],
      ['end'],
      ['date_time'],
    ]);
    const refused = await h.call('POST', `/v2/workflows/wrkf_${'z'.repeat(25)}/retry_failed`, {});
    expect(refused.json()).toEqual({
      code: 400,
      message: 'Give the period whose failed executions to retry: start, end or date_time.',
    });
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
