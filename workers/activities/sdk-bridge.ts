import type { Actor } from '../../engine/audit/audit-trail';
import {
  CUSTOM_INDEX,
  createCustomIndex,
  deleteCustomIndex,
  updateCustomIndex,
} from '../../engine/custom-indexes/custom-index-store';
import type { Database } from '../../engine/db/database';
import {
  createDatastore,
  DATASTORE,
  deleteDatastore,
  updateDatastore,
} from '../../engine/datastores/datastore-store';
import {
  type EntityKind,
  type EntityRecord,
  listEntities,
  viewEntity,
} from '../../engine/entities/entity-store';
import { DomainError, InvalidInput } from '../../engine/errors';
import {
  createPortfolio,
  deletePortfolio,
  PORTFOLIO,
  updatePortfolio,
} from '../../engine/portfolios/portfolio-store';
import {
  createPrivateSecurity,
  deletePrivateSecurity,
  PRIVATE_SECURITY,
  updatePrivateSecurity,
} from '../../engine/private-securities/private-security-store';
import { createReport, deleteReport, reportKind, updateReport } from '../../engine/reports/report-store';
import type { HostFunction } from '../../plugins/sandbox/script-sandbox';

/**
 * The SDK a worker script reaches as `sdk.<name>(...)`. Every call acts in the run's account and
 * workspace, whatever the script passes: `actor` carries the account (and source WORKER plus the
 * workflow ids, which every audit record of the call keeps), and the workspace is forced on every
 * workspace-bound call. Custom indexes and private securities are account-scoped, as in the API.
 */
export interface BridgeScope {
  db: Database;
  actor: Actor;
  workspace: string;
  /** Reports' views carry absolute addresses built on the service's base URL. */
  publicUrl: string;
}

/** One host function: the scope first, then the script's JSON arguments. */
export type SdkFunction = (scope: BridgeScope, ...args: unknown[]) => Promise<unknown>;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function idArgument(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw new InvalidInput(`${name} must be a string.`);
  return value;
}

function fieldsArgument(value: unknown): Record<string, unknown> {
  if (!isPlainObject(value)) throw new InvalidInput('Pass the fields as an object.');
  return value;
}

/**
 * A list's `query` confined to the run's workspace. A JSON query scopes only by its own filters
 * (that is the list API's rule), so the workspace filter is added to them: filters all have to
 * hold, so no filter the script writes can reach past it.
 */
function scopedQuery(query: unknown, workspaceBound: boolean, workspace: string): string | null {
  if (query === undefined || query === null) return null;
  const json = isPlainObject(query)
    ? query
    : typeof query === 'string' && query.trimStart().startsWith('{')
      ? parseJson(query)
      : null;
  if (json === null) {
    if (typeof query !== 'string') throw new InvalidInput('query must be a string or a JSON query object.');
    return query;
  }
  if (!workspaceBound) return JSON.stringify(json);
  const filters = json.filters ?? [];
  if (!Array.isArray(filters))
    throw new InvalidInput('query.filters must be a list of [property, operator, value].');
  return JSON.stringify({ ...json, filters: [...filters, ['workspace', '=', workspace]] });
}

function parseJson(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InvalidInput('query looks like a JSON object but is not valid JSON.');
  }
  if (!isPlainObject(parsed)) throw new InvalidInput('A JSON query must be an object.');
  return parsed;
}

interface Resource {
  /** `Portfolio` gives retrievePortfolio, createPortfolio, updatePortfolio, deletePortfolio. */
  singular: string;
  /** `Portfolios` gives listPortfolios, answering `{portfolios, next_page_token}`. */
  plural: string;
  kind(scope: BridgeScope): EntityKind;
  create(scope: BridgeScope, fields: Record<string, unknown>): Promise<EntityRecord>;
  update(scope: BridgeScope, id: string, fields: Record<string, unknown>): Promise<EntityRecord>;
  remove(scope: BridgeScope, id: string): Promise<Record<string, unknown>>;
}

/** Workspace-bound fields: the run's workspace replaces whatever the script wrote. */
const inWorkspace = (scope: BridgeScope, fields: Record<string, unknown>) => ({
  ...fields,
  workspace: scope.workspace,
});

