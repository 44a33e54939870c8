import { createFile, deleteFile, FILE, fileBase64, updateFile } from '../files/file-store';
import { validateFileBody } from '../files/file-schemas';
import { RESOURCE_KINDS } from '../kinds';
import { createReport, deleteReport, reportKind, updateReport } from '../reports/report-store';
import { validateReportBody } from '../reports/report-schemas';
import type { Database } from '../platform/database';
import { DomainError, InvalidInput, NotFound } from '../platform/errors';
import { isPlainObject } from '../platform/plain-object';
import type { Actor } from '../platform/principal';
import {
  type EntityKind,
  type EntityRecord,
  isKindId,
  readableAccounts,
  viewEntity,
} from '../store/entity-store';
import { listEntities } from '../store/list-entities';
import {
  createResource,
  deleteResource,
  type ResourceKind,
  updateResource,
  validateRequest,
} from '../store/resource-kind';
import { CLASS_PATH, plainValue, SdkDateTime, wireDateTime } from './sdk-wire';

/**
 * everysk-lib's entity classes on the stored kinds: the same engine services as the /v2 routes
 * (createResource, updateResource, deleteResource, viewEntity, listEntities), so the rules, the
 * audit records and the account scoping are theirs. Entities travel in the SDK's own field names
 * (`created_on`/`updated_on` as date-times, `id` beside `symbol` for client-named kinds).
 */

/** One entity class of the SDK: the stored kind and the engine services that write and show it. */
export interface SdkEntityClass {
  kind: EntityKind;
  create(db: Database, actor: Actor, input: Record<string, unknown>): Promise<EntityRecord>;
  update(db: Database, actor: Actor, id: string, input: Record<string, unknown>): Promise<EntityRecord>;
  remove(db: Database, actor: Actor, id: string, workspace: string | undefined): Promise<unknown>;
  view(db: Database, record: EntityRecord): Promise<Record<string, unknown>>;
  /** How a listed view (a query's) differs for the SDK, where it does. */
  listed?(view: Record<string, unknown>): Record<string, unknown>;
}

/** A kind declared in engine/kinds: the /v2 routes' createResource, updateResource, deleteResource. */
function declared(kind: ResourceKind): SdkEntityClass {
  return {
    kind,
    // The kind's request schemas are this path's edge, as the route's are the API's.
    create: (db, actor, input) => {
      validateRequest(kind, 'create', input);
      return createResource(db, actor, kind, input);
    },
    update: (db, actor, id, input) => {
      validateRequest(kind, 'update', input);
      return updateResource(db, actor, kind, id, input);
    },
    remove: (db, actor, id, workspace) => deleteResource(db, actor, kind, id, workspace),
    view: async (_db, record) => kind.view(record),
  };
}

/**
 * The SDK's entity objects send every attribute they know, an unset one as null (`save`, `validate`
 * send the whole object). For a field whose API schema has no null, null from the SDK means unset,
 * as the store has always taken it: such fields are left out before the schema sees the body.
 */
function withoutUnset(fields: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out = { ...fields };
  for (const key of keys) if (out[key] === null) delete out[key];
  return out;
}

/** The SDK's File holds its content inline (`data`, Base64), up to what one answer may carry. */
export const SDK_FILE_INLINE_MAX_BYTES = 10 * 1024 * 1024;

const FILE_UNSET = ['workspace', 'with_data'] as const;

const FILE_CLASS: SdkEntityClass = {
  kind: FILE,
  // The JSON body schemas of POST /files and PUT /files/{id}: this path's edge, as the API's.
  create: (db, actor, input) =>
    createFile(db, actor, validateFileBody('create', withoutUnset(input, FILE_UNSET))),
  update: (db, actor, id, input) =>
    updateFile(db, actor, id, validateFileBody('update', withoutUnset(input, FILE_UNSET))),
  remove: (db, actor, id, workspace) => deleteFile(db, actor, id, workspace),
  view: async (db, record) => {
    const view = FILE.view(record);
    const size = view.size as number;
    if (size > SDK_FILE_INLINE_MAX_BYTES) {
      throw new InvalidInput(
        `File ${record.id} holds ${size} bytes, more than the SDK answer carries (${SDK_FILE_INLINE_MAX_BYTES}): download it from its url.`,
      );
    }
    let data = '';
    for await (const chunk of fileBase64(db, record)) data += chunk;
    return { ...view, data };
  },
};

