import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { recordAudit } from '../store/audit-trail';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { checkDescription, checkName, normaliseTags } from '../store/entity-fields';

import { readTemplateFolder } from './template-folder';
import { newTemplateBody, WORKER_TEMPLATE, WORKER_TEMPLATE_ID_PREFIX } from '../kinds/worker-template';
import { SYSTEM_ACCOUNT_ID } from '../identity/system-account';

/**
 * The built-in worker templates: one folder each under plugins/builtin/ (template.json and the
 * script, see template-folder.ts), published at start by the worker and the api processes into the
 * service's own account, which every account reads and none may change.
 *
 * The folder is read as data, by path: engine may not import plugins/ code, and api may not import
 * plugins/ at all, yet both processes publish, so neither depends on which one starts first. The
 * Dockerfile copies plugins/ into the image.
 */
export const BUILTIN_TEMPLATES_DIR = path.resolve(__dirname, '..', '..', 'plugins', 'builtin');

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * A built-in's id is derived from its folder name, so it is the same in every installation and
 * across upgrades: workflows reference built-ins by id.
 */
export function builtinTemplateId(folder: string): string {
  const digest = createHash('sha256').update(`pas-builtin-worker-template:${folder}`).digest();
  let suffix = '';
  for (let i = 0; suffix.length < 25; i++) suffix += ALPHABET[digest[i]! % ALPHABET.length];
  return WORKER_TEMPLATE_ID_PREFIX + suffix;
}

const SERVICE_ACTOR: Actor = {
  principal: {
    accountId: SYSTEM_ACCOUNT_ID,
    userId: '',
    userEmail: 'System',
    isOwner: false,
    permissions: [],
    credentialId: '',
    credentialType: 'API_KEY',
  },
  source: 'UNKNOWN',
  ip: null,
  userAgent: null,
};

export interface PublishedBuiltin {
  folder: string;
  id: string;
  name: string;
  version: number;
  /** What this call did: a process that finds the template unchanged leaves it alone. */
  action: 'created' | 'updated' | 'unchanged';
}

/**
 * Upserts every built-in by its fixed id. Idempotent: the version increases only when the script
 * or the metadata changed. Safe when several processes start at once: the upsert is one statement
 * (ON CONFLICT), and its WHERE re-reads the row under the row lock, so a second process that
 * waited on the first finds nothing left to change. Built-ins dropped from a release are kept, so
 * workflows that reference them keep running.
 */
export async function publishBuiltinTemplates(
  db: Database,
  dir: string = BUILTIN_TEMPLATES_DIR,
): Promise<PublishedBuiltin[]> {
  const folders = (await readdir(dir, { withFileTypes: true }))
    // `_lib` holds the libraries templates include; it is not a template.
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('_'))
    .map((entry) => entry.name)
    .sort();
  const published: PublishedBuiltin[] = [];
  for (const folder of folders) {
    const { input, release } = await readTemplateFolder(path.join(dir, folder));
    const description = checkDescription(input.description);
    const id = builtinTemplateId(folder);
    const body = { ...newTemplateBody(input), release };
    await keepBuiltEnvironment(db, id, body);
    const row = {
      account_id: SYSTEM_ACCOUNT_ID,
      kind: WORKER_TEMPLATE.kind,
      id,
      name: checkName(input.name),
      description,
      tags: normaliseTags(input.tags, description),
      body: JSON.stringify(body),
    };
    published.push(await upsert(db, folder, row));
  }
  return published;
}

/**
 * A built-in Python template whose requirements did not change keeps the environment's state it
 * has (SUCCESS and its log, or a build under way), so a restart neither rebuilds it nor counts a
 * new version.
 */
async function keepBuiltEnvironment(db: Database, id: string, body: Record<string, unknown>): Promise<void> {
  const environment = body.environment as { hash: string } | undefined;
  if (!environment) return;
  const current = (await db('entities')
    .where({ account_id: SYSTEM_ACCOUNT_ID, kind: WORKER_TEMPLATE.kind, id })
    .first('body')) as { body: Record<string, unknown> } | undefined;
  const stored = current?.body.environment as { hash?: string } | undefined;
  if (stored?.hash === environment.hash && current!.body.container_status !== 'ERROR') {
    body.container_status = current!.body.container_status;
    body.environment = stored;
  }
}

async function upsert(
  db: Database,
  folder: string,
  row: {
    account_id: string;
    kind: string;
    id: string;
    name: string;
    description: string | null;
    tags: string[];
    body: string;
  },
): Promise<PublishedBuiltin> {
  return db.transaction(async (trx) => {
    const now = new Date();
    const result = await trx.raw(
      `INSERT INTO entities AS e (account_id, kind, id, workspace, name, description, tags, link_uid, date, body,
                                  created_at, updated_at, version)
       VALUES (?, ?, ?, NULL, ?, ?, ?::text[], NULL, NULL, ?::jsonb, ?, ?, 1)
       ON CONFLICT (account_id, kind, id) DO UPDATE
         SET name = excluded.name, description = excluded.description, tags = excluded.tags,
             body = excluded.body, updated_at = excluded.updated_at, version = e.version + 1
         WHERE (e.name, e.description, e.tags, e.body)
               IS DISTINCT FROM (excluded.name, excluded.description, excluded.tags, excluded.body)
       RETURNING *, (xmax = 0) AS inserted`,
      [row.account_id, row.kind, row.id, row.name, row.description, row.tags, row.body, now, now],
    );
    const written = (result.rows as Array<Record<string, unknown>>)[0];
    if (!written) {
      const current = (await trx('entities')
        .where({ account_id: SYSTEM_ACCOUNT_ID, kind: WORKER_TEMPLATE.kind, id: row.id })
        .first('version')) as { version: number };
      return { folder, id: row.id, name: row.name, version: current.version, action: 'unchanged' };
    }
    const action = written.inserted ? 'created' : 'updated';
    await recordAudit(trx, SERVICE_ACTOR, {
      operation: written.inserted ? 'CREATE' : 'UPDATE',
      activity: `${written.inserted ? 'Published' : 'Republished'} built-in worker template ${row.name}`,
      entityId: row.id,
      entityType: WORKER_TEMPLATE.entityType,
      entityName: row.name,
    });
    return { folder, id: row.id, name: row.name, version: written.version as number, action };
  });
}
