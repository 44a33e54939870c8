import { performance } from 'node:perf_hooks';
import pg from 'pg';

/**
 * Synthetic records for the records benchmark, made by PostgreSQL itself (`generate_series`), so a
 * year of them takes minutes. Every value derives from the record's number `g` through
 * `hashint8extended`, so a stage inserts exactly what it would have at any chunk size, and the
 * small stage (every 20th record) is a thinned-out copy of the full year, not its first weeks.
 */

/** The records of one account, as the fill writes them: who acts, with which credential. */
export interface FillAccount {
  accountId: string;
  ownerId: string;
  ownerEmail: string;
  apiKeySid: string;
}

/** A stored workflow (created through the API) whose runs the fill writes. */
export interface FillWorkflow {
  accountId: string;
  id: string;
  name: string;
  /** STARTER, BASIC, ENDER worker ids, in that order. */
  workerIds: [string, string, string];
  /** What most of its runs were started by. */
  trigger: 'TIME_BASED' | 'API' | 'MANUAL' | 'FILE_RECEIVED';
  userId: string;
  credentialId: string;
}

/** Shares of the records per account (the first account is the one measured: the largest). */
export const ACCOUNT_SHARES = [0.4, 0.25, 0.15, 0.12, 0.08];
/** The small stage holds every SMALL_EVERY-th record of the full set. */
export const SMALL_EVERY = 20;
const PICK_BUCKETS = 10_000;

/** Which records a stage inserts: every SMALL_EVERY-th (small), or all the others (rest). */
export type FillStage = 'small' | 'rest';

export interface FillSpan {
  /** The first record's time; the last is about `end`. */
  start: Date;
  end: Date;
}

/** `u(g, seed)`: a uniform number in [0, 1) drawn from g; inlined by the planner. */
const UNIFORM = `
  CREATE FUNCTION pg_temp.u(g bigint, seed int) RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  $$ SELECT (hashint8extended(g, seed) & 1048575)::float8 / 1048576 $$`;

/** 13 hex digits of a hash of number g, then g in hex (unique): an id's 25 characters. */
const idTail = (g: string, seed: number) =>
  `lpad(to_hex(hashint8extended(${g}, ${seed}) & 4503599627370495), 13, '0') || lpad(to_hex(${g}), 12, '0')`;
const idOf = (prefix: string, g: string, seed: number) => `'${prefix}' || ${idTail(g, seed)}`;

/**
 * The entities the audit records name, 1024 of each of six kinds per account, made once per fill
 * session with what records about them carry (name, a list page's ids, before and after
 * snapshots), so a record only joins to one: building them per record was half the fill's time.
 */
const ENTITIES = `
  CREATE TEMP TABLE records_bench_entities AS
  SELECT a, t, n, ($1::text[])[a] AS account_id, ($2::text[])[t] AS entity_type, ($3::text[])[t] AS noun,
         ($4::text[])[t] || ${idTail('a * 10000 + t * 1024 + n', 3)} AS entity_id,
         ($5::text[])[t] || ' ' || n AS entity_name
    FROM generate_series(1, cardinality($1::text[])) AS a, generate_series(1, 6) AS t,
         generate_series(0, 1023) AS n`;
const ENTITY_DETAILS = `
  UPDATE records_bench_entities e SET
    listed = (SELECT jsonb_agg(o.entity_id ORDER BY o.n) FROM records_bench_entities o
               WHERE o.a = e.a AND o.t = e.t AND o.n BETWEEN e.n AND e.n + e.n % 10),
    before = jsonb_build_object('name', e.entity_name, 'description', NULL, 'tags', jsonb_build_array('desk'),
               'version', 1 + e.n % 7),
    after = jsonb_build_object('name', e.entity_name, 'description', 'Rebalanced ' || e.n,
               'tags', jsonb_build_array('desk', 'q' || (1 + e.n % 4)), 'version', 2 + e.n % 7)`;

/**
 * One audit record per g: 86 % VIEW (a third of them lists, with the ids they showed), the rest
 * UPDATE, CREATE, EXECUTE, DELETE and LOGIN; 70 % from API keys (python-requests), 25 % from the
 * console (a browser, OAuth 2.0), 5 % by workers (`System`, naming the run); 80 % by the account's
 * owner, the rest by nine other users; 1.5 % ERROR or DENIED. Jsonb as the service writes it: the
 * empty location, small before/after snapshots.
 */
