import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import type { EntityRecord } from '../store/entity-store';
import { InvalidInput } from '../platform/errors';
import { createResource, updateResource, validateRequest } from '../store/resource-kind';
import { WORKER_TEMPLATE, type WorkerTemplateInput } from '../kinds/worker-template';

/**
 * A worker template as a folder: `template.json` (the metadata: name, description, type, tags,
 * category, form_inputs, script_entry_point, memory_limit_mb, timeout_seconds, version, and
 * optionally `script`, the script's file name) beside the script (`script.ts`, `script.js` or
 * `script.py` when the metadata names none). The runtime follows the script's extension (`.py`:
 * python3.11), and a Python template's requirements come from `requirements.txt` beside it (or the
 * metadata's `requirements` list, not both). The built-in templates in
 * plugins/builtin/ and `pas templates publish <folder>` both read this layout.
 */
export const METADATA_FILE = 'template.json';
const SCRIPT_FILES = ['script.ts', 'script.js', 'script.py'];
/** A Python template's requirements, one specifier a line (`#` comments and blank lines skipped). */
export const REQUIREMENTS_FILE = 'requirements.txt';

export interface TemplateFolder {
  input: WorkerTemplateInput;
  /** The metadata's `version` (a release label such as 1.2.0); the stored version is a counter. */
  release: string | null;
}

const METADATA_FIELDS = [
  'name',
  'description',
  'tags',
  'category',
  'visible',
  'type',
  'script_entry_point',
  'form_inputs',
  'memory_limit_mb',
  'timeout_seconds',
] as const;

async function scriptFileOf(dir: string, named: unknown): Promise<string> {
  if (named !== undefined) {
    // The script lives in the folder: a name, not a path that could reach elsewhere.
    if (typeof named !== 'string' || path.basename(named) !== named || !/\.(ts|js|py)$/.test(named)) {
      throw new InvalidInput(
        `${METADATA_FILE}: script must be a file name in the folder ending .ts, .js or .py.`,
      );
    }
    return named;
  }
  const present = (await readdir(dir)).filter((file) => SCRIPT_FILES.includes(file));
  if (present.length !== 1) {
    throw new InvalidInput(
      `${dir}: expected one of ${SCRIPT_FILES.join(' or ')} (or "script" in ${METADATA_FILE}), found ${present.length}.`,
    );
  }
  return present[0]!;
}

/** Where a folder's `libraries` live: `_lib/` beside the template folders. */
export const LIBRARY_FOLDER = '_lib';

/**
 * The JavaScript libraries a template lists in `libraries` (file names in `../_lib/`), joined, to be
 * prepended to its script: the sandbox runs one classic script with no imports, so helpers shared
 * by several templates are written once and copied in when published.
 */
async function librariesOf(dir: string, named: unknown): Promise<string> {
  if (named === undefined) return '';
  if (!Array.isArray(named)) {
    throw new InvalidInput(`${METADATA_FILE}: libraries must be a list of file names in ${LIBRARY_FOLDER}/.`);
  }
  const parts: string[] = [];
  for (const name of named) {
    if (typeof name !== 'string' || path.basename(name) !== name || !name.endsWith('.js')) {
      throw new InvalidInput(
        `${METADATA_FILE}: each library must be a .js file name in ${LIBRARY_FOLDER}/, got ${JSON.stringify(name)}.`,
      );
    }
    const file = path.join(dir, '..', LIBRARY_FOLDER, name);
    try {
      parts.push(`// ---- library ${name} ----\n${await readFile(file, 'utf8')}\n`);
    } catch {
      throw new InvalidInput(`${METADATA_FILE}: library ${name} cannot be read (looked for ${file}).`);
    }
  }
  return parts.length ? `${parts.join('')}// ---- template ----\n` : '';
}

async function requirementsOf(dir: string): Promise<string[] | null> {
  let text: string;
  try {
    text = await readFile(path.join(dir, REQUIREMENTS_FILE), 'utf8');
  } catch {
    return null;
  }
  return text
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter((line) => line !== '');
}

