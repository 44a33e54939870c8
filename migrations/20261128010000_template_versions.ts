import type { Knex } from 'knex';

/**
 * Every published version of a worker template's code (the web console's version list,
 * GET /v2/worker_templates/{id}/versions). A trigger on `entities` keeps them, so every way a
 * template is published (the API, `pas templates publish`, the built-ins at start) records its
 * versions in the same transaction. A version is kept when the script or its runtime changed;
 * deleting the template deletes its versions. Existing templates start with their current version.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('worker_template_versions', (t) => {
    t.text('account_id').notNullable();
    t.text('template_id').notNullable();
    t.integer('version').notNullable();
    t.text('script_runtime');
    t.text('script').notNullable();
    t.timestamp('published_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['account_id', 'template_id', 'version']);
  });
  await knex.raw(`
    CREATE FUNCTION pas_keep_template_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        DELETE FROM worker_template_versions WHERE account_id = OLD.account_id AND template_id = OLD.id;
        RETURN NULL;
      END IF;
      IF TG_OP = 'INSERT'
         OR NEW.body->>'script' IS DISTINCT FROM OLD.body->>'script'
         OR NEW.body->>'script_runtime' IS DISTINCT FROM OLD.body->>'script_runtime' THEN
        INSERT INTO worker_template_versions (account_id, template_id, version, script_runtime, script)
        VALUES (NEW.account_id, NEW.id, NEW.version, NEW.body->>'script_runtime', coalesce(NEW.body->>'script', ''))
        ON CONFLICT (account_id, template_id, version) DO UPDATE
          SET script = EXCLUDED.script, script_runtime = EXCLUDED.script_runtime, published_at = now();
      END IF;
      RETURN NULL;
    END
    $$`);
  await knex.raw(`
    CREATE TRIGGER entities_keep_template_version
      AFTER INSERT OR UPDATE ON entities
      FOR EACH ROW WHEN (NEW.kind = 'worker_template')
      EXECUTE FUNCTION pas_keep_template_version()`);
  await knex.raw(`
    CREATE TRIGGER entities_drop_template_versions
      AFTER DELETE ON entities
      FOR EACH ROW WHEN (OLD.kind = 'worker_template')
      EXECUTE FUNCTION pas_keep_template_version()`);
  await knex.raw(`
    INSERT INTO worker_template_versions (account_id, template_id, version, script_runtime, script, published_at)
    SELECT account_id, id, version, body->>'script_runtime', coalesce(body->>'script', ''), updated_at
    FROM entities WHERE kind = 'worker_template'`);
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
