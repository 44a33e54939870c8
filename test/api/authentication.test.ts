import { createOAuthClient, revokeApiKey } from '../../engine/identity/account-store';
import { createTestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

describe('authentication', () => {
  const h = useTestApp();

  const list = (headers: Record<string, string> = {}, query = '') =>
    h.app.inject({ method: 'GET', url: `/v2/workspaces${query}`, headers });

  const unauthorized = { code: 401, message: 'Unauthorized: missing or invalid credentials.' };

  test('no Authorization header → 401 {code, message}', async () => {
    const res = await list();
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(unauthorized);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
  });

  test('wrong token → 401', async () => {
    const res = await list({ authorization: `Bearer ${h.account.key.account_sid}:wrong-token` });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(unauthorized);
  });

  test('unknown SID → 401', async () => {
    const res = await list({
      authorization: `Bearer sid_AAAAAAAAAAAAAAAAAAAAAAAAA:${h.account.key.auth_token}`,
    });
    expect(res.statusCode).toBe(401);
  });

  test('malformed header → 401', async () => {
    for (const header of [
      'Token abc',
      'Bearer',
      'Basic !!!notbase64',
      'Basic ' + Buffer.from('nocolon').toString('base64'),
    ]) {
      const res = await list({ authorization: header });
      expect(res.statusCode).toBe(401);
    }
  });

  test('Bearer SID:TOKEN → 200', async () => {
    const res = await list({ authorization: h.account.bearer });
    expect(res.statusCode).toBe(200);
    expect(res.json().workspaces.map((w: { name: string }) => w.name)).toEqual(['main']);
  });

  test('HTTP Basic with the same pair → 200', async () => {
    const basic = Buffer.from(`${h.account.key.account_sid}:${h.account.key.auth_token}`).toString('base64');
    const res = await list({ authorization: `Basic ${basic}` });
    expect(res.statusCode).toBe(200);
  });

  test('revoked key → 401', async () => {
    const other = await createTestAccount(h.db);
    expect((await list({ authorization: other.bearer })).statusCode).toBe(200);
    await revokeApiKey(h.db, other.key.account_sid);
    const res = await list({ authorization: other.bearer });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(unauthorized);
  });

  test('`key` on the query string of a non-webhook route → 401', async () => {
    const res = await list({}, `?key=${h.account.key.auth_token}`);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(unauthorized);
  });

  test('a present Authorization header wins over `key`', async () => {
    const ok = await list({ authorization: h.account.bearer }, '?key=garbage');
    expect(ok.statusCode).toBe(200);
    const bad = await list({ authorization: 'Bearer sid_x:y' }, `?key=${h.account.key.auth_token}`);
    expect(bad.statusCode).toBe(401);
  });

  describe('OAuth 2.0 client credentials', () => {
    let client: { client_id: string; client_secret: string };
    beforeAll(async () => {
      client = await createOAuthClient(h.db, { accountId: h.account.accountId, name: 'reporting job' });
    });

    test('form-encoded token request → bearer token that authenticates', async () => {
      const token = await h.app.inject({
        method: 'POST',
        url: '/v2/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type=client_credentials&client_id=${client.client_id}&client_secret=${client.client_secret}`,
      });
      expect(token.statusCode).toBe(200);
      const body = token.json();
      expect(body).toEqual({
        access_token: expect.stringMatching(/^oat_/),
        token_type: 'Bearer',
        expires_in: 3600,
      });
      const res = await list({ authorization: `Bearer ${body.access_token}` });
      expect(res.statusCode).toBe(200);
    });

    test('client credentials as HTTP Basic, JSON body', async () => {
      const basic = Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64');
      const token = await h.app.inject({
        method: 'POST',
        url: '/v2/oauth/token',
        headers: { authorization: `Basic ${basic}` },
        payload: { grant_type: 'client_credentials' },
      });
      expect(token.statusCode).toBe(200);
    });

    test('wrong secret → 401; wrong grant → 400; unknown access token → 401', async () => {
      const wrong = await h.app.inject({
        method: 'POST',
        url: '/v2/oauth/token',
        payload: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: 'nope' },
      });
      expect(wrong.statusCode).toBe(401);
      expect(wrong.json().code).toBe(401);
      const grant = await h.app.inject({
        method: 'POST',
        url: '/v2/oauth/token',
        payload: { grant_type: 'password', client_id: client.client_id, client_secret: client.client_secret },
      });
      expect(grant.statusCode).toBe(400);
      expect(grant.json().message).toMatch(/unsupported_grant_type/);
      expect((await list({ authorization: 'Bearer oat_doesnotexist' })).statusCode).toBe(401);
    });
  });

  test('signing in writes LOGIN, revoking writes LOGOUT and the token stops working', async () => {
    const client = await createOAuthClient(h.db, { accountId: h.account.accountId, name: 'session test' });
    const form = (extra: string) => ({
      method: 'POST' as const,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'python-requests/2.32' },
      payload: `client_id=${client.client_id}&client_secret=${client.client_secret}&${extra}`,
    });
    const issued = await h.app.inject({ ...form('grant_type=client_credentials'), url: '/v2/oauth/token' });
    const token = issued.json().access_token as string;
    const [login] = await h.db('audit_logs').where({ credential_id: client.client_id, operation: 'LOGIN' });
    expect(login).toMatchObject({
      entity_type: 'UserEvent',
      entity_id: h.account.ownerId,
      credential_type: 'OAUTH2',
      source: 'API',
      user_agent_pretty: 'Unknown OS - Python Requests',
    });
    expect((await list({ authorization: `Bearer ${token}` })).statusCode).toBe(200);

    const revoked = await h.app.inject({ ...form(`token=${token}`), url: '/v2/oauth/revoke' });
    expect(revoked.json()).toEqual({ revoked: true });
    expect((await list({ authorization: `Bearer ${token}` })).statusCode).toBe(401);
    const logouts = await h.db('audit_logs').where({ credential_id: client.client_id, operation: 'LOGOUT' });
    expect(logouts).toHaveLength(1);

    // Revoking again (or an unknown token) answers the same and records nothing.
    const again = await h.app.inject({ ...form(`token=${token}`), url: '/v2/oauth/revoke' });
    expect(again.json()).toEqual({ revoked: true });
    expect(
      await h.db('audit_logs').where({ credential_id: client.client_id, operation: 'LOGOUT' }),
    ).toHaveLength(1);
    const wrongClient = await h.app.inject({
      method: 'POST',
      url: '/v2/oauth/revoke',
      payload: { token, client_id: client.client_id, client_secret: 'wrong' },
    });
    expect(wrongClient.statusCode).toBe(401);
  });

  test('tokens are stored hashed, never in clear', async () => {
    const rows = await h.db('api_keys').where({ sid: h.account.key.account_sid });
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(h.account.key.auth_token);
    expect(rows[0].token_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  test('health_check needs no credentials', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/v2/health_check' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      api_status: 'OK',
      version: 'v2',
      name: 'Portfolio Analytics Service',
    });
    // The test app passes no backend: calculations run on the plain reference model.
    expect(res.json().calculation_backend).toMatchObject({ name: 'reference', chosen_by: 'configured' });
  });
});