/** Reports show absolute addresses, built on the service's base URL. */
function lowerAuthorization(view: Record<string, unknown>): Record<string, unknown> {
  return typeof view.authorization === 'string'
    ? { ...view, authorization: view.authorization.toLowerCase() }
    : view;
}

function reportClass(publicUrl: string): SdkEntityClass {
  const kind = reportKind(publicUrl);
  // The SDK writes authorization in lower case (public, private), the API in upper case.
  const input = (given: Record<string, unknown>) => {
    const fields = withoutUnset(given, ['data', 'widgets', 'authorization', 'workspace']);
    return typeof fields.authorization === 'string'
      ? { ...fields, authorization: fields.authorization.toUpperCase() }
      : fields;
  };
  return {
    kind,
    // The routes' request schemas are this path's edge, as they are the API's.
    create: (db, actor, fields) => createReport(db, actor, kind, validateReportBody('create', input(fields))),
    update: (db, actor, id, fields) =>
      updateReport(db, actor, kind, id, validateReportBody('update', input(fields))),
    remove: (db, actor, id, workspace) => deleteReport(db, actor, kind, id, workspace),
    view: async (_db, record) => lowerAuthorization(kind.view(record)),
    listed: lowerAuthorization,
  };
}

/** The SDK class of that name this service offers, or undefined. */
export function sdkEntityClass(name: string, publicUrl: string): SdkEntityClass | undefined {
  if (name === 'Report') return reportClass(publicUrl);
  return Object.hasOwn(SDK_ENTITY_CLASSES, name) ? SDK_ENTITY_CLASSES[name] : undefined;
}

export const SDK_ENTITY_CLASSES: Readonly<Record<string, SdkEntityClass>> = {
  Portfolio: declared(RESOURCE_KINDS.portfolio),
  Datastore: declared(RESOURCE_KINDS.datastore),
  CustomIndex: declared(RESOURCE_KINDS.customIndex),
  PrivateSecurity: declared(RESOURCE_KINDS.privateSecurity),
  UserApp: declared(RESOURCE_KINDS.userApp),
  File: FILE_CLASS,
};

/** At most this many ids or objects in one `*_many` call (the SDK sends them in batches). */
export const MANY_MAX = 100;
/** Query.loads/fetch_ids read at most this many entities, offset included; page() has no cap. */
export const QUERY_READ_MAX = 1000;
const QUERY_PAGE_DEFAULT = 20;
/** The most pages of 100 one read walks. */
const QUERY_SCAN_PAGES = 100;

/** An SDK entity: the stored view in the SDK's field names. */
export function toSdkEntity(kind: EntityKind, view: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...view };
  if (kind.idField === 'symbol' && typeof view.symbol === 'string') out.id = view.symbol;
  if (typeof view.created === 'number') out.created_on = wireDateTime(view.created);
  if (typeof view.updated === 'number') out.updated_on = wireDateTime(view.updated);
  delete out.created;
  delete out.updated;
  return out;
}

/** The fields the SDK sends that are bookkeeping of its own, never input. */
const SDK_ONLY = [
  'created_on',
  'updated_on',
  'version',
  'level',
  'check_securities',
  'date_time',
  'created',
  'updated',
];

