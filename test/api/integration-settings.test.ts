import { useTestApp } from '../support/use-test-app';

/** HTTP and SMTP integrations: their settings, defaults, rules across fields and updates. */
describe('HTTP and SMTP integrations', () => {
  const h = useTestApp();
  const { call } = h;

  test('an HTTP integration: defaults filled in, its secrets named, nothing secret stored', async () => {
    const res = await call('POST', '/v2/integrations', {
      name: 'Prices vendor',
      type: 'HTTP',
      base_url: 'https://api.vendor.test/v1',
      headers: { Authorization: 'Bearer {{secret:VENDOR_TOKEN}}', Accept: 'application/json' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().integration).toMatchObject({
      type: 'HTTP',
      base_url: 'https://api.vendor.test/v1',
      headers: { Authorization: 'Bearer {{secret:VENDOR_TOKEN}}', Accept: 'application/json' },
      timeout_ms: 10000,
      allowed_methods: ['GET', 'POST'],
      allow_http: false,
      host: null,
      webhook_path: null,
      secrets_used: ['VENDOR_TOKEN'],
    });
  });

  test('an SMTP integration: port from its security, password from a secret', async () => {
    const res = await call('POST', '/v2/integrations', {
      name: 'Mail relay',
      type: 'SMTP',
      host: 'smtp.example.com',
      security: 'tls',
      username: 'risk@example.com',
      password_secret: 'SMTP_PASSWORD',
      from: 'Risk desk <risk@example.com>',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().integration).toMatchObject({
      type: 'SMTP',
      host: 'smtp.example.com',
      port: 465,
      security: 'tls',
      timeout_ms: 10000,
      base_url: null,
      secrets_used: ['SMTP_PASSWORD'],
    });
    const starttls = await call('POST', '/v2/integrations', {
      name: 'Relay 2',
      type: 'SMTP',
      host: 'smtp.example.com',
      from: 'ops@example.com',
    });
    expect(starttls.json().integration).toMatchObject({ security: 'starttls', port: 587 });
  });

  test('a chat webhook URL whose path is the credential takes it from a secret', async () => {
    const res = await call('POST', '/v2/integrations', {
      name: 'Chat',
      type: 'HTTP',
      base_url: 'https://hooks.chat.test/services/{{secret:CHAT_HOOK_PATH}}',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().integration.secrets_used).toEqual(['CHAT_HOOK_PATH']);
  });

  test.each([
    [{ type: 'HTTP' }, 'base_url is required for an HTTP integration: https://host/base/path.'],
    [
      { type: 'HTTP', base_url: 'http://api.vendor.test' },
      'base_url uses http: set allow_http to true to send in the clear, or use https.',
    ],
    [
      { type: 'HTTP', base_url: 'https://user:pw@api.vendor.test' },
      'base_url must not hold a user or password: put them in a header from a secret.',
    ],
    [
      { type: 'HTTP', base_url: 'https://{{secret:HOST}}/x' },
      'base_url may take {{secret:NAME}} in its path only, never in its host.',
    ],
    [
      { type: 'HTTP', base_url: 'https://api.vendor.test', headers: { Authorization: 'Bearer abc123' } },
      'headers.Authorization holds a credential: store it as a secret and write {{secret:NAME}} (e.g. "Bearer {{secret:VENDOR_TOKEN}}").',
    ],
    [
      { type: 'HTTP', base_url: 'https://api.vendor.test', headers: { 'X-Api-Key': 'k' } },
      'headers.X-Api-Key holds a credential: store it as a secret and write {{secret:NAME}} (e.g. "Bearer {{secret:VENDOR_TOKEN}}").',
    ],
    [
      { type: 'HTTP', base_url: 'https://api.vendor.test', headers: { Host: 'evil.test' } },
      'headers.Host is set by the service and cannot be given.',
    ],
    [
      { type: 'HTTP', base_url: 'https://api.vendor.test', headers: { 'X-Trace': 'a\r\nInjected: 1' } },
      'headers.X-Trace must be a header value of at most 8192 characters without CR, LF or NUL.',
    ],
    // Every key a header name (it was a patterned record key, which let any other key through: with
    // a number as its value, a 500).
    [
      { type: 'HTTP', base_url: 'https://api.vendor.test', headers: { 'bad name': 5 } },
      "headers has a key that is not a header name (1 to 100 letters, digits or !#$%&'*+.^_`|~-).",
    ],
    [
      { type: 'HTTP', base_url: 'https://api.vendor.test', headers: { 'X-Desk': 'risk', 'x\u0000y': 'v' } },
      "headers has a key that is not a header name (1 to 100 letters, digits or !#$%&'*+.^_`|~-).",
    ],
    [
      { type: 'HTTP', base_url: 'https://api.vendor.test', host: 'smtp.example.com' },
      'host is a setting of SMTP integrations, not HTTP.',
    ],
    [{ type: 'SMTP', from: 'a@b.c' }, 'host is required for an SMTP integration.'],
    [
      { type: 'SMTP', host: 'smtp.example.com' },
      'from is required for an SMTP integration: the sender address.',
    ],
    [
      { type: 'SMTP', host: 'smtp.example.com', from: 'a@b.c', password_secret: 'PW' },
      'password_secret needs a username to log in with.',
    ],
    [
      { type: 'WEBHOOK', base_url: 'https://api.vendor.test' },
      'base_url is not a setting of a WEBHOOK integration.',
    ],
    [
      { type: 'HTTP', base_url: 'https://api.vendor.test', timeout_ms: 60001 },
      'timeout_ms must be an integer from 1 to 60000.',
    ],
  ])('create %j → 400 naming the rule, nothing stored', async (body, message) => {
    const before = await h.db('entities').where({ kind: 'integration' }).count({ n: '*' });
    const res = await call('POST', '/v2/integrations', { name: 'Refused', ...body });
    expect(res.json()).toEqual({ code: 400, message });
    expect(await h.db('entities').where({ kind: 'integration' }).count({ n: '*' })).toEqual(before);
  });

  test('update: settings change, null goes back to the default, the type never changes', async () => {
    const created = (
      await call('POST', '/v2/integrations', {
        name: 'Editable',
        type: 'HTTP',
        base_url: 'https://api.vendor.test',
        timeout_ms: 5000,
        allowed_methods: ['GET'],
      })
    ).json().integration;
    const changed = await call('PUT', `/v2/integrations/${created.id}`, {
      base_url: 'https://api2.vendor.test/v2',
      headers: { 'X-Desk': 'risk' },
      timeout_ms: null,
    });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().integration).toMatchObject({
      base_url: 'https://api2.vendor.test/v2',
      headers: { 'X-Desk': 'risk' },
      timeout_ms: 10000,
      allowed_methods: ['GET'],
      version: '2',
    });
    const retyped = await call('PUT', `/v2/integrations/${created.id}`, { type: 'SMTP' });
    expect(retyped.json()).toEqual({
      code: 400,
      message: 'type cannot change (this integration is HTTP): create another.',
    });
    const stored = await call('GET', `/v2/integrations/${created.id}`);
    expect(stored.json().integration.base_url).toBe('https://api2.vendor.test/v2');
  });
});
