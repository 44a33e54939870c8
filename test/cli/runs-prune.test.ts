import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createAccount } from '../../engine/identity/account-store';
import type { Database } from '../../engine/platform/database';
import { newId } from '../../engine/platform/ids';
import { pas } from '../support/pas-cli';
import { daysAgo, historyCounts, seedIntegration, seedPayload, seedRun } from '../support/run-history';
import { createTestDatabase } from '../support/test-database';

/** The day 30 days back, as --before takes it. */
const BEFORE = daysAgo(30).toISOString().slice(0, 10);

describe('pas runs prune', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let folder: string;

  beforeEach(async () => {
    database = await createTestDatabase();
    db = database.db;
    folder = mkdtempSync(path.join(tmpdir(), 'pas-runs-prune-'));
  });
  afterEach(async () => {
    await database.drop();
    rmSync(folder, { recursive: true, force: true });
  });

  async function account(name: string): Promise<string> {
    const { accountId } = await createAccount(db, { name, ownerEmail: `${newId('user')}@example.com` });
    return accountId;
  }

  test('removes the finished runs ended before the date, --account limiting it, and says what went', async () => {
    const acme = await account('Acme');
    const other = await account('Other');
    const hook = await seedIntegration(db, acme);
    await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 40 });
    await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 45, stepStatus: 'ERROR' });
    const acmeRecent = await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 2 });
    const otherOld = await seedRun(db, other, { status: 'SUCCEEDED', endedDaysAgo: 40, calls: 3 });
    await seedPayload(db, acme, hook, 31);

    const mine = pas(database.url, 'runs', 'prune', '--before', BEFORE, '--account', acme, '--json');
    expect(mine.stderr).toBe('');
    expect(mine.status).toBe(0);
    const removed = { workflow_executions: 2, worker_executions: 4, sdk_calls: 4, webhook_payloads: 1 };
    expect(JSON.parse(mine.stdout)).toEqual({
      before: `${BEFORE}T00:00:00.000Z`,
      account_id: acme,
      removed,
      accounts: { [acme]: removed },
    });
    expect(new Set(await db('workflow_executions').pluck('id'))).toEqual(
      new Set([acmeRecent.id, otherOld.id]),
    );

    const all = pas(database.url, 'runs', 'prune', '--before', BEFORE);
    expect(all.status).toBe(0);
    expect(all.stdout).toBe(
      `Removed 1 workflow execution(s), 2 worker execution(s), 6 SDK call(s), 0 webhook payload(s) finished before ${BEFORE}T00:00:00.000Z.\n`,
    );
    expect(await db('workflow_executions').pluck('id')).toEqual([acmeRecent.id]);

    const [record] = await db('audit_logs').where({ account_id: acme, operation: 'DELETE' });
    expect(record).toMatchObject({
      source: 'PLATFORM',
      user_email: 'operator (pas CLI)',
      entity_type: 'WorkflowExecution',
      after: { before: `${BEFORE}T00:00:00.000Z`, removed },
    });
    expect(record.activity).toContain('(pas runs prune)');
  });

  test('--archive writes a gzip JSON-lines archive and its manifest, verifies it, then removes what it holds', async () => {
    const acme = await account('Acme');
    const hook = await seedIntegration(db, acme);
    const old = [
      await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 40, steps: 2, calls: 2 }),
      await seedRun(db, acme, {
        status: 'FAILED',
        endedDaysAgo: 50,
        steps: 1,
        calls: 1,
        stepStatus: 'ERROR',
      }),
    ];
    // A retry chain old all through goes whole: the retry, then the run it retried.
    const chainA = await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 55, stepStatus: 'ERROR' });
    const chainB = await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 45, retryOf: chainA.id });
    // Never archived nor removed: still running, or retried by a run that is.
    const running = await seedRun(db, acme, { status: 'RUNNING', endedDaysAgo: null, startedDaysAgo: 60 });
    const retried = await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 60, stepStatus: 'ERROR' });
    const retry = await seedRun(db, acme, { status: 'RUNNING', endedDaysAgo: null, retryOf: retried.id });
    const payload = await seedPayload(db, acme, hook, 40);
    const before = await db('workflow_executions')
      .where({ id: old[0]!.id })
      .first(db.raw("to_json(ended_at) #>> '{}' AS ended_at"), 'parameters', 'run_status');

    const file = path.join(folder, 'runs.jsonl.gz');
    const run = pas(database.url, 'runs', 'prune', '--before', BEFORE, '--archive', file, '--json');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const out = JSON.parse(run.stdout);
    const counts = { workflow_executions: 4, worker_executions: 7, sdk_calls: 9, webhook_payloads: 1 };
    expect(out).toMatchObject({ removed: counts, kept_runs: 0, kept_payloads: 0 });

    // The manifest beside the file: its counts, size and SHA-256.
    const bytes = readFileSync(file);
    const manifest = JSON.parse(readFileSync(`${file}.manifest.json`, 'utf8'));
    expect(manifest).toEqual({
      format: 'pas-run-archive',
      version: 1,
      file: 'runs.jsonl.gz',
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      before: `${BEFORE}T00:00:00.000Z`,
      account_id: null,
      bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      counts,
    });
    expect(out.archive).toEqual({ ...manifest, path: file, manifest_path: `${file}.manifest.json` });

    // The file: a header, then one line per row, json columns exactly as stored.
    const lines = gunzipSync(bytes).toString('utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(JSON.parse(lines[0]!)).toMatchObject({ format: 'pas-run-archive', version: 1, account_id: null });
    const rows = lines
      .slice(1)
      .map((line) => JSON.parse(line) as { table: string; row: Record<string, unknown> });
    const tally: Record<string, number> = {};
    for (const { table } of rows) tally[table] = (tally[table] ?? 0) + 1;
    expect(tally).toEqual(counts);
    const archivedRuns = rows.filter((r) => r.table === 'workflow_executions').map((r) => r.row);
    // Oldest end first.
    expect(archivedRuns.map((r) => r.id)).toEqual([chainA.id, old[1]!.id, chainB.id, old[0]!.id]);
    expect(archivedRuns[3]).toMatchObject({ run_status: before.run_status, parameters: before.parameters });
    // Timestamps as PostgreSQL writes them (microseconds and offset), not as JavaScript would.
    expect(archivedRuns[3]!.ended_at).toBe(before.ended_at);
    expect(before.ended_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+\+00:00$/);
    expect(
      rows.filter((r) => r.table === 'worker_executions').map((r) => r.row.workflow_execution_id),
    ).toEqual([chainA.id, chainA.id, old[1]!.id, chainB.id, chainB.id, old[0]!.id, old[0]!.id]);
    expect(lines.filter((line) => line.includes('"result":{"b": 1, "a": [1]}'))).toHaveLength(7);
    expect(lines.find((line) => line.includes('"table":"webhook_payloads"'))).toContain(`"id":"${payload}"`);
    expect(lines.some((line) => line.includes('"body":{ "z": 1,  "a": "kept as sent" }'))).toBe(true);

    // Removed: exactly what the archive holds.
    expect(new Set(await db('workflow_executions').pluck('id'))).toEqual(
      new Set([running.id, retried.id, retry.id]),
    );
    expect(await historyCounts(db)).toEqual({
      workflow_executions: 3,
      worker_executions: 6,
      sdk_calls: 6,
      webhook_payloads: 0,
    });
    const [record] = await db('audit_logs').where({ account_id: acme, operation: 'DELETE' });
    expect(record.after).toEqual({
      before: `${BEFORE}T00:00:00.000Z`,
      removed: counts,
      archive: { file: 'runs.jsonl.gz', sha256: manifest.sha256 },
    });

    // The archive can be checked later; one changed byte and it no longer verifies.
    const verified = pas(database.url, 'runs', 'verify-archive', file);
    expect(verified.status).toBe(0);
    expect(verified.stdout).toContain(`${file} verifies: ${bytes.length} bytes, SHA-256 ${manifest.sha256}`);
    const damaged = Buffer.from(bytes);
    const middle = Math.floor(damaged.length / 2);
    damaged[middle] = damaged[middle]! ^ 0xff;
    writeFileSync(file, damaged);
    const refused = pas(database.url, 'runs', 'verify-archive', file);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`The archive ${file} does not verify: read back ${bytes.length} bytes`);

    // An existing archive is never overwritten: refused before anything is written or removed.
    await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 40 });
    const again = pas(database.url, 'runs', 'prune', '--before', BEFORE, '--archive', file);
    expect(again.status).toBe(1);
    expect(again.stderr).toBe(`${file} exists already: give the archive a new file name.\n`);
    expect((await historyCounts(db)).workflow_executions).toBe(4);
    expect(readFileSync(file)).toEqual(damaged);
  });

  test.each([
    ['a full disk', '/dev/full', 'ENOSPC'],
    ['a target that reads back differently', '/dev/null', 'does not verify: read back 0 bytes'],
    ['a folder that does not exist', '/nonexistent-pas-folder/runs.jsonl.gz', 'ENOENT'],
  ])('an archive to %s removes nothing', async (_case, target, message) => {
    const acme = await account('Acme');
    const hook = await seedIntegration(db, acme);
    await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 40 });
    await seedRun(db, acme, { status: 'FAILED', endedDaysAgo: 40, stepStatus: 'ERROR' });
    await seedPayload(db, acme, hook, 40);
    const counts = await historyCounts(db);

    const run = pas(database.url, 'runs', 'prune', '--before', BEFORE, '--archive', target);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(message);
    expect(run.stdout).toBe('');
    expect(await historyCounts(db)).toEqual(counts);
    expect(existsSync(`${target}.manifest.json`)).toBe(false);
    expect(await db('audit_logs').where({ operation: 'DELETE' })).toHaveLength(0);
  });

  test('a malformed or future --before, or an unknown account, is refused', async () => {
    const acme = await account('Acme');
    await seedRun(db, acme, { status: 'SUCCEEDED', endedDaysAgo: 40 });
    const cases: Array<[string[], string]> = [
      [
        ['--before', '30 days ago'],
        '--before expects a date (YYYY-MM-DD, UTC) or a date and time with offset (2026-06-30T12:00:00Z), got "30 days ago".\n',
      ],
      [
        ['--before', '2026-02-30'],
        '--before expects a date (YYYY-MM-DD, UTC) or a date and time with offset (2026-06-30T12:00:00Z), got "2026-02-30".\n',
      ],
      [['--before', '2999-01-01'], '--before 2999-01-01 is in the future: give a date up to today.\n'],
      [['--before', BEFORE, '--account', 'acct_nobody'], 'Account acct_nobody not found.\n'],
    ];
    for (const [args, message] of cases) {
      const run = pas(database.url, 'runs', 'prune', ...args);
      expect({ args, status: run.status, stderr: run.stderr }).toEqual({ args, status: 1, stderr: message });
    }
    expect((await historyCounts(db)).workflow_executions).toBe(1);
  });
});
