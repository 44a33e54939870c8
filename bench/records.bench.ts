import { chmod, mkdtemp, readdir, rm, stat, statfs } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../api/app';
import { createAccount, createApiKey } from '../engine/identity/account-store';
import { connectDatabase, type Database, migrateLatest } from '../engine/platform/database';
import type { Actor } from '../engine/platform/principal';
import { startEmbeddedPostgres } from '../ops/embedded/embedded-postgres';
import { archiveAuditMonths } from '../engine/store/audit-archive';
import { monthOf } from '../engine/store/audit-partitions';
import { type AuditEntry, auditRow, recordAudit } from '../engine/store/audit-trail';
import type { WorkflowRunner } from '../engine/workflows/workflow-runner';
import { noWorkflowSchedules } from '../engine/workflows/workflow-schedules';
import { percentile } from './measure';
import {
  type Api,
  apiClient,
  type CaseResult,
  measureCase,
  type ReadCase,
  tokenPagesIn,
} from './records/cases';
import {
  ACCOUNT_SHARES,
  type FillAccount,
  type FillProgress,
  type FillSpan,
  type FillStage,
  type FillWorkflow,
  fillStage,
  loadEntities,
  loadWorkflows,
  openFillSession,
  SMALL_EVERY,
  stageRows,
} from './records/fill';

/**
 * `npm run bench -- records [--scale=F | --quick] [--requests=N] [--keep]`: a year of records on one
 * PostgreSQL (issue 45). An embedded PostgreSQL in a temporary folder is filled by SQL with 20
 * million audit records over 12 months in 5 accounts and 5 million runs with 15 million steps in 200
 * workflows (× F), in two stages: every 20th record first (1 million audit records, 250,000 runs),
 * measured, then the rest, measured again. Each read is timed through the real API (fetch over
 * loopback) beside the SQL the API issued for it, replayed through `pg` on one connection; the
 * audit insert every audited read makes is timed directly, on the empty database first. Then six
 * months of the trail are archived with the function `pas audit archive` calls, and the space it
 * gave back is measured. `--quick` is `--scale=0.02`; `--keep` leaves the data folder (stopped).
 */
const AUDIT_RECORDS = 20_000_000;
const RUNS = 5_000_000;
const WORKFLOWS = 200;
const ROUNDS = 2;
const WARMUP = 10;
const MB = 1e6;
const TARGET_P50_MS = 12;
const INSERT_RATIO = 1.2;

/**
 * While the fill and its VACUUM run (and only then): checkpoints far apart, no full-page images
 * (PostgreSQL 18 checksums pages, so VACUUM setting hint bits would otherwise write every page to
 * the WAL once more: a throwaway database loses nothing by it), autovacuum off (VACUUM follows).
 */
const FILL_SETTINGS: Array<[string, string]> = [
  ['max_wal_size', '8GB'],
  ['checkpoint_timeout', '30min'],
  ['full_page_writes', 'off'],
  ['autovacuum', 'off'],
];

interface Account extends FillAccount {
  authorization: string;
}

interface Sizes {
  database: number;
  audit: number;
  runs: number;
  steps: number;
}

interface Stage {
  name: string;
  auditRecords: number;
  runs: number;
  fillSeconds: number;
  vacuumSeconds: number;
  sizes: Sizes;
  cases: CaseResult[];
  /** API − bare p50 of each round, per case label: their spread is this stage's noise. */
  roundCosts: Map<string, number[]>;
  insert: InsertTimes;
}

interface InsertTimes {
  currentP50: number;
  currentP99: number;
  filledP50: number;
  filledP99: number;
}

const say = (line: string) => console.error(`[records bench] ${line}`);
const ms = (value: number) => value.toFixed(2);
const gb = (bytes: number) => (bytes / 1e9).toFixed(2);
const count = (n: number) => n.toLocaleString('en-US');
const signed = (bytes: number) => `${bytes >= 0 ? '+' : '−'}${gb(Math.abs(bytes))}`;

