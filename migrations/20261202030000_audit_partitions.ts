import type { Knex } from 'knex';

/**
 * `audit_logs` becomes a table partitioned by RANGE on `created_at`, one partition per UTC month
 * (`audit_logs_2026_12`), so a year of records can be archived and dropped a month at a time
 * (engine/store/audit-archive.ts) instead of growing one table for ever.
 *
 * The filled table is converted in this migration's transaction: renamed aside, a partitioned table
 * made LIKE it (same columns, types, NOT NULLs and defaults), one partition for each month that holds
 * records and for this month and the 3 after it, the rows moved by INSERT … SELECT, the old table
 * dropped. The primary key becomes (id, created_at), since a partitioned key must hold the partition
 * column; ids stay unique (random, 25 characters) and the list's cursor, (created_at, id), is as before.
 *
 * `audit_logs_add_month(date)` makes one month's partition; the service calls it ahead of time
 * (engine/store/audit-partitions.ts). A DEFAULT partition catches a record of a month that has none
 * yet; when that month's partition is made, such records move into it in the same transaction (copied
 * into the month's partition, then taken out of the detached default), so none is ever lost.
 *
 * Immutability holds on every partition: the row trigger refusing UPDATE and DELETE is cloned by
 * PostgreSQL onto each partition, and the TRUNCATE trigger, which is not, is made on each one.
 */
const MONTHS_AHEAD = 3;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE audit_logs RENAME TO audit_logs_unpartitioned;
    CREATE TABLE audit_logs (LIKE audit_logs_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
      PARTITION BY RANGE (created_at);
    CREATE TABLE audit_logs_default PARTITION OF audit_logs DEFAULT;
    CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON audit_logs_default
      FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_immutable();
  `);
  await knex.raw(`
    CREATE FUNCTION audit_logs_add_month(month date) RETURNS boolean LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    DECLARE
      first_day date := date_trunc('month', month)::date;
      partition text := 'audit_logs_' || to_char(first_day, 'YYYY_MM');
      -- Bounds written in UTC, whatever the session's TimeZone and DateStyle.
      lower_bound text := to_char(first_day, 'YYYY-MM-DD') || ' 00:00:00+00';
      upper_bound text := to_char(first_day + interval '1 month', 'YYYY-MM-DD') || ' 00:00:00+00';
    BEGIN
      IF to_regclass(partition) IS NOT NULL THEN
        RETURN false;
      END IF;
      EXECUTE format('CREATE TABLE %I (LIKE audit_logs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', partition);
      EXECUTE format(
        'CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON %I
           FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_immutable()', partition);
      IF EXISTS (SELECT 1 FROM audit_logs_default
                  WHERE created_at >= lower_bound::timestamptz AND created_at < upper_bound::timestamptz) THEN
        -- Records of this month wait in the default: detached (which drops its copy of the row
        -- trigger), it hands them to the month's partition and is attached again, in one transaction.
        ALTER TABLE audit_logs DETACH PARTITION audit_logs_default;
        EXECUTE format('ALTER TABLE audit_logs ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
          partition, lower_bound, upper_bound);
        INSERT INTO audit_logs SELECT * FROM audit_logs_default
         WHERE created_at >= lower_bound::timestamptz AND created_at < upper_bound::timestamptz;
        DELETE FROM audit_logs_default
         WHERE created_at >= lower_bound::timestamptz AND created_at < upper_bound::timestamptz;
        ALTER TABLE audit_logs ATTACH PARTITION audit_logs_default DEFAULT;
      ELSE
        -- ATTACH leaves the parent open to reads and inserts (CREATE … PARTITION OF would lock them out).
        EXECUTE format('ALTER TABLE audit_logs ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
          partition, lower_bound, upper_bound);
      END IF;
      RETURN true;
    END $$;
  `);
  await knex.raw(
    `SELECT audit_logs_add_month(month::date) FROM (
       SELECT DISTINCT date_trunc('month', created_at AT TIME ZONE 'UTC') AS month FROM audit_logs_unpartitioned
       UNION
       SELECT generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'),
                              date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => ?),
                              interval '1 month')
     ) AS months ORDER BY month`,
    [MONTHS_AHEAD],
  );
  // Indexes and keys after the rows are in: one build per partition instead of one insert at a time.
  await knex.raw(`
    INSERT INTO audit_logs SELECT * FROM audit_logs_unpartitioned;
    DROP TABLE audit_logs_unpartitioned;
    ALTER TABLE audit_logs ADD CONSTRAINT audit_logs_pkey PRIMARY KEY (id, created_at);
    ALTER TABLE audit_logs ADD CONSTRAINT audit_logs_account_id_foreign
      FOREIGN KEY (account_id) REFERENCES accounts (id);
    CREATE INDEX audit_logs_account_id_created_at_index ON audit_logs (account_id, created_at);
    CREATE INDEX audit_logs_account_id_user_id_created_at_index ON audit_logs (account_id, user_id, created_at);
    CREATE TRIGGER audit_logs_no_update BEFORE UPDATE OR DELETE ON audit_logs
      FOR EACH ROW EXECUTE FUNCTION audit_logs_immutable();
    CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON audit_logs
      FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_immutable();
  `);
}

/** Back to one plain table holding every record still in a partition (archived months stay archived). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE audit_logs RENAME TO audit_logs_partitioned;
    CREATE TABLE audit_logs (LIKE audit_logs_partitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
    INSERT INTO audit_logs SELECT * FROM audit_logs_partitioned;
    DROP TABLE audit_logs_partitioned;
    DROP FUNCTION audit_logs_add_month(date);
    ALTER TABLE audit_logs ADD CONSTRAINT audit_logs_pkey PRIMARY KEY (id);
    ALTER TABLE audit_logs ADD CONSTRAINT audit_logs_account_id_foreign
      FOREIGN KEY (account_id) REFERENCES accounts (id);
    CREATE INDEX audit_logs_account_id_created_at_index ON audit_logs (account_id, created_at);
    CREATE INDEX audit_logs_account_id_user_id_created_at_index ON audit_logs (account_id, user_id, created_at);
    CREATE TRIGGER audit_logs_no_update BEFORE UPDATE OR DELETE ON audit_logs
      FOR EACH ROW EXECUTE FUNCTION audit_logs_immutable();
    CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON audit_logs
      FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_immutable();
  `);
}