/** An SDK entity's fields as a /v2 body: its own names mapped, nulls of unset fields dropped. */
export function fromSdkEntity(kind: EntityKind, dict: unknown, what: string): Record<string, unknown> {
  if (!isPlainObject(dict)) throw new InvalidInput(`${what} must be an object of entity fields.`);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(dict)) {
    if (key === CLASS_PATH || SDK_ONLY.includes(key)) continue;
    out[key] = key === 'date' ? plainValue(value, true) : plainValue(value, false);
  }
  if (kind.idField === 'symbol' && out.symbol === undefined && typeof out.id === 'string')
    out.symbol = out.id;
  if (Array.isArray(out.securities)) {
    // The SDK's Security sends every attribute it knows, unset ones as null: those are not input.
    out.securities = out.securities.map((security: unknown) =>
      isPlainObject(security)
        ? Object.fromEntries(Object.entries(security).filter(([, value]) => value !== null))
        : security,
    );
  }
  return out;
}

function entityId(value: unknown, what = 'entity_id'): string {
  if (typeof value !== 'string' || value === '' || value.length > 200) {
    throw new InvalidInput(`${what} must be an entity id (a string).`);
  }
  return value;
}

function idList(value: unknown): string[] {
  if (!Array.isArray(value)) throw new InvalidInput('entity_id_list must be a list of entity ids.');
  if (value.length > MANY_MAX) throw new InvalidInput(`entity_id_list holds at most ${MANY_MAX} ids.`);
  return value.map((id, i) => entityId(id, `entity_id_list[${i}]`));
}

/** The workspace an entity of the account is in (ids are unique in the account), or null if none. */
async function locate(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
): Promise<string | null | undefined> {
  if (!isKindId(kind, id)) return undefined;
  const row = (await db('entities')
    .whereIn('account_id', readableAccounts(kind, actor.principal.accountId))
    .where({ kind: kind.kind, id })
    .orderByRaw('account_id = ? desc', [actor.principal.accountId])
    .first('workspace')) as { workspace: string | null } | undefined;
  return row === undefined ? undefined : row.workspace;
}

async function read(db: Database, actor: Actor, kind: EntityKind, id: string): Promise<EntityRecord | null> {
  const workspace = await locate(db, actor, kind, id);
  if (workspace === undefined) return null;
  return viewEntity(db, actor, kind, id, workspace ?? undefined);
}

async function mustRead(db: Database, actor: Actor, kind: EntityKind, id: string): Promise<EntityRecord> {
  const record = await read(db, actor, kind, id);
  if (!record) throw new NotFound(`${kind.noun} ${id} not found.`);
  return record;
}

function projected(view: Record<string, unknown>, projection: unknown): Record<string, unknown> {
  if (projection === undefined || projection === null) return view;
  const fields = (typeof projection === 'string' ? [projection] : projection) as unknown[];
  if (!Array.isArray(fields) || !fields.every((f) => typeof f === 'string')) {
    throw new InvalidInput('projection must be a list of property names.');
  }
  const names = (fields as string[]).map((f) => f.replace(/^-/, '').replace(/_on$/, ''));
  const exclude = (fields as string[]).some((f) => f.startsWith('-'));
  const keep = (key: string) => names.includes(key) || names.includes(key.replace(/_on$/, ''));
  return Object.fromEntries(
    Object.entries(view).filter(([key]) => key === 'id' || (exclude ? !keep(key) : keep(key))),
  );
}

/** Runs `work` and undoes every write it made (validate: the create's checks, nothing stored). */
async function dryRun(db: Database, work: (trx: Database) => Promise<unknown>): Promise<void> {
  const done = new Error('dry run');
  try {
    await db.transaction(async (trx) => {
      await work(trx as unknown as Database);
      throw done;
    });
  } catch (error) {
    if (error !== done) throw error;
  }
}

/** What an answer holds of a record: its view, in the SDK's names. */
async function shown(db: Database, cls: SdkEntityClass, record: EntityRecord) {
  return toSdkEntity(cls.kind, await cls.view(db, record));
}

