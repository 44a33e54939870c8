import { type TObject, type TProperties, type TSchema, Type } from '@sinclair/typebox';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import type { IdPrefix } from '../platform/ids';
import { InvalidInput } from '../platform/errors';
import { bodyValidator } from '../platform/schema-validator';
import {
  commonView,
  createEntity,
  deleteEntity,
  type EntityKind,
  type EntityRecord,
  updateEntity,
} from './entity-store';
import {
  ClientSymbol,
  Description,
  LooseBoolean,
  Name,
  NullableDate,
  StorableJson,
  SYMBOL_MAX,
  symbolRule,
  Tags,
  WorkspaceParam,
} from './field-schemas';
import { checkStorableFields } from './storable-json';

export { SYMBOL_MAX, symbolRule };

/**
 * One field of a kind's stored body, declared once: its request schema (TypeBox), which the API
 * validates a request with and the engine validates every other caller (a worker's SDK call) with,
 * its response schema, and what no single-field schema can state.
 */
export interface BodyField {
  /** The request schema of the field's key (Optional when a create may leave it out). */
  schema?: TSchema;
  /** The field as the view shows it (the response schema). */
  view: TSchema;
  /** The schemas of the field's other request keys (`from`), by key. */
  aliases?: Record<string, TSchema>;
  /** Stored when a create leaves the field out or null. Without it, the field is required. */
  default?: () => unknown;
  /** The message for a missing required field. */
  required?: string;
  /**
   * What the schema cannot do: turn the valid value into the stored one (`public` into `PUBLIC`),
   * or refuse it for a rule no JSON Schema states (a size in bytes).
   */
  normalise?: (value: unknown) => unknown;
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

export type Operation = 'create' | 'list' | 'retrieve' | 'update' | 'delete';
export interface OperationDoc {
  summary?: string;
  description?: string;
  /** Statuses the route may answer beyond the generic ones (403 for a read-only record, 409 for a referenced one). */
  errors?: number[];
}

/** How the kind reads over HTTP beyond what its fields say (api/http/resource-routes.ts). */
export interface KindHttp {
  /** `with_data`: false leaves `data` out of the create reply (it can be large). */
  createOmits?: { flag: string; field: string };
  /** Routes marked as an extension of the interface say why here. */
  extension?: string;
  /** Named schemas the fields refer to (`Type.Ref`). */
  schemas?: TSchema[];
  /** Rules of the create body across fields (an `anyOf` with its `x-message`). */
  createOptions?: Record<string, unknown>;
  /** The update body's own forms of some fields (a name that may be null, meaning: keep it). */
  updateFields?: TProperties;
  /** Fields accepted and ignored (sent by clients, meaningless for this kind). */
  ignored?: TProperties;
  /** The response schema of what `extraView` adds (a report's URL, a template's `builtin`). */
  extraViewSchema?: TProperties;
  /**
   * Per CRUD route: `false` leaves the route out (a kind that is never updated); otherwise the
   * route's own summary and description in place of the generic ones, and its extra statuses.
   */
  operations?: Partial<Record<Operation, false | OperationDoc>>;
  /** `POST <path>/filter`: the list with its parameters in a JSON body (the PyPI clients' `filter()`). */
  filter?: boolean;
}

/** Every name of a kind, derived from its `kind` and `plural` (resourceKind below). */
export interface KindNames {
  /** `/custom_indexes`. */
  path: string;
  /** The reply's key for one object (`custom_index`) and for a list (`custom_indexes`). */
  key: string;
  plural: string;
  /** The OpenAPI tag (`Custom indexes`) and the response schema's title (`CustomIndex`). */
  tag: string;
  title: string;
  /** The SDK's function names: retrieveCustomIndex, listCustomIndexes, … */
  sdkSingular: string;
  sdkPlural: string;
}

/** What a kind file declares; resourceKind fills in the rest. */
export interface ResourceDeclaration extends Omit<EntityKind, 'view' | 'noun' | 'entityType' | 'idPrefix'> {
  /** The list's name (`custom_indexes`): path, reply key, tag and SDK names derive from it and `kind`. */
  plural: string;
  /** The audit trail's type; default: the title (`CustomIndex`). */
  entityType?: string;
  /** Generated ids use this prefix (`dats_`); null when the client names the object (clientNamed). */
  idPrefix: IdPrefix | null;
  /** Client-named kinds: the schema of the `symbol` a create names and the path carries. */
  symbolSchema?: TSchema;
  fields: Record<string, BodyField>;
  /**
   * Rules across fields or needing stored state, run on the whole body once the schema and each
   * field's normalise passed (on create, and on update with the current body merged): `given`
   * names the fields this request set.
   */
  finish?(
    body: Record<string, unknown>,
    context: { db: Database; given: Set<string>; current?: Record<string, unknown> },
  ): Promise<void> | void;
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
  http?: KindHttp;
}

/**
 * A stored resource kind, declared once (engine/kinds/): identity, scope, list projection and audit
 * type (the EntityKind), the fields of its body with their schemas, and the names and request
 * schemas derived from them. Create, update, delete, the view, the CRUD routes
 * (api/http/resource-routes.ts) and the workers' SDK bridge all follow from it.
 */
export interface ResourceKind extends Omit<ResourceDeclaration, 'entityType'>, EntityKind {
  idPrefix: IdPrefix | null;
  names: KindNames;
  /** The request bodies' schemas: the API validates with them, and so does the engine. */
  request: { create: TObject; update: TObject };
}

const isGiven = (value: unknown) => value !== undefined && value !== null;

const pascal = (snake: string) => snake.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());