const AUDIT_INSERT = `
  WITH s AS (
    SELECT g,
           pg_temp.u(g, 11) AS u_account, pg_temp.u(g, 12) AS u_op, pg_temp.u(g, 13) AS u_type,
           pg_temp.u(g, 14) AS u_source, pg_temp.u(g, 15) AS u_user, pg_temp.u(g, 16) AS u_status,
           pg_temp.u(g, 17) AS u_time, (hashint8extended(g, 18) & 1023)::int AS n
      FROM generate_series($1::bigint, $2::bigint, $3::bigint) AS g
     WHERE $3 = ${SMALL_EVERY} OR g % ${SMALL_EVERY} <> 0
  ), c AS (
    SELECT s.*,
           CASE WHEN u_account < 0.40 THEN 1 WHEN u_account < 0.65 THEN 2 WHEN u_account < 0.80 THEN 3
                WHEN u_account < 0.92 THEN 4 ELSE 5 END AS a,
           CASE WHEN u_op < 0.57 THEN 'VIEW' WHEN u_op < 0.86 THEN 'LIST' WHEN u_op < 0.92 THEN 'UPDATE'
                WHEN u_op < 0.96 THEN 'CREATE' WHEN u_op < 0.985 THEN 'EXECUTE' WHEN u_op < 0.995 THEN 'DELETE'
                ELSE 'LOGIN' END AS op,
           1 + floor(u_type * 6)::int AS t,
           CASE WHEN u_source < 0.70 THEN 'API' WHEN u_source < 0.95 THEN 'PLATFORM' ELSE 'WORKER' END AS src,
           CASE WHEN u_user < 0.80 THEN 0 ELSE 1 + floor((u_user - 0.80) * 45)::int END AS usr,
           $4::timestamptz + ((g - 1 + u_time) * $5::float8) * interval '1 microsecond' AS at
      FROM s
  )
  INSERT INTO audit_logs (id, account_id, user_id, created_at, activity, operation, source, status,
      entity_id, entity_type, entity_name, workspace, workflow_id, workflow_name, workflow_execution_id,
      user_email, credential_id, credential_type, ip, user_agent, user_agent_pretty, location, viewed_ids,
      before, after)
  SELECT ${idOf('audl_', 'g', 1)}, p.account_id, ($6::text[])[(c.a - 1) * 10 + usr + 1], at,
         CASE op WHEN 'VIEW' THEN 'Viewed ' || p.noun || ' ' || p.entity_name
                 WHEN 'LIST' THEN 'Listed ' || (1 + c.n % 10) || ' ' || p.noun || 's'
                 WHEN 'LOGIN' THEN 'Signed in'
                 ELSE initcap(op) || 'd ' || p.noun || ' ' || p.entity_name END,
         CASE op WHEN 'LIST' THEN 'VIEW' ELSE op END,
         src,
         CASE WHEN src = 'WORKER' OR u_status < 0.985 THEN 'SUCCESS' WHEN u_status < 0.995 THEN 'ERROR' ELSE 'DENIED' END,
         CASE WHEN op IN ('LIST', 'LOGIN') THEN NULL ELSE p.entity_id END,
         CASE WHEN op = 'LOGIN' THEN 'User' ELSE p.entity_type END,
         CASE WHEN op IN ('LIST', 'LOGIN') THEN NULL ELSE p.entity_name END,
         CASE WHEN op = 'LOGIN' THEN NULL ELSE 'main' END,
         CASE WHEN src = 'WORKER' THEN 'wrkf_' || lpad(to_hex(c.a * 64 + c.n % 40), 25, '0') END,
         CASE WHEN src = 'WORKER' THEN 'Nightly refresh ' || c.n % 40 END,
         CASE WHEN src = 'WORKER' THEN ${idOf('wfex_', 'g', 2)} END,
         CASE WHEN src = 'WORKER' THEN 'System' ELSE ($7::text[])[(c.a - 1) * 10 + usr + 1] END,
         CASE WHEN src = 'PLATFORM' THEN 'ocid_' || rpad('console', 25, '0') ELSE ($8::text[])[c.a] END,
         CASE WHEN src = 'PLATFORM' THEN 'OAUTH2' ELSE 'API_KEY' END,
         CASE WHEN src = 'WORKER' THEN NULL ELSE '10.' || c.a || '.' || usr || '.' || (c.n % 250) END,
         CASE src WHEN 'API' THEN 'python-requests/2.32.3'
                  WHEN 'PLATFORM' THEN 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
                  END,
         CASE src WHEN 'API' THEN 'Unknown OS - Python Requests 2.32' WHEN 'PLATFORM' THEN 'Linux - Chrome 131'
                  ELSE 'Unknown OS - Unknown Browser' END,
         '{"country": "", "region": "", "city": "", "cityLatLong": ""}'::jsonb,
         CASE WHEN op = 'LIST' THEN p.listed END,
         CASE WHEN op IN ('UPDATE', 'DELETE') THEN p.before END,
         CASE WHEN op IN ('UPDATE', 'CREATE') THEN p.after END
    FROM c JOIN records_bench_entities p ON p.a = c.a AND p.t = c.t AND p.n = c.n`;