/** The input of a create: the SDK's fields, without the id the server gives (unless client-named). */
function createInput(cls: SdkEntityClass, dict: unknown, what: string): Record<string, unknown> {
  const input = fromSdkEntity(cls.kind, dict, what);
  if (cls.kind.idField !== 'symbol') delete input.id;
  return input;
}

async function create(db: Database, actor: Actor, cls: SdkEntityClass, dict: unknown, what: string) {
  return shown(db, cls, await cls.create(db, actor, createInput(cls, dict, what)));
}

async function modify(db: Database, actor: Actor, cls: SdkEntityClass, id: string, overwrites: unknown) {
  const { kind } = cls;
  const workspace = await locate(db, actor, kind, id);
  if (workspace === undefined) throw new NotFound(`${kind.noun} ${id} not found.`);
  const input = fromSdkEntity(kind, overwrites ?? {}, 'overwrites');
  delete input.id;
  delete input.symbol;
  const record = await cls.update(db, actor, id, { ...input, workspace: workspace ?? undefined });
  return shown(db, cls, record);
}

async function remove(db: Database, actor: Actor, cls: SdkEntityClass, id: string) {
  const record = await mustRead(db, actor, cls.kind, id);
  const answer = await shown(db, cls, record);
  await cls.remove(db, actor, id, record.workspace ?? undefined);
  return answer;
}

async function clone(db: Database, actor: Actor, cls: SdkEntityClass, id: string, overwrites: unknown) {
  const { kind } = cls;
  const record = await mustRead(db, actor, kind, id);
  const view = await cls.view(db, record);
  const changes = fromSdkEntity(kind, overwrites ?? {}, 'overwrites');
  const input: Record<string, unknown> = { ...view, ...changes };
  if (kind.idField !== 'symbol') delete input.id;
  else if (changes.symbol === undefined && changes.id === undefined) {
    throw new InvalidInput('A clone of a client-named entity needs a new symbol in overwrites.');
  }
  return shown(db, cls, await cls.create(db, actor, input));
}

function overwritesAt(overwrites: unknown, i: number, count: number): unknown {
  if (!Array.isArray(overwrites)) return overwrites;
  if (overwrites.length !== count) throw new InvalidInput('overwrites must hold one object per entity id.');
  return overwrites[i];
}