function flag(argv: readonly string[], name: string, fallback: number): number {
  const raw = argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

/** YYYYMMDD of a UTC day, as the lists' `start` and `end` take it. */
const ymd = (day: Date) => day.toISOString().slice(0, 10).replaceAll('-', '');

async function sizes(db: Database): Promise<Sizes> {
  const { rows } = (await db.raw(`
    SELECT pg_database_size(current_database()) AS database,
           (SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('audit_logs')) AS audit,
           pg_total_relation_size('workflow_executions') AS runs,
           pg_total_relation_size('worker_executions') AS steps`)) as {
    rows: Array<Record<keyof Sizes, string>>;
  };
  const row = rows[0]!;
  return {
    database: Number(row.database),
    audit: Number(row.audit),
    runs: Number(row.runs),
    steps: Number(row.steps),
  };
}

/** Free bytes (for an unprivileged user) of the file system holding `dir`. */
async function freeBytes(dir: string): Promise<number> {
  const fs = await statfs(dir);
  return fs.bavail * fs.bsize;
}

async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir)) total += (await stat(path.join(dir, name))).size;
  return total;
}

/** The audit insert of a read (recordAudit: a VIEW listing ten ids), timed directly. */
async function measureInserts(
  db: Database,
  actor: Actor,
  filledMonth: Date,
  requests: number,
): Promise<InsertTimes> {
  const entry: AuditEntry = {
    operation: 'VIEW',
    activity: 'Listed 10 portfolios',
    entityId: null,
    entityType: 'Portfolio',
    workspace: 'main',
    viewedIds: Array.from({ length: 10 }, (_, i) => `port_bench${String(i).padStart(20, '0')}`),
  };
  const current: number[] = [];
  const filled: number[] = [];
  for (let i = 0; i < WARMUP; i++) await recordAudit(db, actor, entry);
  for (let i = 0; i < requests; i++) {
    let t0 = performance.now();
    await recordAudit(db, actor, entry);
    current.push(performance.now() - t0);
    // The same record into a month the fill has filled, as a mid-month insert would land.
    const row = { ...auditRow(actor, entry), created_at: new Date(filledMonth.getTime() + i * 1000) };
    t0 = performance.now();
    await db('audit_logs').insert(row);
    filled.push(performance.now() - t0);
  }
  current.sort((a, b) => a - b);
  filled.sort((a, b) => a - b);
  return {
    currentP50: percentile(current, 50),
    currentP99: percentile(current, 99),
    filledP50: percentile(filled, 50),
    filledP99: percentile(filled, 99),
  };
}

async function createWorkflows(app: FastifyInstance, accounts: Account[]): Promise<FillWorkflow[]> {
  const usual: FillWorkflow['trigger'][] = [
    'TIME_BASED',
    'TIME_BASED',
    'TIME_BASED',
    'API',
    'API',
    'MANUAL',
    'FILE_RECEIVED',
  ];
  const workflows: FillWorkflow[] = [];
  for (let i = 0; i < WORKFLOWS; i++) {
    const account = accounts[i % accounts.length]!;
    const ids = ['Start', 'Compute', 'End'].map(
      (_, k) => `wrkr_${String(i).padStart(4, '0')}${String(k).padStart(21, '0')}`,
    );
    const name = `Desk ${i} nightly`;
    const response = await app.inject({
      method: 'POST',
      url: '/v2/workflows',
      headers: { authorization: account.authorization },
      payload: {
        name,
        workers: [
          {
            id: ids[0],
            name: 'Start',
            type: 'STARTER',
            script: 'function main(args) { return { n: 1 }; }',
            next: [ids[1]],
          },
          {
            id: ids[1],
            name: 'Compute',
            type: 'BASIC',
            script: 'function main(args) { return args.inputs; }',
            next: [ids[2]],
          },
          { id: ids[2], name: 'End', type: 'ENDER', script: 'function main(args) { return args.inputs; }' },
        ],
      },
    });
    if (response.statusCode !== 200)
      throw new Error(`storing a workflow answered ${response.statusCode}: ${response.body}`);
    const stored = response.json<{ workflow: { id: string; workers: Array<{ id: string }> } }>().workflow;
    workflows.push({
      accountId: account.accountId,
      id: stored.id,
      name,
      workerIds: [stored.workers[0]!.id, stored.workers[1]!.id, stored.workers[2]!.id],
      trigger: usual[i % usual.length]!,
      userId: account.ownerId,
      credentialId: account.apiKeySid,
    });
  }
  return workflows;
}

/**
 * Both fills at once, each on its own connection (two cores: one statement each), under
 * FILL_SETTINGS; then VACUUM ANALYZE, as autovacuum would leave the tables, so no background vacuum
 * runs while the reads are timed, and the default settings again.
 */
