import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAccount } from '../../engine/identity/account-store';
import type { Database } from '../../engine/platform/database';
import { runScript } from '../../plugins/sandbox/script-sandbox';
import { createTestDatabase } from '../support/test-database';
import { pas } from '../support/pas-cli';

const META = {
  name: 'Scaler',
  description: 'Scales the input #math',
  type: 'BASIC',
  version: '1.0.0',
  timeout_seconds: 20,
  form_inputs: [{ id: 'factor', name: 'Factor', type: 'number', default: 2 }],
};
const SCRIPT = [
  'interface Args { inputs: { n: number }; script_inputs: { factor: number } }',
  'export function main(args: Args): { scaled: number } {',
  '  return { scaled: args.inputs.n * args.script_inputs.factor };',
  '}',
  '',
].join('\n');

describe('pas templates publish', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let dir: string;
  const templates = (accountId: string) =>
    db('entities').where({ account_id: accountId, kind: 'worker_template' }).orderBy('created_at');

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    dir = await mkdtemp(path.join(tmpdir(), 'pas-template-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await database.drop();
  });

  test('publishes a folder into the only account, then republishes it by name; prints the id', async () => {
    // The service's own account (built-in templates) exists from the migrations, yet with one real
    // account --account may still be left out.
    const { accountId } = await createAccount(db, { name: 'Desk', ownerEmail: 'cli-templates@example.com' });
    await writeFile(path.join(dir, 'template.json'), JSON.stringify(META));
    await writeFile(path.join(dir, 'script.ts'), SCRIPT);

    const first = pas(database.url, 'templates', 'publish', dir);
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    const id = first.stdout.trim();
    expect(id).toMatch(/^wtpl_[A-Za-z0-9]{25}$/);
    let rows = await templates(accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id,
      name: 'Scaler',
      description: 'Scales the input #math',
      tags: ['math'],
      version: 1,
      body: {
        type: 'BASIC',
        script_runtime: 'typescript',
        script: SCRIPT,
        timeout_seconds: 20,
        memory_limit_mb: null,
        form_inputs: META.form_inputs,
      },
    });
    // Transpiled when published, and the stored JavaScript runs.
    const outcome = await runScript({
      source: rows[0].body.script_compiled,
      args: { inputs: { n: 4 }, script_inputs: { factor: 3 } },
    });
    expect(outcome).toMatchObject({ ok: true, result: { scaled: 12 } });

    // Same name → the same template, republished; fields the folder drops go back to defaults.
    const { timeout_seconds: _dropped, ...rest } = META;
    await writeFile(path.join(dir, 'template.json'), JSON.stringify({ ...rest, type: 'ENDER' }));
    const second = pas(database.url, 'templates', 'publish', dir, '--json');
    expect(second.status).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ id, name: 'Scaler', version: '2', created: false });
    rows = await templates(accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id, version: 2, body: { type: 'ENDER', timeout_seconds: null } });

    // A second account: the choice must be made, and the template lands only there.
    const other = await createAccount(db, { name: 'Other', ownerEmail: 'cli-templates-2@example.com' });
    const ambiguous = pas(database.url, 'templates', 'publish', dir);
    expect(ambiguous.status).toBe(1);
    expect(ambiguous.stderr).toContain('Several accounts exist: pass --account.');
    const third = pas(database.url, 'templates', 'publish', dir, '--account', other.accountId, '--json');
    expect(third.status).toBe(0);
    expect(JSON.parse(third.stdout)).toMatchObject({ name: 'Scaler', version: '1', created: true });
    expect(JSON.parse(third.stdout).id).not.toBe(id);
    expect(await templates(other.accountId)).toHaveLength(1);
    expect(await templates(accountId)).toHaveLength(1);
  }, 120_000);

  test('a TypeScript syntax error fails with the line; a folder without metadata says so', async () => {
    const broken = await mkdtemp(path.join(tmpdir(), 'pas-template-broken-'));
    try {
      await writeFile(path.join(broken, 'template.json'), JSON.stringify({ name: 'Broken' }));
      await writeFile(path.join(broken, 'script.ts'), 'export function main(a: {) {}\n');
      const accounts = (await db('accounts').where({ is_system: false }).select('id')) as Array<{
        id: string;
      }>;
      const res = pas(database.url, 'templates', 'publish', broken, '--account', accounts[0]!.id);
      expect(res.status).toBe(1);
      expect(res.stderr).toMatch(/^script is not valid TypeScript: line 1: /);

      const empty = await mkdtemp(path.join(tmpdir(), 'pas-template-empty-'));
      const missing = pas(database.url, 'templates', 'publish', empty, '--account', accounts[0]!.id);
      await rm(empty, { recursive: true, force: true });
      expect(missing.status).toBe(1);
      expect(missing.stderr).toContain(`${path.join(empty, 'template.json')} is missing.`);
    } finally {
      await rm(broken, { recursive: true, force: true });
    }
  }, 120_000);

  test('metadata the API would refuse is refused with the API’s words, new or republished', async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'pas-template-bad-'));
    try {
      const accounts = (await db('accounts').where({ is_system: false }).select('id')) as Array<{
        id: string;
      }>;
      const account = accounts[0]!.id;
      await writeFile(path.join(folder, 'script.ts'), SCRIPT);
      const publish = async (meta: Record<string, unknown>) => {
        await writeFile(path.join(folder, 'template.json'), JSON.stringify(meta));
        return pas(database.url, 'templates', 'publish', folder, '--account', account);
      };
      const before = await templates(account);
      // A new name: the create schema's rule.
      const created = await publish({ ...META, name: 'Fresh', timeout_seconds: 'soon' });
      expect(created.status).toBe(1);
      expect(created.stderr.trim()).toBe(
        "timeout_seconds must be a whole number from 1 to 600, or null for the service's default.",
      );
      // The published name again: the update schema's rule, before anything is written.
      const republished = await publish({ ...META, memory_limit_mb: 'lots' });
      expect(republished.status).toBe(1);
      expect(republished.stderr.trim()).toMatch(/^memory_limit_mb must be a whole number from \d+ to \d+/);
      const after = await templates(account);
      expect(after.map((row) => [row.id, row.version])).toEqual(before.map((row) => [row.id, row.version]));
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }, 120_000);
});