/** The entity methods of one class; `self` is the decoded self_obj, `params` the decoded params. */
export async function entityMethod(
  db: Database,
  actor: Actor,
  cls: SdkEntityClass,
  method: string,
  self: unknown,
  params: Record<string, unknown>,
): Promise<unknown> {
  const { kind } = cls;
  const selfDict = isPlainObject(self) ? self : null;
  const selfId = () => {
    const id = selfDict?.id ?? (kind.idField === 'symbol' ? selfDict?.symbol : undefined);
    return id === undefined || id === null ? null : entityId(id, 'id');
  };
  switch (method) {
    case 'retrieve': {
      const record = await read(db, actor, kind, entityId(params.entity_id));
      return record ? projected(await shown(db, cls, record), params.projection) : null;
    }
    case 'retrieve_many':
    case 'inner_retrieve_many': {
      const out = [];
      for (const id of idList(params.entity_id_list)) {
        const record = await read(db, actor, kind, id);
        out.push(record ? projected(await shown(db, cls, record), params.projection) : null);
      }
      return out;
    }
    case 'create':
      return create(db, actor, cls, params.entity_dict, 'entity_dict');
    case 'create_many': {
      const list = params.entity_dict_list;
      if (!Array.isArray(list) || list.length > MANY_MAX) {
        throw new InvalidInput(`entity_dict_list must be a list of at most ${MANY_MAX} objects.`);
      }
      // All or nothing: one refused object leaves none of them stored.
      return db.transaction(async (trx) => {
        const out = [];
        for (const [i, dict] of list.entries())
          out.push(await create(trx as unknown as Database, actor, cls, dict, `entity_dict_list[${i}]`));
        return out;
      });
    }
    case 'modify':
      return modify(db, actor, cls, entityId(params.entity_id), params.overwrites);
    case 'modify_many': {
      const ids = idList(params.entity_id_list);
      return eachInOneTransaction(db, ids, (trx, id, i) =>
        modify(trx, actor, cls, id, overwritesAt(params.overwrites, i, ids.length)),
      );
    }
    case 'remove':
      return remove(db, actor, cls, entityId(params.entity_id));
    case 'remove_many': {
      const ids = idList(params.entity_id_list);
      return db.transaction(async (trx) => {
        for (const id of ids) await remove(trx as unknown as Database, actor, cls, id);
        return ids;
      });
    }
    case 'clone':
      return clone(db, actor, cls, entityId(params.entity_id), params.overwrites);
    case 'clone_many': {
      const ids = idList(params.entity_id_list);
      return eachInOneTransaction(db, ids, (trx, id, i) =>
        clone(trx, actor, cls, id, overwritesAt(params.overwrites, i, ids.length)),
      );
    }
    case 'save': {
      const id = selfId();
      if (id !== null && (await locate(db, actor, kind, id)) !== undefined) {
        return modify(db, actor, cls, id, self);
      }
      if (id !== null && kind.idField !== 'symbol') throw new NotFound(`${kind.noun} ${id} not found.`);
      return create(db, actor, cls, self, 'self_obj');
    }
    case 'delete': {
      const id = selfId();
      if (id === null) throw new InvalidInput('delete needs the entity id.');
      return remove(db, actor, cls, id);
    }
    case 'validate':
    case 'check':
    case 'securities_check': {
      // The create's checks (field rules, position rules, names filled in), nothing stored.
      if (method === 'securities_check' && kind !== RESOURCE_KINDS.portfolio) break;
      const input = createInput(cls, self ?? params.entity_dict, 'self_obj');
      await dryRun(db, (trx) => cls.create(trx, actor, input));
      return true;
    }
    case 'validate_transient': {
      const input = createInput(cls, params.entity_dict, 'entity_dict');
      await dryRun(db, (trx) => cls.create(trx, actor, input));
      return toSdkEntity(kind, { ...input, id: null });
    }
  }
  throw notOffered(kind.entityType, method);
}

export class NotOffered extends DomainError {
  constructor(className: string, method: string, why = 'not built yet') {
    super(400, `${className}.${method} is not offered by this service (${why}).`);
  }
}

function notOffered(className: string, method: string): NotOffered {
  return new NotOffered(className, method);
}

// --------------------------------------------------------------------------------------------------
// Query

interface SdkQuery {
  cls: SdkEntityClass;
  kind: EntityKind;
  className: string;
  filters: Array<[string, string, unknown]>;
  order: string[];
  projection: string[] | null;
  distinctOn: string[];
  limit: number | null;
  offset: number;
  pageSize: number | null;
  pageToken: string | null;
  findOrFail: boolean;
  /**
   * `where('name', text)`: the SDK sends it as a range on its search form of the name (lower case,
   * NFKD), `['name', '>=', text]` and `['name', '<', text+1]`; it is matched as that prefix here.
   */
  namePrefix: string | null;
}

/** The SDK's search form of a name (everysk.core.string.normalize_string_to_search). */
export function searchForm(name: string): string {
  return name.toLowerCase().trim().normalize('NFKD');
}

/** The name range the SDK writes for `where('name', text)`, as the text; null if there is none. */
function namePrefixOf(filters: Array<[string, string, unknown]>): string | null {
  const from = filters.find(([p, op, v]) => p === 'name' && op === '>=' && typeof v === 'string' && v !== '');
  if (!from) return null;
  const text = from[2] as string;
  const limit = text.slice(0, -1) + String.fromCharCode(text.charCodeAt(text.length - 1) + 1);
  const to = filters.find(([p, op, v]) => p === 'name' && op === '<' && v === limit);
  return to ? text : null;
}

function optionalCount(value: unknown, what: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new InvalidInput(`${what} must be an integer of 0 or more.`);
  }
  return value;
}