async function fill(
  url: string,
  admin: pg.Client,
  options: {
    stage: FillStage;
    span: FillSpan;
    accounts: Account[];
    workflows: FillWorkflow[];
    scale: number;
  },
): Promise<{ fillSeconds: number; vacuumSeconds: number }> {
  for (const [setting, value] of FILL_SETTINGS) await admin.query(`ALTER SYSTEM SET ${setting} = '${value}'`);
  await admin.query('SELECT pg_reload_conf()');
  const auditSession = await openFillSession(url);
  const runSession = await openFillSession(url);
  const started = performance.now();
  try {
    const [pick] = await Promise.all([
      loadWorkflows(runSession, options.workflows),
      loadEntities(auditSession, options.accounts),
    ]);
    let lastReport = 0;
    const state = { audit: { rows: 0, seconds: 0 }, runs: { rows: 0, seconds: 0 } };
    const expected = {
      audit: stageRows(Math.round(AUDIT_RECORDS * options.scale), options.stage),
      runs: stageRows(Math.round(RUNS * options.scale), options.stage),
    };
    const report = (kind: 'audit' | 'runs') => (done: FillProgress) => {
      state[kind] = done;
      const now = performance.now();
      if (now - lastReport < 10_000 && done.rows < expected[kind]) return;
      lastReport = now;
      const part = (k: 'audit' | 'runs') => {
        const s = state[k];
        const rate = s.seconds > 0 ? s.rows / s.seconds : 0;
        const eta = rate > 0 ? (expected[k] - s.rows) / rate : 0;
        return `${k} ${count(s.rows)}/${count(expected[k])} (${count(Math.round(rate))}/s, ~${Math.ceil(eta / 60)} min left)`;
      };
      say(`${options.stage}: ${part('audit')}, ${part('runs')}, load ${os.loadavg()[0]!.toFixed(1)}`);
    };
    const chunkRows = 200_000;
    await Promise.all([
      fillStage(auditSession, {
        kind: 'audit',
        stage: options.stage,
        total: Math.round(AUDIT_RECORDS * options.scale),
        chunkRows,
        span: options.span,
        accounts: options.accounts,
        progress: report('audit'),
      }),
      fillStage(runSession, {
        kind: 'runs',
        stage: options.stage,
        total: Math.round(RUNS * options.scale),
        chunkRows: chunkRows / 4,
        span: options.span,
        accounts: options.accounts,
        pick,
        progress: report('runs'),
      }),
    ]);
  } finally {
    await auditSession.end();
    await runSession.end();
  }
  const fillSeconds = (performance.now() - started) / 1000;
  say(`${options.stage}: filled in ${fillSeconds.toFixed(0)} s; VACUUM ANALYZE …`);
  const vacuumStarted = performance.now();
  // Two at once, as two autovacuum workers would.
  const vacuums = [['audit_logs'], ['workflow_executions', 'worker_executions']].map(async (tables) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      for (const table of tables) await client.query(`VACUUM (ANALYZE) ${table}`);
    } finally {
      await client.end();
    }
  });
  await Promise.all(vacuums);
  const vacuumSeconds = (performance.now() - vacuumStarted) / 1000;
  for (const [setting] of FILL_SETTINGS) await admin.query(`ALTER SYSTEM RESET ${setting}`);
  await admin.query('SELECT pg_reload_conf()');
  await admin.query('CHECKPOINT');
  say(`${options.stage}: VACUUM ANALYZE took ${vacuumSeconds.toFixed(0)} s`);
  return { fillSeconds, vacuumSeconds };
}

