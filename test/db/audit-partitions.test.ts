import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Database } from '../../engine/platform/database';
import { migrateLatest } from '../../engine/platform/database';
import { migrationSource } from '../../engine/platform/migrations-source';
import {
  ensureAuditPartitions,
  listAuditPartitions,
  monthOf,
  partitionName,
} from '../../engine/store/audit-partitions';
import { runAuditMaintenance } from '../../engine/store/audit-archive';
import * as auditPartitions from '../../migrations/20261202030000_audit_partitions';
import { auditChecksum, fillAuditLogs } from '../support/audit-fill';
import { createTestAccount } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';
import { useTestApp } from '../support/use-test-app';

const MIGRATION = '20261202030000_audit_partitions';
const IMMUTABLE = /audit log records are immutable/;

/** Where each record lives: its partition's name. */
async function partitionOf(db: Database, where = 'true'): Promise<Record<string, string>> {
  const { rows } = (await db.raw(
    `SELECT id, tableoid::regclass::text AS partition FROM audit_logs WHERE ${where} ORDER BY id`,
  )) as { rows: Array<{ id: string; partition: string }> };
  return Object.fromEntries(rows.map((r) => [r.id, r.partition]));
}

async function triggersOn(db: Database, table: string): Promise<string[]> {
  const { rows } = (await db.raw(
    `SELECT tgname FROM pg_trigger WHERE tgrelid = ?::regclass AND NOT tgisinternal ORDER BY tgname`,
    [table],
  )) as { rows: Array<{ tgname: string }> };
  return rows.map((r) => r.tgname);
}

describe('migration 20261202030000_audit_partitions on a filled table', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let accountId: string;

  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
    // The schema as it stood before this migration, filled in its old (plain) shape.
    const before: Knex.MigrationSource<unknown> = {
      ...(migrationSource as Knex.MigrationSource<unknown>),
      getMigrations: async (loadExtensions) =>
        (await migrationSource.getMigrations(loadExtensions)).filter(([name]) => name < MIGRATION),
    };
    await database.db.migrate.latest({ migrationSource: before });
    accountId = 'acct_MigrationTest000000000';
    await database.db('accounts').insert({ id: accountId, name: 'Migration test', created_at: new Date() });
  });
  afterAll(() => database.drop());

  test('every record comes through unchanged, each in the partition of its UTC month, and immutable', async () => {
    const { db } = database;
    expect((await db.raw(`SELECT relkind FROM pg_class WHERE relname = 'audit_logs'`)).rows).toEqual([
      { relkind: 'r' },
    ]);
    // 20 000 records over 14 months, 31 min 7.654321 s apart: microseconds and month ends included.
    await fillAuditLogs(db, {
      accountId,
      userId: 'user_a',
      from: '2025-09-30T23:59:59.999999Z',
      step: '31 minutes 7.654321 seconds',
      count: 20_000,
      idPrefix: 'audl_mig',
    });
    const before = await auditChecksum(db);
    expect(before.rows).toBe(20_000);

    expect(await migrateLatest(db)).toContain(MIGRATION);

    expect((await db.raw(`SELECT relkind FROM pg_class WHERE relname = 'audit_logs'`)).rows).toEqual([
      { relkind: 'p' },
    ]);
    expect(await auditChecksum(db)).toEqual(before);
    // Each row sits in the partition named after its UTC month; none waits in the default.
    const { rows: misplaced } = await db.raw(
      `SELECT count(*)::int AS n FROM audit_logs
        WHERE tableoid::regclass::text <> 'audit_logs_' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY_MM')`,
    );
    expect(misplaced).toEqual([{ n: 0 }]);
    const months = (await listAuditPartitions(db)).map((p) => p.month);
    expect(months[0]).toBe('2025-09');
    expect(months).toContain('2026-11');
    expect(months.length).toBeGreaterThanOrEqual(15);
    expect(
      (
        await db.raw(
          `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'audit_logs_pkey'`,
        )
      ).rows,
    ).toEqual([{ def: 'PRIMARY KEY (id, created_at)' }]);
    for (const partition of [
      'audit_logs',
      'audit_logs_2025_09',
      'audit_logs_2026_03',
      'audit_logs_default',
    ]) {
      expect(await triggersOn(db, partition)).toEqual(['audit_logs_no_truncate', 'audit_logs_no_update']);
    }
    await expect(
      db('audit_logs').where({ id: 'audl_mig000000000001' }).update({ activity: 'x' }),
    ).rejects.toThrow(IMMUTABLE);
  });

  test('down makes it one plain table again with the same records; up converts it again', async () => {
    const { db } = database;
    const before = await auditChecksum(db);
    await db.transaction((trx) => auditPartitions.down(trx));
    expect((await db.raw(`SELECT relkind FROM pg_class WHERE relname = 'audit_logs'`)).rows).toEqual([
      { relkind: 'r' },
    ]);
    expect(await auditChecksum(db)).toEqual(before);
    await expect(db('audit_logs').del()).rejects.toThrow(IMMUTABLE);
    await db.transaction((trx) => auditPartitions.up(trx));
    expect(await auditChecksum(db)).toEqual(before);
    expect((await db.raw(`SELECT relkind FROM pg_class WHERE relname = 'audit_logs'`)).rows).toEqual([
      { relkind: 'p' },
    ]);
  });
});