/** Run durations come in this many steps, so a run's `resume` can be one made ahead for its step. */
const DURATION_STEPS = 64;

/**
 * What a workflow's runs carry that does not depend on the run itself, made once per fill session:
 * the `resume` the service writes at a run's close (its steps' counts and times) per workflow,
 * outcome and duration step, and the steps' small jsonb (result, input, one log line).
 */
const RUN_TEMPLATES = `
  CREATE TEMP TABLE records_bench_resumes AS
  SELECT w.idx, s.status, b, 0.4 + 30 * power(b::float8 / ${DURATION_STEPS}, 3) AS seconds,
         jsonb_build_object(
           'worker_executions', jsonb_build_object('total', 3, 'completed', CASE WHEN s.status = 'SUCCEEDED' THEN 3 ELSE 2 END,
             'error', CASE WHEN s.status = 'SUCCEEDED' THEN 0 ELSE 1 END, 'running', 0),
           'workers', jsonb_build_array(
             jsonb_build_object('worker_id', w.starter_id, 'worker_name', 'Start', 'worker_type', 'STARTER', 'executions', 1,
               'completed', 1, 'error', 0, 'duration', round((0.1 * t.seconds)::numeric, 3), 'cpu_time', round((0.05 * t.seconds)::numeric, 3)),
             jsonb_build_object('worker_id', w.basic_id, 'worker_name', 'Compute', 'worker_type', 'BASIC', 'executions', 1,
               'completed', 1, 'error', 0, 'duration', round((0.6 * t.seconds)::numeric, 3), 'cpu_time', round((0.5 * t.seconds)::numeric, 3)),
             jsonb_build_object('worker_id', w.ender_id, 'worker_name', 'End', 'worker_type', 'ENDER', 'executions', 1,
               'completed', CASE WHEN s.status = 'SUCCEEDED' THEN 1 ELSE 0 END, 'error', CASE WHEN s.status = 'SUCCEEDED' THEN 0 ELSE 1 END,
               'duration', round((0.3 * t.seconds)::numeric, 3), 'cpu_time', round((0.05 * t.seconds)::numeric, 3))),
           'parallel_index_max', -1,
           'failure', CASE WHEN s.status = 'SUCCEEDED' THEN NULL ELSE jsonb_build_object('worker_id', w.ender_id,
             'parallel_index', -1, 'worker_execution_id', NULL,
             'message', CASE WHEN s.status = 'FAILED' THEN 'KeyError: ''nav''' ELSE 'Canceled by the user' END) END,
           'ender_result_bytes', 24) AS resume
    FROM records_bench_workflows w,
         (VALUES ('SUCCEEDED'), ('FAILED'), ('CANCELED')) AS s (status),
         generate_series(0, ${DURATION_STEPS - 1}) AS b,
         LATERAL (SELECT 0.4 + 30 * power(b::float8 / ${DURATION_STEPS}, 3) AS seconds) AS t;
  CREATE UNIQUE INDEX ON records_bench_resumes (idx, status, b);
  ANALYZE records_bench_resumes;
  CREATE TEMP TABLE records_bench_step_values AS
  SELECT k, n,
         jsonb_build_object('n', n, 'nav', round((100 + n / 7.0)::numeric, 4)) AS result,
         CASE k WHEN 0 THEN jsonb_build_object('as_of', '2026-06-30', 'n', n) ELSE jsonb_build_object('n', n) END AS input_params,
         jsonb_build_array(jsonb_build_object('level', 'info', 'message', 'step ' || k || ' read ' || n || ' rows')) AS logs
    FROM generate_series(0, 2) AS k, generate_series(0, 999) AS n;
  CREATE UNIQUE INDEX ON records_bench_step_values (k, n);
  ANALYZE records_bench_step_values`;