function names(value: unknown, what: string): string[] {
  if (value === undefined || value === null) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || !list.every((item) => typeof item === 'string')) {
    throw new InvalidInput(`${what} must be a list of property names.`);
  }
  return list as string[];
}

/** A filter's value as the list engine compares it: days for `date`, epoch seconds for the times. */
function filterValue(property: string, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => filterValue(property, item));
  if (value instanceof SdkDateTime) {
    if (property === 'date') return value.day;
    return Math.floor(value.instant.getTime() / 1000);
  }
  return value;
}

export function parseSdkQuery(self: unknown, publicUrl: string): SdkQuery {
  if (!isPlainObject(self)) throw new InvalidInput('Query needs its self_obj.');
  const className = self._klass;
  const cls = typeof className === 'string' ? sdkEntityClass(className, publicUrl) : undefined;
  if (!cls) {
    throw new NotOffered(
      `Query(${String(className)})`,
      'query',
      'this entity class is not offered by this service',
    );
  }
  const filters = self.filters ?? [];
  if (!Array.isArray(filters))
    throw new InvalidInput('Query filters must be a list of [property, operator, value].');
  const parsed = filters.map((filter: unknown, i): [string, string, unknown] => {
    if (
      !Array.isArray(filter) ||
      filter.length !== 3 ||
      typeof filter[0] !== 'string' ||
      typeof filter[1] !== 'string'
    ) {
      throw new InvalidInput(`Query filters[${i}] must be [property, operator, value].`);
    }
    return [filter[0], filter[1], filterValue(filter[0], filter[2])];
  });
  const namePrefix = namePrefixOf(parsed);
  return {
    namePrefix,
    cls,
    kind: cls.kind,
    className: className as string,
    // The name range is matched on the search form, after the engine's other filters.
    filters: namePrefix === null ? parsed : parsed.filter(([property]) => property !== 'name'),
    order: names(self.order, 'Query order'),
    projection:
      self.projection === undefined || self.projection === null
        ? null
        : names(self.projection, 'Query projection'),
    distinctOn: names(self.distinct_on, 'Query distinct_on'),
    limit: optionalCount(self.limit, 'Query limit'),
    offset: optionalCount(self.offset, 'Query offset') ?? 0,
    pageSize: optionalCount(self.page_size, 'Query page_size'),
    pageToken: typeof self.page_token === 'string' && self.page_token !== '' ? self.page_token : null,
    findOrFail: self._find_or_fail === true,
  };
}

/** The SDK's property names in the list engine's: its timestamps are `created_on`/`updated_on`. */
function listProperty(name: string): string {
  return name.replace(/^(-?)(created|updated)_on$/, '$1$2');
}

async function queryPage(
  db: Database,
  actor: Actor,
  query: SdkQuery,
  pageSize: number,
  pageToken: string | null,
): Promise<{ items: Record<string, unknown>[]; next: string | null }> {
  const json: Record<string, unknown> = {
    filters: query.filters.map(([property, operator, value]) => [listProperty(property), operator, value]),
  };
  if (query.order.length) json.order = query.order.map(listProperty);
  if (query.projection?.length) {
    const projection = query.projection.map(listProperty);
    // An entity keeps its id whatever it projects: the SDK builds objects from what it reads.
    const include = !projection.some((name) => name.startsWith('-'));
    const needed = ['id', ...(query.namePrefix === null ? [] : ['name'])];
    json.projection = include ? [...new Set([...needed, ...projection])] : projection;
  }
  if (query.distinctOn.length) json.distinct_on = query.distinctOn.map(listProperty);
  // Without a projection the client asked for whole entities, as retrieve gives them (a /v2 list
  // leaves out data, securities and the like; the SDK's Query has its own projection for that).
  const { items, next_page_token } = await listEntities(
    db,
    actor,
    query.kind,
    { query: JSON.stringify(json), page_size: pageSize, page_token: pageToken },
    { whole: !query.projection?.length },
  );
  const listed = query.cls.listed ?? ((view: Record<string, unknown>) => view);
  const prefix = query.namePrefix;
  const matching =
    prefix === null
      ? items
      : items.filter((view) => typeof view.name === 'string' && searchForm(view.name).startsWith(prefix));
  return { items: matching.map((view) => toSdkEntity(query.kind, listed(view))), next: next_page_token };
}

