import { SecretsKeyring } from '../../engine/secrets/master-key';
import { newMasterKey } from '../../engine/secrets/secret-crypto';
import { readSecretValue } from '../../engine/secrets/secret-store';
import type { Actor } from '../../engine/platform/principal';
import { createTestAccount, createTestApp, TEST_MASTER_KEY, TEST_SECRETS } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/** A value no other text of the suite holds, so finding it anywhere is a leak. */
const VALUE = 'tok_Zx81vQ-s3cr3t-' + 'a'.repeat(8) + '-9Lm2';

describe('secrets', () => {
  const h = useTestApp();

  const workerActor = (): Actor => ({
    principal: {
      accountId: h.account.accountId,
      userId: h.account.ownerId,
      userEmail: 'System',
      isOwner: false,
      permissions: [],
      credentialId: h.account.key.account_sid,
      credentialType: 'API_KEY',
    },
    source: 'WORKER',
    ip: null,
    userAgent: null,
    workflow: { id: 'wrkf_x', name: 'Nightly', executionId: 'wfex_x' },
  });

  /** Every text column of every row of the database, as one string. */
  async function wholeDatabaseText(): Promise<string> {
    const tables = (await h.db.raw(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
    )) as { rows: Array<{ table_name: string }> };
    let text = '';
    for (const { table_name } of tables.rows) {
      const rows = (await h.db.raw(`SELECT t::text AS row FROM "${table_name}" t`)) as {
        rows: Array<{ row: string }>;
      };
      text += rows.rows.map((r) => r.row).join('\n');
    }
    return text;
  }

  test('create answers the secret without its value; the row holds it sealed; CREATE is audited without it', async () => {
    const res = await h.call('POST', '/v2/secrets', {
      name: 'VENDOR_TOKEN',
      value: VALUE,
      description: 'Price vendor',
      settings: { ignored: true },
    });
    expect(res.statusCode).toBe(200);
    const { secret } = res.json();
    expect(secret).toEqual({
      id: expect.stringMatching(/^secr_[A-Za-z0-9]{25}$/),
      name: 'VENDOR_TOKEN',
      workspace: 'main',
      description: 'Price vendor',
      version: '1',
      created: expect.any(Number),
      updated: expect.any(Number),
    });
    expect(res.body).not.toContain(VALUE);
    const row = await h.db('secrets').where({ id: secret.id }).first();
    expect(row.ciphertext.length).toBe(12 + 16 + Buffer.byteLength(VALUE));
    expect(row.key_id).toBe(TEST_SECRETS.keyIds()[0]);
    const [record] = await h.db('audit_logs').where({ entity_id: secret.id, operation: 'CREATE' });
    expect(record).toMatchObject({ entity_type: 'Secrets', entity_name: 'VENDOR_TOKEN', source: 'API' });
    expect(record.after).toMatchObject({ name: 'VENDOR_TOKEN', version: '1' });
    expect(await wholeDatabaseText()).not.toContain(VALUE);
  });

  test('a name is unique per account and workspace; other workspaces and accounts may reuse it', async () => {
    const first = await h.call('POST', '/v2/secrets', { name: 'DUP', value: 'one' });
    expect(first.statusCode).toBe(200);
    const again = await h.call('POST', '/v2/secrets', { name: 'DUP', value: 'two' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({
      code: 409,
      message: 'A secret named DUP already exists in workspace main.',
    });
    await h.call('POST', '/v2/workspaces', { name: 'desk2' });
    const other = await h.call('POST', '/v2/secrets', { name: 'DUP', value: 'three', workspace: 'desk2' });
    expect(other.statusCode).toBe(200);
    const stranger = await createTestAccount(h.db);
    const theirs = await h.call('POST', '/v2/secrets', { name: 'DUP', value: 'four' }, stranger);
    expect(theirs.statusCode).toBe(200);
  });

  test.each([
    ['a name starting with a digit', { name: '1ABC', value: 'x' }, 'name'],
    ['a name with a dash', { name: 'A-B', value: 'x' }, 'name'],
    ['a name of 65 characters', { name: 'A'.repeat(65), value: 'x' }, 'name'],
    ['an empty value', { name: 'OK', value: '' }, 'value'],
    ['a value that is a number', { name: 'OK', value: 12345 }, 'value'],
    ['no value', { name: 'OK' }, 'value'],
  ])('%s is a 400 naming the field, and nothing is stored', async (_case, body, field) => {
    const before = await h.db('secrets').count<{ count: string }[]>('* as count');
    const res = await h.call('POST', '/v2/secrets', body);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe(400);
    expect(res.json().message).toContain(field);
    expect(await h.db('secrets').count<{ count: string }[]>('* as count')).toEqual(before);
  });

  test('a value over 64 KiB is refused without echoing it', async () => {
    const big = 'Q'.repeat(65_537);
    const res = await h.call('POST', '/v2/secrets', { name: 'BIG', value: big });
    expect(res.statusCode).toBe(400);
    expect(res.body).not.toContain('QQQQQQQQ');
  });

  test('retrieve, list and paging show no value; reads are audited as VIEW', async () => {
    await h.call('POST', '/v2/workspaces', { name: 'paging' });
    const ids: string[] = [];
    for (const name of ['P_A', 'P_B', 'P_C']) {
      const res = await h.call('POST', '/v2/secrets', { name, value: VALUE, workspace: 'paging' });
      ids.push(res.json().secret.id);
    }
    const one = await h.call('GET', `/v2/secrets/${ids[0]}?workspace=paging`);
    expect(one.statusCode).toBe(200);
    expect(one.json().secret.name).toBe('P_A');
    expect(one.body).not.toContain(VALUE);
    const wrongWorkspace = await h.call('GET', `/v2/secrets/${ids[0]}`);
    expect(wrongWorkspace.statusCode).toBe(404);

    const page1 = await h.call('GET', '/v2/secrets?workspace=paging&page_size=2');
    expect(page1.statusCode).toBe(200);
    expect(page1.json().secrets.map((s: { name: string }) => s.name)).toEqual(['P_C', 'P_B']);
    const token = page1.json().next_page_token as string;
    const page2 = await h.call('GET', `/v2/secrets?workspace=paging&page_size=2&page_token=${token}`);
    expect(page2.json()).toEqual({
      secrets: [expect.objectContaining({ name: 'P_A' })],
      next_page_token: null,
    });
    const byPrefix = await h.call('GET', '/v2/secrets?workspace=paging&query=P_B');
    expect(byPrefix.json().secrets.map((s: { name: string }) => s.name)).toEqual(['P_B']);
    expect(page1.body + page2.body).not.toContain(VALUE);

    const views = await h
      .db('audit_logs')
      .where({ entity_type: 'Secrets', operation: 'VIEW', workspace: 'paging' });
    expect(views.map((v) => v.activity)).toEqual(
      expect.arrayContaining(['Viewed secret P_A', 'Listed 2 secrets', 'Listed 1 secrets']),
    );
  });

  test('a new value raises version and reads back; a description alone does not; renaming is refused', async () => {
    const created = (await h.call('POST', '/v2/secrets', { name: 'ROTATED', value: 'old-value-1' })).json()
      .secret;
    const described = await h.call('PUT', `/v2/secrets/${created.id}`, { description: 'now described' });
    expect(described.json().secret).toMatchObject({ version: '1', description: 'now described' });
    const rotated = await h.call('PUT', `/v2/secrets/${created.id}`, { value: 'new-value-2' });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().secret).toMatchObject({ version: '2', description: 'now described' });
    const read = await readSecretValue(h.db, TEST_SECRETS, workerActor(), 'main', 'ROTATED', 'step x');
    expect(read).toMatchObject({ value: 'new-value-2', version: 2 });
    const rename = await h.call('PUT', `/v2/secrets/${created.id}`, { name: 'OTHER' });
    expect(rename.statusCode).toBe(400);
    const sameName = await h.call('PUT', `/v2/secrets/${created.id}`, { name: 'ROTATED', description: 'x' });
    expect(sameName.statusCode).toBe(200);
    const records = await h
      .db('audit_logs')
      .where({ entity_id: created.id, operation: 'UPDATE', status: 'SUCCESS' })
      .orderBy('created_at');
    expect(records.map((r) => r.activity)).toEqual([
      'Updated secret ROTATED',
      'Updated secret ROTATED (new value)',
      'Updated secret ROTATED',
    ]);
    expect(JSON.stringify(records)).not.toContain('new-value-2');
  });

  test('delete answers {secret: {deleted, id, name}}; the name is free again; another account gets 404', async () => {
    const created = (await h.call('POST', '/v2/secrets', { name: 'GONE', value: 'v' })).json().secret;
    const stranger = await createTestAccount(h.db);
    expect((await h.call('DELETE', `/v2/secrets/${created.id}`, undefined, stranger)).statusCode).toBe(404);
    expect((await h.call('GET', `/v2/secrets/${created.id}`, undefined, stranger)).statusCode).toBe(404);
    expect((await h.call('PUT', `/v2/secrets/${created.id}`, { value: 'x' }, stranger)).statusCode).toBe(404);
    const res = await h.call('DELETE', `/v2/secrets/${created.id}`);
    expect(res.json()).toEqual({ secret: { deleted: true, id: created.id, name: 'GONE' } });
    expect((await h.call('GET', `/v2/secrets/${created.id}`)).statusCode).toBe(404);
    expect((await h.call('POST', '/v2/secrets', { name: 'GONE', value: 'v2' })).statusCode).toBe(200);
    const [record] = await h
      .db('audit_logs')
      .where({ entity_id: created.id, operation: 'DELETE', status: 'SUCCESS' });
    expect(record).toMatchObject({ entity_type: 'Secrets', activity: 'Deleted secret GONE' });
  });

  test('a step reads a value by name in its workspace: one VIEW record, source WORKER, with the run ids', async () => {
    await h.call('POST', '/v2/secrets', { name: 'STEP_READ', value: VALUE });
    const read = await readSecretValue(
      h.db,
      TEST_SECRETS,
      workerActor(),
      'main',
      'STEP_READ',
      'sdk.secret in step Fetch',
    );
    expect(read.value).toBe(VALUE);
    const [record] = await h.db('audit_logs').where({ entity_name: 'STEP_READ', source: 'WORKER' });
    expect(record).toMatchObject({
      operation: 'VIEW',
      entity_type: 'Secrets',
      user_email: 'System',
      workflow_id: 'wrkf_x',
      workflow_name: 'Nightly',
      workflow_execution_id: 'wfex_x',
      activity: 'Read secret STEP_READ (sdk.secret in step Fetch)',
    });
    await expect(
      readSecretValue(h.db, TEST_SECRETS, workerActor(), 'other', 'STEP_READ', 'x'),
    ).rejects.toThrow('Secret STEP_READ not found in workspace other.');
  });

  test('under another master key a read says which key it needs, never garbage; the rest of the API works', async () => {
    await h.call('POST', '/v2/secrets', { name: 'WRONG_KEY', value: VALUE });
    const other = SecretsKeyring.fromKeys([newMasterKey()]);
    const error = await readSecretValue(h.db, other, workerActor(), 'main', 'WRONG_KEY', 'x').catch(
      (e: Error) => e,
    );
    expect(error).toMatchObject({ status: 503 });
    expect((error as Error).message).toContain(
      `Secret WRONG_KEY cannot be read: it was stored under master key ${TEST_SECRETS.keyIds()[0]}, and this service holds ${other.keyIds()[0]}`,
    );
    // A keyring holding both (a rotation under way) reads it.
    const both = SecretsKeyring.fromKeys([newMasterKey(), TEST_MASTER_KEY]);
    expect((await readSecretValue(h.db, both, workerActor(), 'main', 'WRONG_KEY', 'x')).value).toBe(VALUE);
  });

  test('an app without a master key answers 503 to a new secret, saying why, and lists still work', async () => {
    const bare = await createTestApp(h.db, {
      secrets: SecretsKeyring.unavailable('SECRETS_KEY_FILE /nowhere/secrets.key cannot be read (ENOENT)'),
    });
    try {
      const res = await bare.app.inject({
        method: 'POST',
        url: '/v2/secrets',
        payload: { name: 'NO_KEY', value: 'v' },
        headers: { authorization: h.account.bearer },
      });
      expect(res.statusCode).toBe(503);
      expect(res.json().message).toBe(
        'Secrets cannot be stored or read: SECRETS_KEY_FILE /nowhere/secrets.key cannot be read (ENOENT). Set SECRETS_KEY or SECRETS_KEY_FILE (docs/integrations.md).',
      );
      const list = await bare.app.inject({
        method: 'GET',
        url: '/v2/secrets',
        headers: { authorization: h.account.bearer },
      });
      expect(list.statusCode).toBe(200);
    } finally {
      await bare.close();
    }
  });

  test('no value of this suite is anywhere in the database, in clear or Base64', async () => {
    const text = await wholeDatabaseText();
    expect(text).not.toContain(VALUE);
    expect(text).not.toContain(Buffer.from(VALUE).toString('base64'));
    expect(text).not.toContain(Buffer.from(VALUE).toString('hex'));
  });
});