/**
 * One run per g with its three worker executions (STARTER → BASIC → ENDER), as the service leaves
 * them once ended: 93 % SUCCEEDED, 5 % FAILED (in the ENDER), 2 % CANCELED (a year of history: none
 * still RUNNING). The workflow is drawn from a Zipf-like pick list (a few busy scheduled workflows, many
 * occasional ones); 85 % of a workflow's runs have its usual trigger.
 */
const RUNS_INSERT = `
  WITH r AS MATERIALIZED (
    SELECT g, w.*, b, seconds, ${idOf('wfex_', 'g', 4)} AS run_id, ${idOf('wkex_', 'g * 3 + 2', 5)} AS ender_step_id,
           created_at,
           CASE WHEN u_status < 0.93 THEN 'SUCCEEDED' WHEN u_status < 0.98 THEN 'FAILED' ELSE 'CANCELED' END AS status,
           CASE WHEN u_trigger < 0.85 THEN w.usual_trigger WHEN u_trigger < 0.95 THEN 'MANUAL' ELSE 'API' END AS run_trigger
      FROM (
        SELECT g, pg_temp.u(g, 20) AS u_workflow, pg_temp.u(g, 22) AS u_status, pg_temp.u(g, 23) AS u_trigger,
               floor(pg_temp.u(g, 24) * ${DURATION_STEPS})::int AS b,
               $5::timestamptz + ((g - 1 + pg_temp.u(g, 21)) * $6::float8) * interval '1 microsecond' AS created_at
          FROM generate_series($1::bigint, $2::bigint, $3::bigint) AS g
         WHERE $3 = ${SMALL_EVERY} OR g % ${SMALL_EVERY} <> 0
      ) AS s
      JOIN records_bench_workflows w ON w.idx = ($4::int[])[1 + floor(u_workflow * ${PICK_BUCKETS})::int]
      CROSS JOIN LATERAL (SELECT 0.4 + 30 * power(b::float8 / ${DURATION_STEPS}, 3) AS seconds) AS t
  ), runs AS (
    INSERT INTO workflow_executions (id, account_id, workflow_id, workflow_name, workspace, trigger, run_status,
        started_worker_id, ender_worker_id, ender_worker_execution_id, created_at, updated_at, started_at,
        ended_at, duration, real_execution_time, total_execution_time, resume, parameters, user_id,
        credential_id, credential_type, egress_calls, version)
    SELECT run_id, account_id, workflow_id, workflow_name, 'main', run_trigger, r.status,
           starter_id, ender_id, ender_step_id,
           created_at,
           created_at + r.seconds * interval '1 second',
           created_at + interval '30 milliseconds',
           created_at + r.seconds * interval '1 second',
           r.seconds - 0.03,
           r.seconds * 0.6,
           r.seconds,
           CASE WHEN r.status = 'SUCCEEDED' THEN t.resume
                ELSE jsonb_set(t.resume, '{failure,worker_execution_id}', to_jsonb(ender_step_id)) END,
           '{"as_of": "2026-06-30"}'::jsonb,
           user_id, credential_id, 'API_KEY', 0, 2
      FROM r JOIN records_bench_resumes t ON t.idx = r.idx AND t.status = r.status AND t.b = r.b
  )
  INSERT INTO worker_executions (id, account_id, workflow_execution_id, workflow_id, workflow_name, worker_id,
      worker_name, worker_type, trigger, status, parallel_index, created_at, updated_at, started_at, ended_at,
      duration, cpu_time, result, input_params, logs, error_message, version)
  SELECT ${idOf('wkex_', 'g * 3 + v.k', 5)}, account_id, run_id, workflow_id, workflow_name,
         (ARRAY[starter_id, basic_id, ender_id])[v.k + 1], (ARRAY['Start', 'Compute', 'End'])[v.k + 1],
         (ARRAY['STARTER', 'BASIC', 'ENDER'])[v.k + 1], run_trigger,
         CASE WHEN v.k < 2 OR status = 'SUCCEEDED' THEN 'COMPLETED' ELSE 'ERROR' END,
         -1,
         created_at + (0.03 + (ARRAY[0, 0.1, 0.7])[v.k + 1] * seconds) * interval '1 second',
         created_at + (0.03 + (ARRAY[0.1, 0.7, 1])[v.k + 1] * seconds) * interval '1 second',
         created_at + (0.03 + (ARRAY[0, 0.1, 0.7])[v.k + 1] * seconds) * interval '1 second',
         created_at + (0.03 + (ARRAY[0.1, 0.7, 1])[v.k + 1] * seconds) * interval '1 second',
         (ARRAY[0.1, 0.6, 0.3])[v.k + 1] * seconds,
         (ARRAY[0.05, 0.5, 0.05])[v.k + 1] * seconds,
         CASE WHEN v.k < 2 OR status = 'SUCCEEDED' THEN v.result END,
         v.input_params, v.logs,
         CASE WHEN v.k = 2 AND status = 'FAILED' THEN 'KeyError: ''nav''' WHEN v.k = 2 AND status = 'CANCELED' THEN 'Canceled by the user' END,
         2
    FROM r JOIN records_bench_step_values v ON v.n = r.g % 1000`;