/** Up to `count` entities after `offset`, walking pages (offset is not a cursor: it costs its rows). */
async function readEntities(
  db: Database,
  actor: Actor,
  query: SdkQuery,
  offset: number,
  count: number | null,
) {
  const wanted = count === null ? null : offset + count;
  if ((wanted ?? offset) > QUERY_READ_MAX) {
    throw new InvalidInput(
      `A query reads at most ${QUERY_READ_MAX} entities (offset included): page through more with page().`,
    );
  }
  const out: Record<string, unknown>[] = [];
  let token: string | null = query.pageToken;
  for (let pages = 1; ; pages++) {
    // A name search drops rows after the engine's page: read whole pages, and not without end.
    if (pages > QUERY_SCAN_PAGES) {
      throw new InvalidInput(
        `The query reads more than ${QUERY_SCAN_PAGES * 100} entities to match the name: narrow it with other filters.`,
      );
    }
    const size =
      query.namePrefix !== null
        ? 100
        : Math.min(100, wanted === null ? 100 : Math.max(1, wanted - out.length));
    const { items, next } = await queryPage(db, actor, query, size, token);
    out.push(...items);
    if (next === null || (wanted !== null && out.length >= wanted)) break;
    if (out.length >= QUERY_READ_MAX) {
      throw new InvalidInput(
        `The query matches more than ${QUERY_READ_MAX} entities: give a limit, or page through them with page().`,
      );
    }
    token = next;
  }
  return out.slice(offset, wanted ?? undefined);
}

export async function queryMethod(
  db: Database,
  actor: Actor,
  method: string,
  self: unknown,
  params: Record<string, unknown>,
  publicUrl: string,
): Promise<unknown> {
  const query = parseSdkQuery(self, publicUrl);
  const offset = optionalCount(params.offset, 'offset') ?? query.offset;
  switch (method) {
    case 'load':
    case 'fetch_id': {
      const [first] = await readEntities(db, actor, query, offset, 1);
      if (!first && query.findOrFail) throw new NotFound(`No ${query.kind.noun} matches the query.`);
      if (!first) return null;
      return method === 'load' ? first : first.id;
    }
    case 'loads':
    case 'fetch_ids': {
      const limit = optionalCount(params.limit, 'limit') ?? query.limit;
      const entities = await readEntities(db, actor, query, offset, limit);
      return method === 'loads' ? entities : entities.map((entity) => entity.id);
    }
    case 'page': {
      if (offset > 0) throw new InvalidInput('page() takes a page_token, not an offset.');
      const size = optionalCount(params.page_size, 'page_size') ?? query.pageSize ?? QUERY_PAGE_DEFAULT;
      if (size < 1 || size > 100) throw new InvalidInput('page_size must be an integer from 1 to 100.');
      const token =
        typeof params.page_token === 'string' && params.page_token !== ''
          ? params.page_token
          : query.pageToken;
      const { items, next } = await queryPage(db, actor, query, size, token);
      return { entities: items, next_page_token: next };
    }
  }
  throw new NotOffered('Query', method);
}

/** A `*_many` write: each id in turn, all or nothing (one refusal leaves none of them changed). */
function eachInOneTransaction<T>(
  db: Database,
  ids: string[],
  write: (trx: Database, id: string, index: number) => Promise<T>,
): Promise<T[]> {
  return db.transaction(async (trx) => {
    const out: T[] = [];
    for (const [i, id] of ids.entries()) out.push(await write(trx as unknown as Database, id, i));
    return out;
  });
}
