import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import type { Database } from '../../engine/platform/database';
import { percentile } from '../measure';

/**
 * The reads the records benchmark times, each through the real API (fetch over loopback) and bare:
 * the SQL statements the API issued for that read, captured from knex's `query` event during a
 * warm-up request, replayed with the same bindings through one `pg` connection. The difference is
 * what the service adds (HTTP, credentials, the rate limit, knex, validation, serialisation).
 */

export interface ReadCase {
  label: string;
  /** Path and query under /v2. */
  path: string;
  /** The tables whose SELECTs are the read (credentials, the rate limit and the like are not). */
  tables: string[];
}

export interface Statement {
  sql: string;
  bindings: unknown[];
}

export interface CaseResult {
  label: string;
  path: string;
  apiP50: number;
  apiP99: number;
  bareP50: number;
  bareP99: number;
  statements: number;
  rows: number;
  plan: string;
}

export type Api = (path: string) => Promise<{ status: number; body: string }>;

/** A GET with the account's API key through fetch; loopback, keep-alive. */
export function apiClient(baseUrl: string, authorization: string): Api {
  return async (path) => {
    const response = await fetch(`${baseUrl}/v2${path}`, { headers: { authorization } });
    return { status: response.status, body: await response.text() };
  };
}

/** Statements `db` runs while `work` runs (this process runs nothing else meanwhile). */
async function captured(db: Database, work: () => Promise<void>): Promise<Statement[]> {
  const statements: Statement[] = [];
  const listener = (query: { sql: string; bindings?: unknown[] }) =>
    statements.push({ sql: query.sql, bindings: [...(query.bindings ?? [])] });
  db.on('query', listener);
  try {
    await work();
  } finally {
    db.off('query', listener);
  }
  return statements;
}

const mentions = (sql: string, table: string) => new RegExp(`\\b"?${table}"?\\b`).test(sql);

/** The read's own statements: SELECTs of its tables, no write. */
function readStatements(all: Statement[], tables: string[]): Statement[] {
  return all.filter(
    (s) =>
      /^\s*(select|with)\b/i.test(s.sql) &&
      !/\b(insert|update|delete)\b/i.test(s.sql) &&
      tables.some((table) => mentions(s.sql, table)),
  );
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

/**
 * One line per statement: its nodes (scans with index and rows), buffers and time, from EXPLAIN
 * (ANALYZE, BUFFERS). A partitioned scan lists each partition it entered.
 */
export async function explain(client: pg.Client, statements: Statement[]): Promise<string> {
  const lines: string[] = [];
  for (const s of statements) {
    const { rows } = await client.query<{
      'QUERY PLAN': Array<{ Plan: PlanNode; 'Execution Time': number }>;
    }>({ text: `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${s.sql}`, values: s.bindings });
    const top = rows[0]!['QUERY PLAN'][0]!;
    const nodes: string[] = [];
    const scans = new Map<string, number>();
    const walk = (node: PlanNode) => {
      if (node['Index Name'] ?? node['Relation Name']) {
        // Partitions' scans of one index are named alike: count them under the parent's pattern.
        const name = (node['Index Name'] ?? node['Relation Name']!).replace(
          /_\d{4}_\d{2}(?=_|$)/,
          '_YYYY_MM',
        );
        const rowsRead = (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1);
        const key = `${node['Node Type']} ${name}`;
        scans.set(key, (scans.get(key) ?? 0) + rowsRead);
      } else if (!['Result', 'Subquery Scan', 'CTE Scan'].includes(node['Node Type'])) {
        nodes.push(node['Node Type']);
      }
      for (const child of node.Plans ?? []) walk(child);
    };
    walk(top.Plan);
    const scanText = [...scans].map(([key, n]) => `${key} (${n} rows)`).join(', ');
    lines.push(
      `${nodes.join(' → ')}${nodes.length ? ' → ' : ''}${scanText}; buffers hit ${top.Plan['Shared Hit Blocks'] ?? 0}, ` +
        `read ${top.Plan['Shared Read Blocks'] ?? 0}; ${top['Execution Time'].toFixed(2)} ms`,
    );
  }
  return lines.join(' ‖ ');
}

/**
 * Warm-up (`warmup` rounds of both), then `requests` rounds, each an API request and the bare
 * statements back to back, alternating which goes first, so load from elsewhere falls on both.
 */
export async function measureCase(
  db: Database,
  api: Api,
  bare: pg.Client,
  read: ReadCase,
  options: { requests: number; warmup: number },
): Promise<CaseResult> {
  const call = async () => {
    const answer = await api(read.path);
    if (answer.status !== 200)
      throw new Error(`GET /v2${read.path} answered ${answer.status}: ${answer.body}`);
  };
  await call();
  const statements = readStatements(await captured(db, call), read.tables);
  if (statements.length === 0)
    throw new Error(`GET /v2${read.path}: no statement on ${read.tables.join(', ')}`);
  let rows = 0;
  const runBare = async () => {
    rows = 0;
    for (const s of statements) rows += (await bare.query({ text: s.sql, values: s.bindings })).rowCount ?? 0;
  };
  for (let i = 0; i < options.warmup; i++) {
    await call();
    await runBare();
  }
  const apiMs: number[] = [];
  const bareMs: number[] = [];
  const timed = async (work: () => Promise<void>, into: number[]) => {
    const t0 = performance.now();
    await work();
    into.push(performance.now() - t0);
  };
  for (let i = 0; i < options.requests; i++) {
    if (i % 2 === 0) {
      await timed(call, apiMs);
      await timed(runBare, bareMs);
    } else {
      await timed(runBare, bareMs);
      await timed(call, apiMs);
    }
  }
  apiMs.sort((a, b) => a - b);
  bareMs.sort((a, b) => a - b);
  return {
    label: read.label,
    path: read.path,
    apiP50: percentile(apiMs, 50),
    apiP99: percentile(apiMs, 99),
    bareP50: percentile(bareMs, 50),
    bareP99: percentile(bareMs, 99),
    statements: statements.length,
    rows,
    plan: await explain(bare, statements),
  };
}

/**
 * The token of page `pages + 1`, following next_page_token from the first page; at a small scale
 * the list may end sooner: then the last page's, and which page that is.
 */
export async function tokenPagesIn(
  api: Api,
  path: string,
  pages: number,
): Promise<{ token: string; page: number }> {
  let last: { token: string; page: number } | null = null;
  const separator = path.includes('?') ? '&' : '?';
  for (let page = 1; page <= pages; page++) {
    const answer = await api(last ? `${path}${separator}page_token=${encodeURIComponent(last.token)}` : path);
    if (answer.status !== 200) throw new Error(`GET /v2${path} answered ${answer.status}: ${answer.body}`);
    const token = (JSON.parse(answer.body) as { next_page_token: string | null }).next_page_token;
    if (!token) break;
    last = { token, page: page + 1 };
  }
  if (!last) throw new Error(`GET /v2${path}: no second page`);
  return last;
}
