import type { Database } from '../../engine/platform/database';

/**
 * Audit records made in the database by generate_series, as the service writes them (texts with
 * newlines, quotes and non-ASCII, NULLs, nested jsonb, microsecond times): `count` records of
 * `accountId` from `from`, one every `step`, ids `<idPrefix><number>`.
 */
export async function fillAuditLogs(
  db: Database,
  options: {
    accountId: string;
    userId?: string | null;
    from: string;
    step: string;
    count: number;
    idPrefix: string;
  },
): Promise<void> {
  await db.raw(
    `INSERT INTO audit_logs (id, account_id, user_id, created_at, activity, operation, source, status,
        entity_id, entity_type, entity_name, workspace, user_email, credential_id, credential_type, ip,
        user_agent, user_agent_pretty, location, viewed_ids, before, after)
     SELECT :prefix || lpad(g::text, 12, '0'), :account, CASE WHEN g % 3 = 0 THEN NULL ELSE :user END,
            :from::timestamptz + (g - 1) * :step::interval,
            'Updated portfolio ' || g || E' – "quoted"\\nsecond line', (ARRAY['CREATE', 'UPDATE', 'VIEW'])[1 + g % 3],
            'API', CASE WHEN g % 11 = 0 THEN 'ERROR' ELSE 'SUCCESS' END,
            'port_' || g, 'Portfolio', 'Book ' || g, 'desk', 'owner@example.com', 'sid_test', 'API_KEY', '10.0.0.' || (g % 250),
            'python-requests/2.32', 'Unknown OS - Unknown Browser',
            '{"country": "", "region": "", "city": "", "cityLatLong": ""}'::jsonb,
            CASE WHEN g % 5 = 0 THEN jsonb_build_array('port_' || g, 'port_' || (g + 1)) END,
            CASE WHEN g % 2 = 0 THEN jsonb_build_object('name', 'Book ' || g, 'weights', jsonb_build_array(g / 7.0, 0.5)) END,
            jsonb_build_object('name', 'Book ' || g, 'tags', jsonb_build_array('a', E'b\\u00e9'), 'n', g)
       FROM generate_series(1, :count) AS g`,
    {
      prefix: options.idPrefix,
      account: options.accountId,
      user: options.userId ?? null,
      from: options.from,
      step: options.step,
      count: options.count,
    },
  );
}

/** Row count and an MD5 of every column of every row of `relation` (in id order), `where` applied. */
export async function auditChecksum(
  db: Database,
  relation = 'audit_logs',
  where = 'true',
): Promise<{ rows: number; md5: string }> {
  const { rows } = (await db.raw(
    `SELECT count(*)::int AS rows, coalesce(md5(string_agg(t::text, E'\\n' ORDER BY t.id, t.created_at)), '') AS md5
       FROM ${relation} t WHERE ${where}`,
  )) as { rows: Array<{ rows: number; md5: string }> };
  return rows[0]!;
}