async function readCases(
  api: Api,
  db: Database,
  accountId: string,
  workflowId: string,
  now: Date,
): Promise<ReadCase[]> {
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 6, 1));
  const monthEnd = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 5, 0));
  const period = `start=${ymd(month)}&end=${ymd(monthEnd)}`;
  const sixMonthsAgo = new Date(now.getTime() - 182 * 86_400_000);
  const run = (await db('workflow_executions')
    .where({ account_id: accountId, workflow_id: workflowId })
    .where('created_at', '<', sixMonthsAgo)
    .orderBy('created_at', 'desc')
    .first('id')) as { id: string } | undefined;
  if (!run) throw new Error('no run of the measured workflow six months back');
  const auditToken = await tokenPagesIn(api, '/audit_logs', 50);
  const runsToken = await tokenPagesIn(api, '/workflow_executions', 50);
  const audit = ['audit_logs'];
  const runs = ['workflow_executions'];
  return [
    { label: 'audit logs: first page', path: '/audit_logs', tables: audit },
    {
      label: `audit logs: ${month.toISOString().slice(0, 7)} (six months back)`,
      path: `/audit_logs?${period}`,
      tables: audit,
    },
    {
      label: `audit logs: page ${auditToken.page} (page tokens followed)`,
      path: `/audit_logs?page_token=${encodeURIComponent(auditToken.token)}`,
      tables: audit,
    },
    { label: 'runs: first page, no filter', path: '/workflow_executions', tables: runs },
    {
      label: 'runs: workflow_id (the busiest)',
      path: `/workflow_executions?workflow_id=${workflowId}`,
      tables: runs,
    },
    { label: 'runs: run_status=FAILED', path: '/workflow_executions?run_status=FAILED', tables: runs },
    { label: 'runs: trigger=MANUAL', path: '/workflow_executions?trigger=MANUAL', tables: runs },
    {
      label: `runs: ${month.toISOString().slice(0, 7)} (six months back)`,
      path: `/workflow_executions?${period}`,
      tables: runs,
    },
    {
      label: `runs: page ${runsToken.page} (page tokens followed)`,
      path: `/workflow_executions?page_token=${encodeURIComponent(runsToken.token)}`,
      tables: runs,
    },
    {
      label: "a workflow's executions",
      path: `/workflows/${workflowId}/workflow_executions`,
      tables: ['entities', ...runs],
    },
    {
      label: "one run's steps (six months back)",
      path: `/workflows/${workflowId}/worker_executions?workflow_execution_id=${run.id}`,
      tables: [...runs, 'worker_executions'],
    },
  ];
}

async function measureStage(
  name: string,
  ctx: {
    db: Database;
    api: Api;
    bare: pg.Client;
    account: Account;
    workflowId: string;
    actor: Actor;
    now: Date;
    filledMonth: Date;
    requests: number;
  },
): Promise<Pick<Stage, 'cases' | 'roundCosts' | 'insert'>> {
  const cases = await readCases(ctx.api, ctx.db, ctx.account.accountId, ctx.workflowId, ctx.now);
  const perRound = Math.ceil(ctx.requests / ROUNDS);
  const rounds: CaseResult[][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    say(`${name}: round ${round + 1} of ${ROUNDS} of ${cases.length} reads, ${perRound} requests each`);
    const results: CaseResult[] = [];
    for (const read of cases) {
      results.push(
        await measureCase(ctx.db, ctx.api, ctx.bare, read, { requests: perRound, warmup: WARMUP }),
      );
    }
    rounds.push(results);
  }
  const insert = await measureInserts(ctx.db, ctx.actor, ctx.filledMonth, ctx.requests);
  const merged = cases.map((_, i) => {
    const all = rounds.map((r) => r[i]!);
    const mid = (pick: (c: CaseResult) => number) =>
      all.map(pick).sort((a, b) => a - b)[Math.floor(all.length / 2)]!;
    // The p50 of both rounds' p50s (upper one of two) and the worst p99: conservative.
    return {
      ...all[all.length - 1]!,
      apiP50: mid((c) => c.apiP50),
      bareP50: mid((c) => c.bareP50),
      apiP99: Math.max(...all.map((c) => c.apiP99)),
      bareP99: Math.max(...all.map((c) => c.bareP99)),
    };
  });
  const roundCosts = new Map(
    cases.map((read, i) => [read.label, rounds.map((r) => r[i]!.apiP50 - r[i]!.bareP50)]),
  );
  return { cases: merged, roundCosts, insert };
}