/** The names of a kind: `custom_index`, `custom_indexes` give `/custom_indexes`, `CustomIndex`, … */
export function kindNames(kind: string, plural: string): KindNames {
  const words = plural.replace(/_/g, ' ');
  return {
    path: `/${plural}`,
    key: kind,
    plural,
    tag: words.charAt(0).toUpperCase() + words.slice(1),
    title: pascal(kind),
    sdkSingular: pascal(kind),
    sdkPlural: pascal(plural),
  };
}

/**
 * A client-named kind: the create request names the record by a `symbol` (`PRIVATE:FUND_A`), the
 * identifier in paths and replies, instead of the service generating an id.
 */
export function clientNamed(
  prefix: string,
): Pick<ResourceDeclaration, 'idPrefix' | 'idField' | 'symbolPattern' | 'symbolSchema'> {
  return {
    idPrefix: null,
    idField: 'symbol',
    symbolPattern: new RegExp(`^${prefix}:[A-Z0-9_]*$`),
    symbolSchema: ClientSymbol(prefix),
  };
}

/** An account-wide kind takes `workspace` as every route does, and ignores it. */
export const ignoredWorkspaceText = (plural: string) =>
  `Accepted and ignored: ${plural.replace(/_/g, ' ')} belong to the account, alike from every workspace.`;

/** The create and update bodies' schemas of a declaration. */
function requestSchemas(declaration: ResourceDeclaration): ResourceKind['request'] {
  const http = declaration.http ?? {};
  const fields: TProperties = {};
  for (const [name, field] of Object.entries(declaration.fields)) {
    if (field.readOnly || !field.schema) continue;
    for (const key of field.from ?? [name]) {
      fields[key] = key === name ? field.schema : field.aliases![key]!;
    }
  }
  const omitted = http.createOmits;
  const bodyFields: TProperties = {
    name: Name,
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    tags: Type.Optional(Tags),
    ...(declaration.hasDate ? { date: Type.Optional(NullableDate) } : {}),
    ...fields,
    ...(omitted ? { [omitted.flag]: Type.Optional(LooseBoolean) } : {}),
    ...http.ignored,
    workspace:
      declaration.scope === 'workspace'
        ? WorkspaceParam
        : Type.Optional(Type.Unknown({ description: ignoredWorkspaceText(declaration.plural) })),
  };
  const create = Type.Object(
    { ...(declaration.symbolSchema ? { symbol: declaration.symbolSchema } : {}), ...bodyFields },
    http.createOptions ?? {},
  );
  create.description = `${(create.required ?? []).join(' and ')} required.`;
  const updateRequired = declaration.updateRequires ?? [];
  const update = Type.Object(
    Object.fromEntries(
      Object.entries({ ...bodyFields, ...http.updateFields }).map(([name, schema]) => [
        name,
        updateRequired.includes(name) ? schema : Type.Optional(schema),
      ]),
    ),
    {
      description:
        (updateRequired.length > 0
          ? `${updateRequired.join(' and ')} required; other fields left out keep their values.`
          : 'Every field optional.') + (declaration.symbolSchema ? ' The symbol comes from the path.' : ''),
    },
  );
  return { create, update };
}