describe('the partitioned audit trail', () => {
  const h = useTestApp();

  test('partitions are made for this month and 3 ahead, once, each with both triggers', async () => {
    const made = await ensureAuditPartitions(h.db, new Date('2031-05-31T23:59:59Z'));
    expect(made).toEqual([
      'audit_logs_2031_05',
      'audit_logs_2031_06',
      'audit_logs_2031_07',
      'audit_logs_2031_08',
    ]);
    expect(await ensureAuditPartitions(h.db, new Date('2031-05-31T23:59:59Z'))).toEqual([]);
    for (const partition of made) {
      expect(await triggersOn(h.db, partition)).toEqual(['audit_logs_no_truncate', 'audit_logs_no_update']);
    }
    const { rows } = await h.db.raw(
      `SELECT pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_class c WHERE relname = 'audit_logs_2031_08'`,
    );
    expect(rows).toEqual([
      { bound: "FOR VALUES FROM ('2031-08-01 00:00:00+00') TO ('2031-09-01 00:00:00+00')" },
    ]);
    // Two processes at once: one makes each partition, neither fails.
    const both = await Promise.all([
      ensureAuditPartitions(h.db, new Date('2032-01-15T00:00:00Z')),
      ensureAuditPartitions(h.db, new Date('2032-01-15T00:00:00Z')),
    ]);
    expect(both.flat().sort()).toEqual([
      'audit_logs_2032_01',
      'audit_logs_2032_02',
      'audit_logs_2032_03',
      'audit_logs_2032_04',
    ]);
  });

  test('UPDATE, DELETE and TRUNCATE are refused on the trail, on a month and on the default partition', async () => {
    const owner = { accountId: h.account.accountId, userId: h.account.ownerId };
    const current = partitionName(monthOf(new Date()));
    const next = partitionName(monthOf(new Date(), 1));
    await fillAuditLogs(h.db, {
      ...owner,
      from: new Date().toISOString(),
      step: '1 microsecond',
      count: 3,
      idPrefix: 'audl_imm',
    });
    // Far in the past: no partition of its own, so it waits in the default.
    await fillAuditLogs(h.db, {
      ...owner,
      from: '2001-01-01T00:00:00Z',
      step: '1 second',
      count: 1,
      idPrefix: 'audl_old',
    });
    expect(Object.values(await partitionOf(h.db, `id LIKE 'audl_old%'`))).toEqual(['audit_logs_default']);
    const before = await auditChecksum(h.db);
    const attempts = [
      `UPDATE audit_logs SET activity = 'tampered' WHERE id = 'audl_imm000000000001'`,
      `DELETE FROM audit_logs WHERE id = 'audl_imm000000000001'`,
      `UPDATE ${current} SET activity = 'tampered'`,
      `DELETE FROM ${current}`,
      `UPDATE audit_logs_default SET activity = 'tampered'`,
      `DELETE FROM audit_logs_default`,
      // Moving a record to another month is an UPDATE too.
      `UPDATE audit_logs SET created_at = created_at - interval '1 year' WHERE id = 'audl_imm000000000002'`,
      'TRUNCATE audit_logs',
      `TRUNCATE ${current}`,
      `TRUNCATE ${next}`,
      'TRUNCATE audit_logs_default',
    ];
    for (const sql of attempts) await expect(h.db.raw(sql)).rejects.toThrow(IMMUTABLE);
    expect(await auditChecksum(h.db)).toEqual(before);
  });

  test('records waiting in the default move, unchanged, into the partition made for their month', async () => {
    const owner = { accountId: h.account.accountId, userId: h.account.ownerId };
    await fillAuditLogs(h.db, {
      ...owner,
      from: '2019-03-31T23:59:58Z',
      step: '1 second',
      count: 4,
      idPrefix: 'audl_mv',
    });
    const before = await auditChecksum(h.db, 'audit_logs', `id LIKE 'audl_mv%'`);
    expect(new Set(Object.values(await partitionOf(h.db, `id LIKE 'audl_mv%'`)))).toEqual(
      new Set(['audit_logs_default']),
    );
    const made = await ensureAuditPartitions(h.db);
    expect(made).toEqual(
      expect.arrayContaining(['audit_logs_2001_01', 'audit_logs_2019_03', 'audit_logs_2019_04']),
    );
    expect(await partitionOf(h.db, `id LIKE 'audl_mv%'`)).toEqual({
      audl_mv000000000001: 'audit_logs_2019_03',
      audl_mv000000000002: 'audit_logs_2019_03',
      audl_mv000000000003: 'audit_logs_2019_04',
      audl_mv000000000004: 'audit_logs_2019_04',
    });
    expect(await auditChecksum(h.db, 'audit_logs', `id LIKE 'audl_mv%'`)).toEqual(before);
    expect(await auditChecksum(h.db, 'audit_logs_default')).toEqual({ rows: 0, md5: '' });
    // The default is a partition again, with its triggers.
    expect(await triggersOn(h.db, 'audit_logs_default')).toEqual([
      'audit_logs_no_truncate',
      'audit_logs_no_update',
    ]);
    await fillAuditLogs(h.db, {
      ...owner,
      from: '2002-02-02T00:00:00Z',
      step: '1 second',
      count: 1,
      idPrefix: 'audl_df',
    });
    await expect(h.db.raw(`DELETE FROM audit_logs_default`)).rejects.toThrow(IMMUTABLE);
  });

  test('GET /v2/audit_logs pages across a month boundary alike before and after the months get their partitions', async () => {
    const paging = await createTestAccount(h.db);
    const insert = (id: string, createdAt: string) =>
      h.db('audit_logs').insert({
        id,
        account_id: paging.accountId,
        user_id: paging.ownerId,
        created_at: createdAt,
        activity: 'Inserted by the test',
        operation: 'VIEW',
        source: 'API',
        status: 'SUCCESS',
      });
    const rows: Array<[string, string]> = [
      ['audl_p01', '2024-06-15T12:00:00.000000Z'],
      ['audl_p02', '2024-06-30T23:59:59.999997Z'],
      ['audl_p03', '2024-06-30T23:59:59.999998Z'],
      ['audl_p04', '2024-06-30T23:59:59.999999Z'],
      ['audl_p05', '2024-06-30T23:59:59.999999Z'],
      ['audl_p06', '2024-07-01T00:00:00.000000Z'],
      ['audl_p07', '2024-07-01T00:00:00.000000Z'],
      ['audl_p08', '2024-07-01T00:00:00.000000Z'],
      ['audl_p09', '2024-07-01T00:00:00.000001Z'],
      ['audl_p10', '2024-07-01T00:00:00.000002Z'],
      ['audl_p11', '2024-07-20T08:00:00.000000Z'],
    ];
    for (const [id, createdAt] of rows) await insert(id, createdAt);
    // Most recent first; a tie on created_at goes by id, descending.
    const expected = ['p11', 'p10', 'p09', 'p08', 'p07', 'p06', 'p05', 'p04', 'p03', 'p02', 'p01'].map(
      (n) => `audl_${n}`,
    );

    const pageThrough = async () => {
      const pages: Array<{ ids: string[]; next: string | null }> = [];
      let token: string | null = null;
      do {
        const query: string = `/v2/audit_logs?page_size=3${token ? `&page_token=${token}` : ''}`;
        const res = await h.call('GET', query, undefined, paging);
        expect(res.statusCode).toBe(200);
        const body = res.json() as { audit_logs: Array<{ id: string }>; next_page_token: string | null };
        pages.push({ ids: body.audit_logs.map((e) => e.id), next: body.next_page_token });
        token = body.next_page_token;
      } while (token !== null && pages.length < 20);
      return pages;
    };

    expect(new Set(Object.values(await partitionOf(h.db, `id LIKE 'audl_p%'`)))).toEqual(
      new Set(['audit_logs_default']),
    );
    const inDefault = await pageThrough();
    expect(inDefault.flatMap((p) => p.ids)).toEqual(expected);
    expect(inDefault.map((p) => p.ids.length)).toEqual([3, 3, 3, 2]);

    // A token handed out before the move is still good after it.
    const heldToken = inDefault[1]!.next!;
    await ensureAuditPartitions(h.db);
    expect(new Set(Object.values(await partitionOf(h.db, `id LIKE 'audl_p%'`)))).toEqual(
      new Set(['audit_logs_2024_06', 'audit_logs_2024_07']),
    );
    expect(await pageThrough()).toEqual(inDefault);
    const res = await h.call('GET', `/v2/audit_logs?page_size=3&page_token=${heldToken}`, undefined, paging);
    expect(res.json().audit_logs.map((e: { id: string }) => e.id)).toEqual([
      'audl_p05',
      'audl_p04',
      'audl_p03',
    ]);
    // And a record is still found by id in its partition.
    const one = await h.call('GET', '/v2/audit_logs/audl_p06', undefined, paging);
    expect(one.statusCode).toBe(200);
    expect(one.json().entity.id).toBe('audl_p06');
  });
});