function printStage(stage: Stage): void {
  console.log(
    `\n### ${stage.name}: ${count(stage.auditRecords)} audit records, ${count(stage.runs)} runs, ${count(stage.runs * 3)} steps; ` +
      `database ${gb(stage.sizes.database)} GB\n`,
  );
  console.log(
    '| read | API p50 ms | API p99 ms | bare p50 ms | bare p99 ms | API − bare p50 ms (rounds) | statements | rows |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const c of stage.cases) {
    const costs = stage.roundCosts.get(c.label)!.map(ms).join(', ');
    console.log(
      `| ${c.label} | ${ms(c.apiP50)} | ${ms(c.apiP99)} | ${ms(c.bareP50)} | ${ms(c.bareP99)} | ${ms(c.apiP50 - c.bareP50)} (${costs}) | ${c.statements} | ${c.rows} |`,
    );
  }
  console.log('\nPlans (EXPLAIN ANALYZE of the bare statements, after the timed rounds):\n');
  for (const c of stage.cases) console.log(`- ${c.label}: ${c.plan}`);
  console.log(
    `\nAudit insert (recordAudit, ${stage.name}): p50 ${ms(stage.insert.currentP50)} ms, p99 ${ms(stage.insert.currentP99)} ms; ` +
      `into a filled month: p50 ${ms(stage.insert.filledP50)} ms, p99 ${ms(stage.insert.filledP99)} ms`,
  );
}