/** A field's value in a request: its own key, else the first of its other keys that is given. */
function valueOf(input: ResourceInput, name: string, field: BodyField): unknown {
  if (field.readOnly) return undefined;
  const keys = field.from ?? [name];
  for (const key of keys) if (isGiven(input[key])) return input[key];
  return input[keys[keys.length - 1]!];
}

/** The declaration filled in: its names, its request schemas and EntityKind's view. */
export function resourceKind(declaration: ResourceDeclaration): ResourceKind {
  const names = kindNames(declaration.kind, declaration.plural);
  const request = requestSchemas(declaration);
  const schemas = [StorableJson, ...(declaration.http?.schemas ?? [])];
  const validators = {
    create: bodyValidator(request.create, schemas),
    update: bodyValidator(request.update, schemas),
  };
  const kind: ResourceKind = {
    ...declaration,
    idPrefix: declaration.idPrefix,
    names,
    noun: declaration.kind.replace(/_/g, ' '),
    entityType: declaration.entityType ?? names.title,
    request,
    view: (record: EntityRecord) => {
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
    },
  };
  VALIDATORS.set(kind, validators);
  return kind;
}

const VALIDATORS = new WeakMap<ResourceKind, Record<'create' | 'update', (value: unknown) => void>>();

/**
 * Checks a request against the kind's compiled request schema, the one the API validates with, so
 * a caller without a route (a worker's SDK call, a template folder) is refused with the API's own
 * message. The route's schema is that caller's edge; from then on the request is typed, and
 * createResource and updateResource do not check its shape again.
 */
export function validateRequest(
  kind: ResourceKind,
  operation: 'create' | 'update',
  input: unknown,
): asserts input is ResourceInput {
  VALIDATORS.get(kind)![operation](input);
}

/**
 * A request as the kind's create or update schema accepted it: the common fields typed (a create's
 * name is required by its schema; an update's may be left out or null), the kind's own fields by
 * their declared schemas.
 */
export interface ResourceInput {
  name?: string | null;
  description?: string | null;
  tags?: string | readonly string[] | null;
  date?: string | null;
  workspace?: string;
  symbol?: string;
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
      body[name] = field.normalise ? field.normalise(value) : value;
      given.add(name);
    } else if (field.default) {
      body[name] = field.default();
    } else {
      throw new InvalidInput(field.required ?? `${name} is required.`);
    }
  }
  return { body, given };
}

/**
 * Stores a new record of `kind` from a request its create schema has accepted: the route's, or
 * validateRequest for a caller without one. Only what no schema states is checked here: text
 * PostgreSQL cannot store (unpaired surrogates, nesting), and the kind's rules across fields
 * (`finish`: a portfolio's position limit that follows nlv, its distinct position ids).
 */
export async function createResource(
  db: Database,
  actor: Actor,
  kind: ResourceKind,
  input: ResourceInput,
): Promise<EntityRecord> {
  const symbol = kind.idField === 'symbol' ? input.symbol : undefined;
  checkStorableFields(knownFields(kind, input));
  const { body, given } = newBody(kind, input);
  await kind.finish?.(body, { db, given });
  return createEntity(db, actor, kind, {
    ...(symbol === undefined ? {} : { id: symbol }),
    workspace: input.workspace,
    name: input.name!,
    description: input.description,
    tags: input.tags,
    date: input.date,
    body,
  });
}

/**
 * Every field optional. A body field given as null keeps its current value (the spec's default),
 * unless the field is a nullable setting; `tags` null keeps too; `description` null clears it. The
 * request is one the kind's update schema has accepted (the route's, or validateRequest).
 */
export async function updateResource(
  db: Database,
  actor: Actor,
  kind: ResourceKind,
  id: string,
  input: ResourceInput,
): Promise<EntityRecord> {
  await kind.guard?.(db, actor, id, 'update');
  checkStorableFields(knownFields(kind, input));
  const changes: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(kind.fields)) {
    const value = valueOf(input, name, field);
    if (isGiven(value)) changes[name] = field.normalise ? field.normalise(value) : value;
    else if (value === null && field.nullClears) changes[name] = null;
  }
  return updateEntity(db, actor, kind, id, input.workspace, async (current) => {
    const body = { ...current.body, ...changes };
    await kind.finish?.(body, { db, given: new Set(Object.keys(changes)), current: current.body });
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
