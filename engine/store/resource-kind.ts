import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import {
  commonView,
  createEntity,
  deleteEntity,
  type EntityKind,
  type EntityRecord,
  updateEntity,
} from './entity-store';
import { checkName } from './entity-fields';
import { checkStorableFields } from './storable-json';

/**
 * One field of a kind's stored body, as a request gives it. The API's schema has already checked
 * its shape; `check` holds what the engine must still enforce for callers that come without a schema
 * (a workflow step's SDK call), and normalises the value.
 */
export interface BodyField {
  /** Stored when a create leaves the field out or null. Without it, the field is required. */
  default?: () => unknown;
  /** The message for a missing required field. */
  required?: string;
  check?: (value: unknown) => unknown;
  /** On update, null stores null (a nullable setting) instead of keeping the current value. */
  nullClears?: boolean;
  /** Set by the service only (a state): never read from a request, stored from `default` on create. */
  readOnly?: boolean;
  /**
   * The request keys that carry the value, the first given one winning (`['type', 'instrument_type']`
   * for `instrument_type`); default: the field's own name.
   */
  from?: string[];
  /** The view's value for a record stored before the field existed; default: the `default`. */
  viewDefault?: unknown;
}

/**
 * A stored resource kind, declared once: identity, scope, list projection and audit type (the
 * EntityKind), plus the fields of its body. Create, update, delete, the view, the API's schemas and
 * CRUD routes (api/http/resource-routes.ts) and the workers' SDK bridge all follow from it.
 */
export interface ResourceKind extends EntityKind {
  fields: Record<string, BodyField>;
  /**
   * Rules across fields, run on the whole body after each field's own check (on create, and on
   * update with the current body merged): `given` names the fields this request set.
   */
  finish?(body: Record<string, unknown>, context: { db: Database; given: Set<string> }): Promise<void> | void;
  /** Client-named kinds (`idField: 'symbol'`): checks the create request's `symbol`, the identifier. */
  checkSymbol?(value: unknown): string;
  /** Fields an update must carry too (the interface lists some as required on update). */
  updateRequires?: string[];
  /** Fields the view shows beyond the common ones and the body's, such as a report's URL. */
  extraView?(record: EntityRecord): Record<string, unknown>;
  /** On update, `tags: null` clears the tags (by default null keeps them, as a left-out field does). */
  nullClearsTags?: boolean;
  /**
   * Refuses an update or a delete the kind does not allow (a built-in record, one still referenced),
   * throwing the domain error. A delete's check runs in the delete's transaction (`db` is it), so a
   * row it locks stays locked until the record is gone.
   */
  guard?(db: Database, actor: Actor, id: string, operation: 'update' | 'delete'): Promise<void>;
}

const isGiven = (value: unknown) => value !== undefined && value !== null;

/** A field's check: a JSON object (neither an array nor null), else `message`. */
export function jsonObject(message: string): (value: unknown) => Record<string, unknown> {
  return (value) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidInput(message);
    return value as Record<string, unknown>;
  };
}

/** A symbol is a path segment too, and the router refuses segments over 100 characters. */
export const SYMBOL_MAX = 64;

/** What a symbol of `prefix` must be, in words (`PRIVATE: followed by …`). */
export const symbolRule = (prefix: string) =>
  `${prefix}: followed by upper-case letters, digits or _ (no spaces), at most ${SYMBOL_MAX} characters in all`;

/**
 * A client-named kind: the create request names the record by a `symbol` (`PRIVATE:FUND_A`), the
 * identifier in paths and replies, instead of the service generating an id.
 */
export function clientNamed(
  prefix: string,
): Pick<ResourceKind, 'idPrefix' | 'idField' | 'symbolPattern' | 'checkSymbol'> {
  const symbolPattern = new RegExp(`^${prefix}:[A-Z0-9_]*$`);
  return {
    idPrefix: null,
    idField: 'symbol',
    symbolPattern,
    checkSymbol(symbol: unknown): string {
      if (typeof symbol !== 'string' || symbol.length > SYMBOL_MAX || !symbolPattern.test(symbol)) {
        throw new InvalidInput(`symbol is required: ${symbolRule(prefix)}.`);
      }
      return symbol;
    },
  };
}

/** A field's value in a request: its own key, else the first of its other keys that is given. */
function valueOf(input: ResourceInput, name: string, field: BodyField): unknown {
  if (field.readOnly) return undefined;
  const keys = field.from ?? [name];
  for (const key of keys) if (isGiven(input[key])) return input[key];
  return input[keys[keys.length - 1]!];
}

/** Python clients send None for what they leave unset; a field an update needs must be there. */
function checkUpdateRequires(kind: ResourceKind, input: ResourceInput) {
  for (const name of kind.updateRequires ?? []) {
    if (name === 'name') {
      checkName(input.name);
      continue;
    }
    const field = kind.fields[name];
    const value = field ? valueOf(input, name, field) : input[name];
    if (!isGiven(value)) throw new InvalidInput(field?.required ?? `${name} is required.`);
  }
}

