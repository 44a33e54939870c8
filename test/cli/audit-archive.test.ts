import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Database } from '../../engine/platform/database';
import { listAuditPartitions, monthOf } from '../../engine/store/audit-partitions';
import { auditChecksum, fillAuditLogs } from '../support/audit-fill';
import { pas } from '../support/pas-cli';
import { createTestAccount, type TestAccount } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

const IMMUTABLE = /audit log records are immutable/;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const COLUMNS = [
  'id',
  'account_id',
  'user_id',
  'created_at',
  'activity',
  'operation',
  'source',
  'status',
  'entity_id',
  'entity_type',
  'entity_name',
  'workspace',
  'workflow_id',
  'workflow_name',
  'workflow_execution_id',
  'user_email',
  'proxy_admin_email',
  'credential_id',
  'credential_type',
  'ip',
  'user_agent',
  'user_agent_pretty',
  'location',
  'viewed_ids',
  'before',
  'after',
];

describe('pas audit archive and restore', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let dir: string;
  let account: TestAccount;
  let other: TestAccount;
  /** Count and checksum of each month's records before anything is archived. */
  const before: Record<string, { rows: number; md5: string }> = {};
  const inMonth = (month: string) =>
    `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM') = '${month}' AND entity_type IS DISTINCT FROM 'AuditLogArchive'`;
  const files = (month: string) => {
    const base = path.join(dir, `audit_logs_${month.replace('-', '_')}`);
    return { data: `${base}.jsonl.gz`, manifest: `${base}.manifest.json` };
  };
  const archiveRecords = (month: string) =>
    db('audit_logs').where({ entity_type: 'AuditLogArchive', entity_name: month }).orderBy('account_id');
  const partitionMonths = async () => (await listAuditPartitions(db)).map((p) => p.month);

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    dir = await mkdtemp(path.join(tmpdir(), 'pas-audit-archive-'));
    account = await createTestAccount(db);
    other = await createTestAccount(db);
    // 2 500 records from 10 January to 29 March 2025, and 100 of another account in February; all wait
    // in the default partition until the archive gives their months partitions of their own.
    await fillAuditLogs(db, {
      accountId: account.accountId,
      userId: account.ownerId,
      from: '2025-01-10T00:00:00.000001Z',
      step: '45 minutes 0.123457 seconds',
      count: 2_500,
      idPrefix: 'audl_a',
    });
    await fillAuditLogs(db, {
      accountId: other.accountId,
      from: '2025-02-14T00:00:00Z',
      step: '1 hour',
      count: 100,
      idPrefix: 'audl_b',
    });
    for (const month of ['2025-01', '2025-02', '2025-03'])
      before[month] = await auditChecksum(db, 'audit_logs', inMonth(month));
  });
  afterAll(async () => {
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  });

  test('archive --before 2025-03 writes, verifies and drops January and February, and records it per account', async () => {
    const run = pas(database.url, 'audit', 'archive', '--before', '2025-03', '--dir', dir);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(`2025-01: ${before['2025-01']!.rows} records → ${files('2025-01').data} (`);
    expect(run.stdout).toContain('archive verified; audit_logs_2025_02 dropped.');

    const data = await readFile(files('2025-02').data);
    const content = gunzipSync(data);
    const manifest = JSON.parse(await readFile(files('2025-02').manifest, 'utf8'));
    expect(manifest).toEqual({
      format: 'pas-audit-archive',
      format_version: 1,
      table: 'audit_logs',
      partition: 'audit_logs_2025_02',
      month: '2025-02',
      file: 'audit_logs_2025_02.jsonl.gz',
      rows: before['2025-02']!.rows,
      first_created_at: expect.stringMatching(/^2025-02-01T00:\d\d:\d\d\.\d{6}Z$/),
      last_created_at: expect.stringMatching(/^2025-02-28T23:\d\d:\d\d\.\d{6}Z$/),
      bytes: data.length,
      sha256_gzip: sha256(data),
      sha256_content: sha256(content),
      columns: COLUMNS.map((name) => ({
        name,
        type: expect.stringMatching(/^(text|timestamp with time zone|jsonb)$/),
      })),
      order: ['account_id', 'created_at', 'id'],
      archived_at: expect.any(String),
    });
    // One record per line, every column, timestamps to the microsecond in UTC.
    const lines = content.toString('utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(before['2025-02']!.rows);
    const first = JSON.parse(lines[0]!);
    expect(Object.keys(first)).toEqual(COLUMNS);
    expect(first.created_at).toMatch(/^2025-02-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?\+00:00$/);

    // January and February are gone from the trail; March stays.
    const months = await partitionMonths();
    expect(months).not.toContain('2025-01');
    expect(months).not.toContain('2025-02');
    expect(months).toContain('2025-03');
    expect(await auditChecksum(db, 'audit_logs', inMonth('2025-01'))).toEqual({ rows: 0, md5: '' });
    expect(await auditChecksum(db, 'audit_logs', inMonth('2025-03'))).toEqual(before['2025-03']);

    // Each account whose records went finds a record of it in its own trail.
    const february = await archiveRecords('2025-02');
    const byAccount = Object.fromEntries(february.map((r) => [r.account_id, r]));
    expect(Object.keys(byAccount).sort()).toEqual([account.accountId, other.accountId].sort());
    expect(byAccount[other.accountId]).toMatchObject({
      operation: 'DELETE',
      source: 'PLATFORM',
      status: 'SUCCESS',
      user_id: null,
      user_email: 'operator (pas CLI)',
      user_agent: 'pas audit archive',
      entity_id: 'audit_logs_2025_02',
      entity_type: 'AuditLogArchive',
      activity:
        'Archived 100 audit log records of 2025-02 to audit_logs_2025_02.jsonl.gz and dropped the month from the trail',
      after: {
        month: '2025-02',
        table: 'audit_logs',
        partition: 'audit_logs_2025_02',
        records: 100,
        records_all_accounts: before['2025-02']!.rows,
        file: 'audit_logs_2025_02.jsonl.gz',
        sha256_gzip: manifest.sha256_gzip,
        sha256_content: manifest.sha256_content,
        first_created_at: manifest.first_created_at,
        last_created_at: manifest.last_created_at,
      },
    });
    expect(byAccount[account.accountId].after.records).toBe(before['2025-02']!.rows - 100);
    expect((await archiveRecords('2025-01')).map((r) => r.account_id)).toEqual([account.accountId]);
  }, 180_000);

  test('restore brings a month back read-only as audit_archive.audit_logs_YYYY_MM, equal to what was archived', async () => {
    const run = pas(database.url, 'audit', 'restore', files('2025-02').manifest);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(
      `2025-02: ${before['2025-02']!.rows} records restored into audit_archive.audit_logs_2025_02`,
    );
    expect(await auditChecksum(db, 'audit_archive.audit_logs_2025_02')).toEqual(before['2025-02']);
    for (const sql of [
      `UPDATE audit_archive.audit_logs_2025_02 SET activity = 'tampered'`,
      'DELETE FROM audit_archive.audit_logs_2025_02',
      'TRUNCATE audit_archive.audit_logs_2025_02',
    ])
      await expect(db.raw(sql)).rejects.toThrow(IMMUTABLE);
    // The live trail (and so the API) is not touched.
    expect(await auditChecksum(db, 'audit_logs', inMonth('2025-02'))).toEqual({ rows: 0, md5: '' });

    const again = pas(database.url, 'audit', 'restore', files('2025-02').data);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('audit_archive.audit_logs_2025_02 is already restored');

    const listed = pas(database.url, 'audit', 'partitions', '--json');
    expect(listed.status).toBe(0);
    expect(JSON.parse(listed.stdout).restored).toEqual([
      { month: '2025-02', table: 'audit_archive.audit_logs_2025_02' },
    ]);
    const dropped = pas(database.url, 'audit', 'drop-restored', '2025-02');
    expect(dropped.stdout).toBe('Dropped audit_archive.audit_logs_2025_02.\n');
    expect((await db.raw(`SELECT to_regclass('audit_archive.audit_logs_2025_02') AS t`)).rows).toEqual([
      { t: null },
    ]);
  }, 180_000);

  test('a short, altered or mismatching archive is refused before anything is dropped', async () => {
    const kept = pas(database.url, 'audit', 'archive', '--before', '2025-04', '--dir', dir, '--no-drop');
    expect(kept.stderr).toBe('');
    expect(kept.status).toBe(0);
    expect(kept.stdout).toContain('archive verified; kept in the trail (--no-drop).');
    expect(await partitionMonths()).toContain('2025-03');
    expect(await archiveRecords('2025-03')).toEqual([]);

    const { data, manifest } = files('2025-03');
    const original = await readFile(data);
    const originalManifest = await readFile(manifest, 'utf8');
    const refusedAndKept = async (expected: RegExp) => {
      const run = pas(database.url, 'audit', 'archive', '--before', '2025-04', '--dir', dir);
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(expected);
      expect(await partitionMonths()).toContain('2025-03');
      expect(await auditChecksum(db, 'audit_logs', inMonth('2025-03'))).toEqual(before['2025-03']);
      expect(await archiveRecords('2025-03')).toEqual([]);
    };

    // Short: the last 100 bytes lost.
    await writeFile(data, original.subarray(0, original.length - 100));
    await refusedAndKept(/audit_logs_2025_03\.jsonl\.gz: holds \d+ bytes; its manifest says \d+\./);
    const restoreShort = pas(database.url, 'audit', 'restore', data);
    expect(restoreShort.status).toBe(1);
    expect((await db.raw(`SELECT to_regclass('audit_archive.audit_logs_2025_03') AS t`)).rows).toEqual([
      { t: null },
    ]);

    // Altered: one byte in the middle, same size.
    const altered = Buffer.from(original);
    const middle = altered.length >> 1;
    altered[middle] = altered[middle]! ^ 0x40;
    await writeFile(data, altered);
    await refusedAndKept(/audit_logs_2025_03\.jsonl\.gz: (is not a whole gzip file|.*SHA-256)/);

    // Consistent with its own manifest, but one record short of the month: the partition says no.
    const lines = gunzipSync(original).toString('utf8').split('\n').slice(1).join('\n');
    const forged = gzipSync(Buffer.from(lines, 'utf8'));
    const forgedManifest = {
      ...JSON.parse(originalManifest),
      rows: before['2025-03']!.rows - 1,
      bytes: forged.length,
      sha256_gzip: sha256(forged),
      sha256_content: sha256(Buffer.from(lines, 'utf8')),
    };
    await writeFile(data, forged);
    await writeFile(manifest, JSON.stringify(forgedManifest));
    await refusedAndKept(
      new RegExp(
        `holds ${before['2025-03']!.rows - 1} records .* but partition audit_logs_2025_03 holds ${before['2025-03']!.rows} `,
      ),
    );

    // The file as it was written: checked against the month again, then the month goes.
    await writeFile(data, original);
    await writeFile(manifest, originalManifest);
    const run = pas(database.url, 'audit', 'archive', '--before', '2025-04', '--dir', dir);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('existing archive verified; audit_logs_2025_03 dropped.');
    expect(await partitionMonths()).not.toContain('2025-03');
    expect(await archiveRecords('2025-03')).toHaveLength(1);

    const restored = pas(database.url, 'audit', 'restore', data);
    expect(restored.status).toBe(0);
    expect(await auditChecksum(db, 'audit_archive.audit_logs_2025_03')).toEqual(before['2025-03']);
  }, 300_000);

  test('a month that still takes records, or no month at all, is refused', async () => {
    const current = pas(database.url, 'audit', 'archive', '--before', monthOf(new Date(), 1), '--dir', dir);
    expect(current.status).toBe(1);
    expect(current.stderr).toContain('is after the current month');
    const malformed = pas(database.url, 'audit', 'archive', '--before', '2025-13', '--dir', dir);
    expect(malformed.status).toBe(1);
    expect(malformed.stderr).toBe('--before must be a month as YYYY-MM, got "2025-13".\n');
    const nothing = pas(database.url, 'audit', 'archive', '--before', '2025-01', '--dir', dir);
    expect(nothing.status).toBe(0);
    expect(nothing.stdout).toBe('No month before 2025-01 is in the trail.\n');
    expect(existsSync(path.join(dir, 'audit_logs_2024_12.jsonl.gz'))).toBe(false);
    expect((await stat(dir)).isDirectory()).toBe(true);
  }, 120_000);
});
