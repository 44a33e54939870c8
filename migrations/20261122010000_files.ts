import type { Knex } from 'knex';

/**
 * File content and multipart uploads.
 *
 * Bytes live in PostgreSQL as bytea rows of at most 1 MiB (`file_chunks`), not as large objects
 * or files on a disk: every api replica sees them with no shared volume, a chunk and the record
 * that points at it commit or roll back in one transaction (an upload that fails half-way leaves
 * nothing behind), and backups and replicas of the database carry them. Large objects would give
 * the same transactions but live outside the account's rows (no cascade, manual unlinking) and
 * need their own dump flags; rows of 1 MiB keep every read and write O(chunk) in memory.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('file_chunks', (t) => {
    t.text('account_id').notNullable().references('accounts.id');
    t.uuid('blob_id').notNullable();
    // Position of the chunk's first byte in its blob: a byte range is an index range scan.
    t.bigInteger('byte_offset').notNullable();
    t.binary('bytes').notNullable();
    t.primary(['blob_id', 'byte_offset']);
  });
  // Out of line and uncompressed: most uploads (xlsx, zip, pdf, images) are compressed already, so
  // pglz would spend CPU for nothing, and uncompressed TOAST reads a slice without the whole value.
  await knex.raw('ALTER TABLE file_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL');

  // One row per multipart upload (`upload_id` chosen by the client, unique per account).
  await knex.schema.createTable('file_uploads', (t) => {
    t.text('account_id').notNullable().references('accounts.id');
    t.text('upload_id').notNullable();
    // `create` (POST /files) or the id of the file whose content a PUT replaces.
    t.text('target').notNullable();
    t.text('workspace').notNullable();
    t.integer('total_parts').notNullable();
    t.integer('parts_received').notNullable();
    t.bigInteger('bytes_received').notNullable();
    // The staged bytes; null once they belong to the file (done) or were freed (aborted, expired).
    t.uuid('blob_id');
    // staged | done | aborted | expired
    t.text('state').notNullable();
    t.text('file_id');
    // Metadata read from part 1 (name, description, tags, content_type, date, link_uid).
    t.jsonb('metadata').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_part_at', { useTz: true }).notNullable();
    t.primary(['account_id', 'upload_id']);
    t.index(['state', 'last_part_at']);
  });

  // `GET /file/<uid>` finds a file by the uid of its URL.
  await knex.raw(
    "CREATE UNIQUE INDEX entities_file_uid ON entities (account_id, (body->>'uid')) WHERE kind = 'file'",
  );
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