export async function readTemplateFolder(dir: string): Promise<TemplateFolder> {
  let metadata: unknown;
  try {
    metadata = JSON.parse(await readFile(path.join(dir, METADATA_FILE), 'utf8'));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'is missing' : 'is not valid JSON';
    throw new InvalidInput(`${path.join(dir, METADATA_FILE)} ${reason}.`);
  }
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) {
    throw new InvalidInput(`${METADATA_FILE} must hold a JSON object.`);
  }
  const meta = metadata as Record<string, unknown>;
  const file = await scriptFileOf(dir, meta.script);
  let script: string;
  try {
    script = await readFile(path.join(dir, file), 'utf8');
  } catch {
    throw new InvalidInput(`${path.join(dir, file)} cannot be read.`);
  }
  script = (await librariesOf(dir, meta.libraries)) + script;
  const runtime = file.endsWith('.ts') ? 'typescript' : file.endsWith('.py') ? 'python3.11' : 'javascript';
  if (meta.script_runtime !== undefined && meta.script_runtime !== runtime) {
    throw new InvalidInput(
      `${METADATA_FILE}: script_runtime ${String(meta.script_runtime)} does not fit ${file}.`,
    );
  }
  if (meta.version !== undefined && typeof meta.version !== 'string') {
    throw new InvalidInput(`${METADATA_FILE}: version must be a string such as "1.0.0".`);
  }
  const input: WorkerTemplateInput = { script, script_runtime: runtime };
  for (const field of METADATA_FIELDS) if (meta[field] !== undefined) input[field] = meta[field];
  const requirements = await requirementsOf(dir);
  if (requirements !== null && meta.requirements !== undefined) {
    throw new InvalidInput(
      `${dir}: give requirements in ${REQUIREMENTS_FILE} or in ${METADATA_FILE}, not both.`,
    );
  }
  if (requirements !== null || meta.requirements !== undefined) {
    input.requirements = requirements ?? meta.requirements;
  }
  return { input, release: (meta.version as string | undefined) ?? null };
}

/**
 * Publishes a folder as a template of the actor's account: a template of the same name is
 * republished (its version increases), otherwise one is created.
 */
export async function publishTemplateFolder(
  db: Database,
  actor: Actor,
  dir: string,
): Promise<{ record: EntityRecord; created: boolean }> {
  const { input } = await readTemplateFolder(dir);
  if (typeof input.name !== 'string') throw new InvalidInput(`${METADATA_FILE}: name is required.`);
  const same = (await db('entities')
    .where({ account_id: actor.principal.accountId, kind: WORKER_TEMPLATE.kind, name: input.name })
    .orderBy('created_at')
    .first('id')) as { id: string } | undefined;
  if (same) {
    // Fields the folder leaves out go back to their defaults, as a fresh publish would set them.
    const full: WorkerTemplateInput = {
      category: null,
      visible: true,
      type: 'BASIC',
      script_entry_point: 'main',
      form_inputs: [],
      memory_limit_mb: null,
      timeout_seconds: null,
      requirements: [],
      description: null,
      tags: [],
      ...input,
    };
    // The folder is this path's edge: its metadata is checked with the API's request schemas.
    validateRequest(WORKER_TEMPLATE, 'update', full);
    return { record: await updateResource(db, actor, WORKER_TEMPLATE, same.id, full), created: false };
  }
  validateRequest(WORKER_TEMPLATE, 'create', input);
  return { record: await createResource(db, actor, WORKER_TEMPLATE, input), created: true };
}

/**
 * `pas templates publish`: acts as the account's owner (the CLI is the operator's tool), recorded in
 * the audit trail with the CLI as its user agent.
 */
export async function publishTemplateFolderAs(
  db: Database,
  accountId: string,
  dir: string,
): Promise<{ record: EntityRecord; created: boolean }> {
  const owner = (await db('users')
    .where({ account_id: accountId, is_owner: true })
    .whereNull('disabled_at')
    .orderBy('created_at')
    .first('id', 'email')) as { id: string; email: string } | undefined;
  if (!owner) throw new InvalidInput(`Account ${accountId} not found (or it has no active owner).`);
  const actor: Actor = {
    principal: {
      accountId,
      userId: owner.id,
      userEmail: owner.email,
      isOwner: true,
      permissions: [],
      credentialId: '',
      credentialType: 'API_KEY',
    },
    source: 'UNKNOWN',
    ip: null,
    userAgent: 'pas-cli',
  };
  return publishTemplateFolder(db, actor, path.resolve(dir));
}