export async function runRecordsBench(argv: readonly string[]): Promise<void> {
  // --quick (as every benchmark takes it): a fiftieth of the records, minutes instead of an hour.
  const scale = flag(argv, 'scale', argv.includes('--quick') ? 0.02 : 1);
  const requests = flag(argv, 'requests', 200);
  const keep = argv.includes('--keep');
  const loadAtStart = os.loadavg();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pas-records-bench-'));
  // Run as root, PostgreSQL runs as "postgres" and must enter the folder.
  await chmod(dir, 0o711);
  const dataDir = path.join(dir, 'data');
  const archiveDir = path.join(dir, 'archive');
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  say(`scale ${scale}: PostgreSQL in ${dataDir}`);
  const postgres = await startEmbeddedPostgres({ dataDir, port, database: 'pas' });
  const db = connectDatabase(postgres.url, 10);
  const admin = new pg.Client({ connectionString: postgres.adminUrl });
  const bare = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await bare.connect();
  let app: FastifyInstance | undefined;
  const stages: Stage[] = [];
  let archive: string[] | undefined;
  try {
    await migrateLatest(db);
    const pgVersion = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0]!
      .server_version;
    const accounts: Account[] = [];
    for (let i = 0; i < ACCOUNT_SHARES.length; i++) {
      const ownerEmail = `owner${i + 1}@records-bench.example.com`;
      const { accountId, owner } = await createAccount(db, { name: `Records bench ${i + 1}`, ownerEmail });
      const key = await createApiKey(db, { accountId, userId: owner.id });
      accounts.push({
        accountId,
        ownerId: owner.id,
        ownerEmail,
        apiKeySid: key.account_sid,
        authorization: `Bearer ${key.account_sid}:${key.auth_token}`,
      });
    }
    // The benchmark starts no workflow; a run request would fail loudly rather than pretend.
    const refuse = () => Promise.reject(new Error('workflows are not part of this benchmark'));
    const noWorkflows: WorkflowRunner = {
      start: refuse,
      startedDefinition: refuse,
      schedules: noWorkflowSchedules('workflows are not part of this benchmark'),
    };
    app = await buildApp({
      config: {
        rateLimitPerMinute: 100_000_000,
        maxPayloadBytes: 1024 * 1024,
        logLevel: 'silent',
        trustProxy: false,
        publicUrl: 'http://127.0.0.1',
        loadShedEventLoopDelayMs: 0,
      },
      db,
      workflows: noWorkflows,
    });
    const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    const workflows = await createWorkflows(app, accounts);
    const account = accounts[0]!;
    const workflowId = workflows[0]!.id;
    const api = apiClient(baseUrl, account.authorization);
    const actor: Actor = {
      principal: {
        accountId: account.accountId,
        userId: account.ownerId,
        userEmail: account.ownerEmail,
        isOwner: true,
        permissions: [],
        credentialId: account.apiKeySid,
        credentialType: 'API_KEY',
      },
      source: 'API',
      ip: '127.0.0.1',
      userAgent: 'records-bench',
    };

    // A year up to now, in monthly partitions as the service would have made them month by month.
    const now = new Date();
    const span: FillSpan = { start: new Date(now.getTime() - 365 * 86_400_000), end: now };
    await db.raw(
      `SELECT audit_logs_add_month(m::date) FROM generate_series(date_trunc('month', ?::timestamptz AT TIME ZONE 'UTC'),
         date_trunc('month', now() AT TIME ZONE 'UTC'), interval '1 month') AS m`,
      [span.start.toISOString()],
    );
    const filledMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15));
    const ctx = { db, api, bare, account, workflowId, actor, now, filledMonth, requests };

    const empty = await measureInserts(db, actor, filledMonth, requests);
    say(`empty database: audit insert p50 ${ms(empty.currentP50)} ms`);

    const totalAudit = Math.round(AUDIT_RECORDS * scale);
    const totalRuns = Math.round(RUNS * scale);
    const stageNames: Record<FillStage, string> = {
      small: `small (1/${SMALL_EVERY})`,
      rest: 'full',
    };
    let fillSeconds = 0;
    let vacuumSeconds = 0;
    for (const stage of ['small', 'rest'] as FillStage[]) {
      const filled = await fill(postgres.url, admin, { stage, span, accounts, workflows, scale });
      fillSeconds += filled.fillSeconds;
      vacuumSeconds += filled.vacuumSeconds;
      const measured = await measureStage(stageNames[stage], ctx);
      const result: Stage = {
        name: stageNames[stage],
        auditRecords: stage === 'small' ? Math.floor(totalAudit / SMALL_EVERY) : totalAudit,
        runs: stage === 'small' ? Math.floor(totalRuns / SMALL_EVERY) : totalRuns,
        fillSeconds,
        vacuumSeconds,
        sizes: await sizes(db),
        ...measured,
      };
      stages.push(result);
      printStage(result);
    }

    // Six months of the trail archived and dropped, as `pas audit archive --before` does it.
    const before = monthOf(span.start, 6);
    await admin.query('CHECKPOINT');
    const sizeBefore = await sizes(db);
    const freeBefore = await freeBytes(dataDir);
    const archiveStarted = performance.now();
    const archived = await archiveAuditMonths(db, {
      before,
      dir: archiveDir,
      drop: true,
      source: 'PLATFORM',
      onMonth: (m) => say(`archived ${m.month}: ${count(m.rows)} records, ${(m.bytes / MB).toFixed(0)} MB`),
    });
    const archiveSeconds = (performance.now() - archiveStarted) / 1000;
    await admin.query('CHECKPOINT');
    const sizeAfter = await sizes(db);
    const freeAfter = await freeBytes(dataDir);
    const archiveBytes = await folderBytes(archiveDir);
    const records = archived.reduce((sum, m) => sum + m.rows, 0);
    archive = [
      `| months archived (--before ${before}) | ${archived.map((m) => m.month).join(', ')} |`,
      `| records archived | ${count(records)} |`,
      `| archive time | ${archiveSeconds.toFixed(0)} s (${count(Math.round(records / archiveSeconds))} records/s) |`,
      `| archive files (gzip JSON lines + manifests) | ${(archiveBytes / MB).toFixed(0)} MB |`,
      `| pg_database_size before → after | ${gb(sizeBefore.database)} → ${gb(sizeAfter.database)} GB (−${gb(sizeBefore.database - sizeAfter.database)} GB) |`,
      `| audit_logs (all partitions, indexes) before → after | ${gb(sizeBefore.audit)} → ${gb(sizeAfter.audit)} GB |`,
      `| free space of the data folder's file system (statfs) before → after | ${gb(freeBefore)} → ${gb(freeAfter)} GB (${signed(freeAfter - freeBefore)} GB; the archive files are on it too, and other processes share it) |`,
      `| given back by the dropped months (free-space change + archive files written) | ${signed(freeAfter - freeBefore + archiveBytes)} GB |`,
    ];

    const cpus = os.cpus();
    const loadAtEnd = os.loadavg();
    const [small, full] = stages as [Stage, Stage];
    console.log('\n## Records: a year on one PostgreSQL (issue 45)\n');
    console.log(
      `Machine: ${cpus.length} cores (${cpus[0]?.model ?? 'unknown CPU'}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; ` +
        `Node ${process.version}; PostgreSQL ${pgVersion} (embedded, default settings while measuring); ` +
        `load average (1, 5, 15 min) at start ${loadAtStart.map((l) => l.toFixed(2)).join(' ')}, ` +
        `at end ${loadAtEnd.map((l) => l.toFixed(2)).join(' ')}. Scale ${scale}. API through fetch over loopback ` +
        `(keep-alive), ${requests} requests per read per stage in ${ROUNDS} rounds after ${WARMUP} warm-up requests; ` +
        `bare: the SQL the API issued for that read, replayed with its bindings through one pg connection, ` +
        'each bare read timed right beside an API request.\n',
    );
    console.log(
      '| stage | audit records | runs | steps | database | audit_logs | workflow_executions | worker_executions | fill (cumulative) | VACUUM ANALYZE (cumulative) |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const s of stages) {
      console.log(
        `| ${s.name} | ${count(s.auditRecords)} | ${count(s.runs)} | ${count(s.runs * 3)} | ${gb(s.sizes.database)} GB | ${gb(s.sizes.audit)} GB | ` +
          `${gb(s.sizes.runs)} GB | ${gb(s.sizes.steps)} GB | ${s.fillSeconds.toFixed(0)} s | ${s.vacuumSeconds.toFixed(0)} s |`,
      );
    }
    console.log(
      `\n| read (account with ${ACCOUNT_SHARES[0]! * 100} % of the records, page size 10) | small: API p50 / p99 ms | small: bare p50 | small: API − bare | ` +
        `full: API p50 / p99 ms | full: bare p50 / p99 | full: API − bare | p50 ≤ ${TARGET_P50_MS} ms | API − bare ≤ small's (± rounds' spread) |`,
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    const verdicts = { p50: 0, cost: 0 };
    full.cases.forEach((f, i) => {
      const s = small.cases[i]!;
      const costSmall = s.apiP50 - s.bareP50;
      const costFull = f.apiP50 - f.bareP50;
      const spreadOf = (stage: Stage) => {
        const costs = stage.roundCosts.get(stage.cases[i]!.label)!;
        return Math.max(...costs) - Math.min(...costs);
      };
      const spread = Math.max(spreadOf(small), spreadOf(full));
      const p50Met = f.apiP50 <= TARGET_P50_MS;
      const costMet = costFull <= costSmall + spread;
      verdicts.p50 += p50Met ? 1 : 0;
      verdicts.cost += costMet ? 1 : 0;
      console.log(
        `| ${f.label} | ${ms(s.apiP50)} / ${ms(s.apiP99)} | ${ms(s.bareP50)} | ${ms(costSmall)} | ${ms(f.apiP50)} / ${ms(f.apiP99)} | ` +
          `${ms(f.bareP50)} / ${ms(f.bareP99)} | ${ms(costFull)} | ${p50Met ? 'met' : 'not met'} | ` +
          `${costMet ? 'met' : 'not met'} (${costFull - costSmall >= 0 ? '+' : '−'}${ms(Math.abs(costFull - costSmall))} ms, spread ${ms(spread)}) |`,
      );
    });
    const insertCell = (t: InsertTimes) =>
      `${ms(t.currentP50)} / ${ms(t.currentP99)} | ${ms(t.filledP50)} / ${ms(t.filledP99)}`;
    console.log(
      '\n| audit insert (recordAudit, VIEW of 10 ids), p50 / p99 ms | this month | a filled month (mid-month time) |',
    );
    console.log('|---|---|---|');
    console.log(`| empty database (stage 0) | ${insertCell(empty)} |`);
    for (const s of stages) console.log(`| ${s.name} | ${insertCell(s.insert)} |`);
    const ratio = full.insert.currentP50 / empty.currentP50;
    const ratioFilled = full.insert.filledP50 / empty.filledP50;
    console.log(
      `| full vs empty (target ≤ ${INSERT_RATIO}×) | ×${ratio.toFixed(2)} ${ratio <= INSERT_RATIO ? 'met' : 'not met'} | ` +
        `×${ratioFilled.toFixed(2)} ${ratioFilled <= INSERT_RATIO ? 'met' : 'not met'} |`,
    );
    console.log('\n| archive of six months (archiveAuditMonths, what `pas audit archive` runs) | |');
    console.log('|---|---|');
    for (const line of archive) console.log(line);
    console.log(
      `\nTargets at full size: p50 ≤ ${TARGET_P50_MS} ms met by ${verdicts.p50} of ${full.cases.length} reads; the API's cost over ` +
        `the bare query no larger than at the small stage (within the spread between rounds) for ${verdicts.cost} of ` +
        `${full.cases.length}; the audit insert ×${ratio.toFixed(2)} of the empty database's (target ≤ ${INSERT_RATIO}×). ` +
        'Nothing is asserted.',
    );
  } finally {
    await app?.close();
    await bare.end().catch(() => undefined);
    await admin.end().catch(() => undefined);
    await db.destroy();
    await postgres.stop();
    if (keep) say(`kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
}