const RESOURCES: Resource[] = [
  {
    singular: 'Portfolio',
    plural: 'Portfolios',
    kind: () => PORTFOLIO,
    create: (s, fields) => createPortfolio(s.db, s.actor, inWorkspace(s, fields)),
    update: (s, id, fields) => updatePortfolio(s.db, s.actor, id, inWorkspace(s, fields)),
    remove: (s, id) => deletePortfolio(s.db, s.actor, id, s.workspace),
  },
  {
    singular: 'Datastore',
    plural: 'Datastores',
    kind: () => DATASTORE,
    create: (s, fields) => createDatastore(s.db, s.actor, inWorkspace(s, fields)),
    update: (s, id, fields) => updateDatastore(s.db, s.actor, id, inWorkspace(s, fields)),
    remove: (s, id) => deleteDatastore(s.db, s.actor, id, s.workspace),
  },
  {
    singular: 'Report',
    plural: 'Reports',
    kind: (s) => reportKind(s.publicUrl),
    create: (s, fields) => createReport(s.db, s.actor, reportKind(s.publicUrl), inWorkspace(s, fields)),
    update: (s, id, fields) =>
      updateReport(s.db, s.actor, reportKind(s.publicUrl), id, inWorkspace(s, fields)),
    remove: (s, id) => deleteReport(s.db, s.actor, reportKind(s.publicUrl), id, s.workspace),
  },
  {
    singular: 'CustomIndex',
    plural: 'CustomIndexes',
    kind: () => CUSTOM_INDEX,
    create: (s, fields) => createCustomIndex(s.db, s.actor, fields),
    update: (s, symbol, fields) => updateCustomIndex(s.db, s.actor, symbol, fields),
    remove: (s, symbol) => deleteCustomIndex(s.db, s.actor, symbol),
  },
  {
    singular: 'PrivateSecurity',
    plural: 'PrivateSecurities',
    kind: () => PRIVATE_SECURITY,
    create: (s, fields) => createPrivateSecurity(s.db, s.actor, fields),
    update: (s, symbol, fields) => updatePrivateSecurity(s.db, s.actor, symbol, fields),
    remove: (s, symbol) => deletePrivateSecurity(s.db, s.actor, symbol),
  },
];

function resourceFunctions(resource: Resource): Record<string, SdkFunction> {
  const { singular, plural } = resource;
  const key =
    plural.charAt(0).toLowerCase() + plural.slice(1).replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
  return {
    [`retrieve${singular}`]: async (s, id) => {
      const kind = resource.kind(s);
      return kind.view(await viewEntity(s.db, s.actor, kind, idArgument(id, kind.idField), s.workspace));
    },
    [`list${plural}`]: async (s, options) => {
      const kind = resource.kind(s);
      const request =
        typeof options === 'string' || options === undefined || options === null
          ? { query: options }
          : fieldsArgument(options);
      const workspaceBound = kind.scope === 'workspace';
      const { items, next_page_token } = await listEntities(s.db, s.actor, kind, {
        query: scopedQuery(request.query, workspaceBound, s.workspace),
        page_size: (request.page_size as number | string | undefined) ?? null,
        page_token: (request.page_token as string | undefined) ?? null,
        workspace: s.workspace,
      });
      return { [key]: items, next_page_token };
    },
    [`create${singular}`]: async (s, fields) =>
      resource.kind(s).view(await resource.create(s, fieldsArgument(fields))),
    [`update${singular}`]: async (s, id, fields) => {
      const kind = resource.kind(s);
      return kind.view(await resource.update(s, idArgument(id, kind.idField), fieldsArgument(fields)));
    },
    [`delete${singular}`]: async (s, id) => resource.remove(s, idArgument(id, resource.kind(s).idField)),
  };
}

/**
 * Every host function by the name a script calls it with. Files and calculations join this table
 * as they are built: one entry per function, nothing else changes.
 */
export const SDK_FUNCTIONS: Readonly<Record<string, SdkFunction>> = Object.freeze(
  Object.assign({}, ...RESOURCES.map(resourceFunctions)) as Record<string, SdkFunction>,
);

/**
 * The bridge of one worker execution: the table's functions bound to the run's scope. A domain
 * error (not found, invalid fields) reaches the script as its message; anything else is the
 * service's fault and must not show the script SQL or host details.
 */
export function createSdkBridge(scope: BridgeScope): Record<string, HostFunction> {
  return Object.fromEntries(
    Object.entries(SDK_FUNCTIONS).map(([name, fn]) => [
      name,
      async (...args: unknown[]) => {
        try {
          return await fn(scope, ...args);
        } catch (error) {
          if (error instanceof DomainError) throw error;
          throw new Error(`sdk.${name} failed on the service side; try again later.`, { cause: error });
        }
      },
    ]),
  );
}