describe('the daily audit job (AUDIT_RETENTION_MONTHS)', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    dir = await mkdtemp(path.join(tmpdir(), 'pas-audit-job-'));
  });
  afterAll(async () => {
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  });

  test('unset keeps every month; set, it archives and drops the months older than it, once', async () => {
    const { db } = database;
    const account = await createTestAccount(db);
    for (const [month, prefix] of [
      ['2026-07', 'audl_j07'],
      ['2026-08', 'audl_j08'],
      ['2026-09', 'audl_j09'],
      ['2026-10', 'audl_j10'],
    ] as const) {
      await fillAuditLogs(db, {
        accountId: account.accountId,
        from: `${month}-03T00:00:00Z`,
        step: '1 hour',
        count: 50,
        idPrefix: prefix,
      });
    }
    const now = new Date('2026-12-10T03:17:00Z');
    const kept = await runAuditMaintenance(db, { retentionMonths: null, archiveDir: dir }, now);
    expect(kept!.partitionsMade).toEqual(
      expect.arrayContaining([
        'audit_logs_2026_07',
        'audit_logs_2026_08',
        'audit_logs_2026_09',
        'audit_logs_2026_10',
      ]),
    );
    expect(kept!.archived).toEqual([]);
    expect(await readdir(dir)).toEqual([]);

    // Two months kept before December: October and November stay, September and older go.
    const report = await runAuditMaintenance(db, { retentionMonths: 2, archiveDir: dir }, now);
    expect(report!.archived.map((m) => [m.month, m.rows, m.dropped])).toEqual([
      ['2026-07', 50, true],
      ['2026-08', 50, true],
      ['2026-09', 50, true],
    ]);
    expect((await readdir(dir)).sort()).toEqual([
      'audit_logs_2026_07.jsonl.gz',
      'audit_logs_2026_07.manifest.json',
      'audit_logs_2026_08.jsonl.gz',
      'audit_logs_2026_08.manifest.json',
      'audit_logs_2026_09.jsonl.gz',
      'audit_logs_2026_09.manifest.json',
    ]);
    const months = (await listAuditPartitions(db)).map((p) => p.month);
    expect(months.filter((month) => month < '2026-10')).toEqual([]);
    expect(months).toEqual(expect.arrayContaining(['2026-10', '2026-12', '2027-01', '2027-02', '2027-03']));
    const records = await db('audit_logs')
      .where({ account_id: account.accountId, entity_type: 'AuditLogArchive' })
      .orderBy('entity_name');
    expect(records.map((r) => [r.operation, r.source, r.user_email, r.entity_name, r.after.records])).toEqual(
      [
        ['DELETE', 'SCHEDULER', 'System', '2026-07', 50],
        ['DELETE', 'SCHEDULER', 'System', '2026-08', 50],
        ['DELETE', 'SCHEDULER', 'System', '2026-09', 50],
      ],
    );
    expect(await runAuditMaintenance(db, { retentionMonths: 2, archiveDir: dir }, now)).toEqual({
      partitionsMade: [],
      archived: [],
    });
  });

  test('a second process finds the archive running and skips', async () => {
    const { db } = database;
    const connection = await db.client.acquireConnection();
    try {
      await db.raw('SELECT pg_advisory_lock(728204117)').connection(connection);
      expect(
        await runAuditMaintenance(
          db,
          { retentionMonths: 1, archiveDir: dir },
          new Date('2026-12-10T03:17:00Z'),
        ),
      ).toBeNull();
    } finally {
      await db.raw('SELECT pg_advisory_unlock(728204117)').connection(connection);
      await db.client.releaseConnection(connection);
    }
  });
});