/** The declaration's fields filled in: EntityKind's view from the common fields and the body's. */
export function resourceKind(
  declaration: Omit<ResourceKind, 'view'> & { view?: EntityKind['view'] },
): ResourceKind {
  const kind: ResourceKind = {
    ...declaration,
    view:
      declaration.view ??
      ((record: EntityRecord) => {
        const { id, ...common } = commonView(record);
        const view: Record<string, unknown> = { [kind.idField]: id, ...common };
        if (kind.hasDate) view.date = record.date;
        for (const [name, field] of Object.entries(kind.fields)) {
          view[name] =
            record.body[name] ?? ('viewDefault' in field ? field.viewDefault : (field.default?.() ?? null));
        }
        Object.assign(view, kind.extraView?.(record));
        if (kind.scope === 'workspace') view.workspace = record.workspace;
        return view;
      }),
  };
  return kind;
}

export interface ResourceInput {
  name?: unknown;
  description?: unknown;
  tags?: unknown;
  date?: unknown;
  workspace?: unknown;
  [field: string]: unknown;
}

/** The request fields a kind reads; other keys of a body are ignored, never checked or stored. */
function knownFields(kind: ResourceKind, input: ResourceInput): Record<string, unknown> {
  const known: Record<string, unknown> = {
    name: input.name,
    description: input.description,
    tags: input.tags,
  };
  for (const [name, field] of Object.entries(kind.fields))
    if (!field.readOnly) known[name] = valueOf(input, name, field);
  return known;
}

/**
 * A create request's body for `kind`: each field checked, or its default where the request leaves
 * it out (or null); `given` names the fields the request set. The rules across fields (`finish`)
 * are the caller's to run.
 */
export function newBody(kind: ResourceKind, input: ResourceInput) {
  const body: Record<string, unknown> = {};
  const given = new Set<string>();
  for (const [name, field] of Object.entries(kind.fields)) {
    const value = valueOf(input, name, field);
    if (isGiven(value)) {
      body[name] = field.check ? field.check(value) : value;
      given.add(name);
    } else if (field.default) {
      body[name] = field.default();
    } else {
      throw new InvalidInput(field.required ?? `${name} is required.`);
    }
  }
  return { body, given };
}

export async function createResource(
  db: Database,
  actor: Actor,
  kind: ResourceKind,
  input: ResourceInput,
): Promise<EntityRecord> {
  const symbol = kind.checkSymbol?.(input.symbol);
  checkStorableFields(knownFields(kind, input));
  const { body, given } = newBody(kind, input);
  await kind.finish?.(body, { db, given });
  return createEntity(db, actor, kind, {
    ...(symbol === undefined ? {} : { id: symbol }),
    workspace: input.workspace,
    name: input.name,
    description: input.description,
    tags: input.tags,
    date: input.date,
    body,
  });
}

/**
 * Every field optional. A body field given as null keeps its current value (the spec's default),
 * unless the field is a nullable setting; `tags` null keeps too; `description` null clears it.
 */
export async function updateResource(
  db: Database,
  actor: Actor,
  kind: ResourceKind,
  id: string,
  input: ResourceInput,
): Promise<EntityRecord> {
  await kind.guard?.(db, actor, id, 'update');
  checkUpdateRequires(kind, input);
  checkStorableFields(knownFields(kind, input));
  const changes: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(kind.fields)) {
    const value = valueOf(input, name, field);
    if (isGiven(value)) changes[name] = field.check ? field.check(value) : value;
    else if (value === null && field.nullClears) changes[name] = null;
  }
  return updateEntity(db, actor, kind, id, input.workspace, async (current) => {
    const body = { ...current.body, ...changes };
    await kind.finish?.(body, { db, given: new Set(Object.keys(changes)) });
    return {
      // A name left out or null keeps the stored one.
      name: input.name ?? undefined,
      description: input.description,
      tags: kind.nullClearsTags ? input.tags : (input.tags ?? undefined),
      date: input.date,
      body: Object.keys(changes).length > 0 || kind.finish ? body : undefined,
    };
  });
}

/** The delete reply: `deleted`, the identifier (`id`, or `symbol`) and the name. */
export async function deleteResource(
  db: Database,
  actor: Actor,
  kind: ResourceKind,
  id: string,
  workspace: unknown,
): Promise<Record<string, string | boolean>> {
  const guard = kind.guard;
  const record = guard
    ? await db.transaction(async (trx) => {
        await guard(trx, actor, id, 'delete');
        return deleteEntity(trx, actor, kind, id, workspace);
      })
    : await deleteEntity(db, actor, kind, id, workspace);
  return { deleted: true, [kind.idField]: record.id, name: record.name };
}