/** How many of `total` records a stage inserts. */
export function stageRows(total: number, stage: FillStage): number {
  const small = Math.floor(total / SMALL_EVERY);
  return stage === 'small' ? small : total - small;
}

/** A filler session: its own connection, triggers off, commits not waited for. */
export async function openFillSession(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  // Replica role skips triggers: the per-row notifications (console, run ends) and the FAILED-run
  // alert rows, which a year of past runs must not raise, and the foreign-key checks, which hold by
  // construction here.
  await client.query(`SET session_replication_role = replica`);
  await client.query(`SET synchronous_commit = off`);
  await client.query(UNIFORM);
  return client;
}

/** A Zipf-like list of workflow indexes (index i drawn ∝ 1/(i+1)): a few busy, many rare. */
function pickList(count: number): number[] {
  const weights = Array.from({ length: count }, (_, i) => 1 / (i + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  const pick: number[] = [];
  let cumulative = 0;
  for (let i = 0; i < count; i++) {
    cumulative += weights[i]! / total;
    while (pick.length < Math.round(cumulative * PICK_BUCKETS)) pick.push(i);
  }
  while (pick.length < PICK_BUCKETS) pick.push(count - 1);
  return pick;
}

/** The workflows, in the run filler's session, for its join. */
export async function loadWorkflows(client: pg.Client, workflows: FillWorkflow[]): Promise<number[]> {
  await client.query(`CREATE TEMP TABLE records_bench_workflows (
    idx int PRIMARY KEY, account_id text, workflow_id text, workflow_name text, usual_trigger text,
    starter_id text, basic_id text, ender_id text, user_id text, credential_id text)`);
  await client.query(
    `INSERT INTO records_bench_workflows
     SELECT i - 1, a[i], w[i], n[i], t[i], s[i], b[i], e[i], u[i], c[i]
       FROM (SELECT $1::text[] a, $2::text[] w, $3::text[] n, $4::text[] t, $5::text[] s, $6::text[] b,
                    $7::text[] e, $8::text[] u, $9::text[] c) AS arrays,
            generate_series(1, cardinality($1::text[])) AS i`,
    [
      workflows.map((w) => w.accountId),
      workflows.map((w) => w.id),
      workflows.map((w) => w.name),
      workflows.map((w) => w.trigger),
      workflows.map((w) => w.workerIds[0]),
      workflows.map((w) => w.workerIds[1]),
      workflows.map((w) => w.workerIds[2]),
      workflows.map((w) => w.userId),
      workflows.map((w) => w.credentialId),
    ],
  );
  await client.query('ANALYZE records_bench_workflows');
  await client.query(RUN_TEMPLATES);
  return pickList(workflows.length);
}

const ENTITY_TYPES = ['Portfolio', 'Datastore', 'Report', 'Workflow', 'CustomIndex', 'File'];
const ENTITY_NOUNS = ['portfolio', 'datastore', 'report', 'workflow', 'custom index', 'file'];
const ENTITY_PREFIXES = ['port_', 'dats_', 'repo_', 'wrkf_', 'cind_', 'file_'];
const ENTITY_NAMES = ['Book', 'Prices', 'Monthly report', 'Rebalance', 'Index', 'Upload'];

/** The owner and nine other users of account number `a`, who act in its records. */
function usersOf(account: FillAccount, a: number): Array<{ id: string; email: string }> {
  return Array.from({ length: 10 }, (_, usr) =>
    usr === 0
      ? { id: account.ownerId, email: account.ownerEmail }
      : {
          id: `user_${(a * 10 + usr).toString(16).padStart(25, '0')}`,
          email: `analyst${usr}@account${a + 1}.example.com`,
        },
  );
}

/** The audit filler's entities (see ENTITIES), in its session. */
export async function loadEntities(client: pg.Client, accounts: FillAccount[]): Promise<void> {
  await client.query(ENTITIES, [
    accounts.map((account) => account.accountId),
    ENTITY_TYPES,
    ENTITY_NOUNS,
    ENTITY_PREFIXES,
    ENTITY_NAMES,
  ]);
  await client.query('CREATE UNIQUE INDEX ON records_bench_entities (a, t, n)');
  await client.query(
    'ALTER TABLE records_bench_entities ADD COLUMN listed jsonb, ADD COLUMN before jsonb, ADD COLUMN after jsonb',
  );
  await client.query(ENTITY_DETAILS);
  await client.query('ANALYZE records_bench_entities');
}

export interface FillProgress {
  rows: number;
  seconds: number;
}

/**
 * Inserts one stage's share of `total` logical records, about `chunkRows` per statement, calling
 * `progress` after each. `kind` chooses the audit trail or the runs (each with its 3 steps; the
 * rows counted are runs).
 */
export async function fillStage(
  client: pg.Client,
  options: {
    kind: 'audit' | 'runs';
    stage: FillStage;
    total: number;
    chunkRows: number;
    span: FillSpan;
    accounts: FillAccount[];
    pick?: number[];
    progress: (done: FillProgress) => void;
  },
): Promise<FillProgress> {
  const { total, stage, span } = options;
  const step = stage === 'small' ? SMALL_EVERY : 1;
  const expected = stageRows(total, stage);
  // Numbers of g per statement; a multiple of SMALL_EVERY keeps the small stage's g on its multiples.
  const chunk =
    Math.max(1, Math.ceil((options.chunkRows * total) / Math.max(1, expected) / SMALL_EVERY)) * SMALL_EVERY;
  const microsPerRecord = ((span.end.getTime() - span.start.getTime()) * 1000) / total;
  const started = performance.now();
  let rows = 0;
  for (let lo = step; lo <= total; lo += chunk) {
    const hi = Math.min(total, lo + chunk - 1);
    const common = [lo, hi, step];
    if (options.kind === 'audit') {
      const users = options.accounts.flatMap((account, a) => usersOf(account, a));
      const result = await client.query(AUDIT_INSERT, [
        ...common,
        span.start.toISOString(),
        microsPerRecord,
        users.map((user) => user.id),
        users.map((user) => user.email),
        options.accounts.map((account) => account.apiKeySid),
      ]);
      rows += result.rowCount ?? 0;
    } else {
      const result = await client.query(RUNS_INSERT, [
        ...common,
        options.pick,
        span.start.toISOString(),
        microsPerRecord,
      ]);
      rows += (result.rowCount ?? 0) / 3;
    }
    options.progress({ rows, seconds: (performance.now() - started) / 1000 });
  }
  return { rows, seconds: (performance.now() - started) / 1000 };
}
