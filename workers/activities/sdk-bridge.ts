import { runBookCalculation } from '../../engine/calculations/book-analytics';
import type { SimulationBackend } from '../../calc';
import type { Actor } from '../../engine/platform/principal';
import { type AnalyticsKind, runAnalyticsCalculation } from '../../engine/calculations/analytics';
import {
  runRiskAttributionCalculation,
  runStressTestCalculation,
} from '../../engine/calculations/calculation-service';
import {
  type CalculationBodyOf,
  type CalculationName,
  validateCalculationBody,
} from '../../engine/calculations/calculation-schemas';
import type { Database } from '../../engine/platform/database';
import { RESOURCE_KINDS, SDK_KINDS } from '../../engine/kinds';
import {
  createResource,
  deleteResource,
  type ResourceKind,
  updateResource,
  validateRequest,
} from '../../engine/store/resource-kind';
import { type EntityKind, type EntityRecord, viewEntity } from '../../engine/store/entity-store';
import { listEntities } from '../../engine/store/list-entities';
import { DomainError, InvalidInput, PayloadTooLarge } from '../../engine/platform/errors';
import { createFile, deleteFile, FILE, fileBody, fileBytes, updateFile } from '../../engine/files/file-store';
import { type FileBodyOf, type FileOperation, validateFileBody } from '../../engine/files/file-schemas';
import { createReport, deleteReport, reportKind, updateReport } from '../../engine/reports/report-store';
import { validateReportBody } from '../../engine/reports/report-schemas';
import type { HostFunction } from '../../plugins/sandbox/script-sandbox';
import type { CallMode, SdkJournal } from './sdk-journal';
import { isPlainObject } from '../../engine/platform/plain-object';
import {
  requestThroughIntegration,
  sendEmailThroughIntegration,
  type StepOutbound,
} from '../../engine/integrations/outbound-calls';

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
  /** Where runStressTest and runRiskAttribution simulate; the engine's reference backend if absent. */
  simulation?: SimulationBackend;
  /** The step's outbound calls and secrets (sdk.request, sdk.sendEmail, sdk.secret); absent: not offered. */
  outbound?: StepOutbound;
}

/** One host function: the scope first, then the script's JSON arguments. */
export type SdkFunction = (scope: BridgeScope, ...args: unknown[]) => Promise<unknown>;

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

/**
 * A file's content as the script passes it: `data` (the API's field) or its alias `content`, both
 * strict Base64, or `text`, a string stored as UTF-8 (isolates have neither Buffer nor btoa).
 * Exactly one of them; the engine then sees only `data`. The body, in the run's workspace, is then
 * validated with the schema of POST /files (PUT /files/{id}) and the API's validator: refused with the
 * API's own message, and typed from then on, as the route's body is.
 */
function fileFields<K extends FileOperation>(
  scope: BridgeScope,
  operation: K,
  fields: Record<string, unknown>,
): FileBodyOf<K> {
  const given = (['data', 'content', 'text'] as const).filter(
    (key) => fields[key] !== undefined && fields[key] !== null,
  );
  if (given.length !== 1) {
    throw new InvalidInput(
      'Pass the file content as exactly one of text (a string, stored as UTF-8) or data (Base64; content is accepted as an alias).',
    );
  }
  const { data: _data, content: _content, text, ...rest } = fields;
  let data = fields[given[0]!];
  if (given[0] === 'text') {
    if (typeof text !== 'string') throw new InvalidInput('text must be a string.');
    data = Buffer.from(text, 'utf8').toString('base64');
  }
  return validateFileBody(operation, inWorkspace(scope, { ...rest, data }));
}

/** The most bytes readFile hands into the isolate (its JSON, Base64 included, must fit the sandbox). */
export const READ_FILE_MAX_BYTES = 10 * 1024 * 1024;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * `readFile(id, {encoding})`: the file's metadata plus its content, as `text` when the bytes are
 * valid UTF-8 (and `encoding` is not `base64`), otherwise as `content` in Base64. Audited as a VIEW.
 */
async function readFileContent(scope: BridgeScope, id: unknown, options: unknown): Promise<unknown> {
  const fileId = idArgument(id, 'id');
  const encoding = options === undefined || options === null ? 'auto' : fieldsArgument(options).encoding;
  if (encoding !== undefined && encoding !== 'auto' && encoding !== 'text' && encoding !== 'base64') {
    throw new InvalidInput('encoding must be auto (default), text or base64.');
  }
  const record = await viewEntity(scope.db, scope.actor, FILE, fileId, scope.workspace);
  const size = fileBody(record).size;
  if (size > READ_FILE_MAX_BYTES) {
    throw new PayloadTooLarge(
      `File ${fileId} holds ${size} bytes; readFile returns at most ${READ_FILE_MAX_BYTES} bytes into a script.`,
    );
  }
  const pieces: Buffer[] = [];
  for await (const piece of fileBytes(scope.db, record)) pieces.push(piece);
  const bytes = Buffer.concat(pieces);
  const view = { id: record.id, name: record.name, content_type: fileBody(record).content_type, size };
  if (encoding !== 'base64') {
    try {
      return { ...view, text: strictUtf8.decode(bytes) };
    } catch {
      if (encoding === 'text') throw new InvalidInput(`File ${fileId} is not valid UTF-8 text.`);
    }
  }
  return { ...view, content: bytes.toString('base64') };
}

/**
 * A calculation body in the run's workspace whatever the script wrote, validated with the schema of
 * the endpoint POST /calculations/<name> and the API's validator: refused with the API's own message,
 * and typed from then on, as the route's body is (the engine does not check it again).
 */
function calculationBody<K extends CalculationName>(
  scope: BridgeScope,
  name: K,
  body: unknown,
): CalculationBodyOf<K> {
  if (!isPlainObject(body)) throw new InvalidInput('Pass the calculation request as an object.');
  return validateCalculationBody(name, { ...body, workspace: scope.workspace });
}

/**
 * A kind declared once (engine/kinds/, listed in SDK_KINDS) needs no code of its own here: its
 * function names come from its declaration, and the fields are validated with the kind's request
 * schema (validateRequest), the one the API validates with, before createResource/updateResource.
 */
function declared(kind: ResourceKind): Resource {
  const scoped = (s: BridgeScope, fields: Record<string, unknown>) =>
    kind.scope === 'workspace' ? inWorkspace(s, fields) : fields;
  return {
    singular: kind.names.sdkSingular,
    plural: kind.names.sdkPlural,
    kind: () => kind,
    create: (s, fields) => {
      const input = scoped(s, fields);
      validateRequest(kind, 'create', input);
      return createResource(s.db, s.actor, kind, input);
    },
    update: (s, id, fields) => {
      const input = scoped(s, fields);
      validateRequest(kind, 'update', input);
      return updateResource(s.db, s.actor, kind, id, input);
    },
    remove: (s, id) => deleteResource(s.db, s.actor, kind, id, s.workspace),
  };
}

const RESOURCES: Resource[] = [
  ...SDK_KINDS.map((name) => declared(RESOURCE_KINDS[name])),
  {
    singular: 'Report',
    plural: 'Reports',
    kind: (s) => reportKind(s.publicUrl),
    // The routes' request schemas, with the API's validator: refused in the API's words, typed from then on.
    create: (s, fields) =>
      createReport(
        s.db,
        s.actor,
        reportKind(s.publicUrl),
        validateReportBody('create', inWorkspace(s, fields)),
      ),
    update: (s, id, fields) =>
      updateReport(
        s.db,
        s.actor,
        reportKind(s.publicUrl),
        id,
        validateReportBody('update', inWorkspace(s, fields)),
      ),
    remove: (s, id) => deleteReport(s.db, s.actor, reportKind(s.publicUrl), id, s.workspace),
  },
  {
    singular: 'File',
    plural: 'Files',
    kind: () => FILE,
    create: (s, fields) => createFile(s.db, s.actor, fileFields(s, 'create', fields)),
    update: (s, id, fields) => updateFile(s.db, s.actor, id, fileFields(s, 'update', fields)),
    remove: (s, id) => deleteFile(s.db, s.actor, id, s.workspace),
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
 * The analytics of calc-methodology §16–§19, one `run<Kind>` each, answering what
 * POST /calculations/<kind> answers under its key (`exposure`, `properties`, …).
 */
function analyticsFunctions(names: Record<string, AnalyticsKind>): Record<string, SdkFunction> {
  return Object.fromEntries(
    Object.entries(names).map(([name, kind]) => [
      name,
      async (s: BridgeScope, body: unknown) =>
        runAnalyticsCalculation(
          s.db,
          s.actor,
          kind,
          calculationBody(s, kind, body),
          s.workspace,
          {},
          s.simulation,
        ),
    ]),
  );
}

/**
 * Beyond the resources: a file's content, and the calculations. A calculation answers what the
 * API's POST /calculations/<kind> answers under its key (`stress_test`, `risk_attribution`).
 */
const OTHER_FUNCTIONS: Record<string, SdkFunction> = {
  readFile: (s, id, options) => readFileContent(s, id, options),
  runStressTest: async (s, body) =>
    runStressTestCalculation(
      s.db,
      s.actor,
      calculationBody(s, 'stress_test', body),
      s.workspace,
      {},
      s.simulation,
    ),
  runRiskAttribution: async (s, body) =>
    runRiskAttributionCalculation(
      s.db,
      s.actor,
      calculationBody(s, 'risk_attribution', body),
      s.workspace,
      {},
      s.simulation,
    ),
  ...analyticsFunctions({
    runExposure: 'exposure',
    runParametricRiskAttribution: 'parametric_risk_attribution',
    runSensitivity: 'sensitivity',
    runUnderlyingStressSensitivity: 'underlying_stress_sensitivity',
    runProperties: 'properties',
  }),
  // §20, §21: whole books, the clients' bodies (portfolio1/portfolio2, portfolio).
  runMarginalTrackingError: async (s, body) =>
    runBookCalculation(
      s.db,
      s.actor,
      'marginal_tracking_error',
      calculationBody(s, 'marginal_tracking_error', body),
      s.workspace,
    ),
  runBacktest: async (s, body) =>
    runBookCalculation(s.db, s.actor, 'backtest', calculationBody(s, 'backtest', body), s.workspace),
  runBacktestStatistics: async (s, body) =>
    runBookCalculation(
      s.db,
      s.actor,
      'backtest_statistics',
      calculationBody(s, 'backtest_statistics', body),
      s.workspace,
    ),
  // The outside world, through the account's integrations (engine/integrations/outbound-calls.ts).
  request: (s, integration, options) => requestThroughIntegration(s.db, outbound(s), integration, options),
  sendEmail: (s, integration, message) =>
    sendEmailThroughIntegration(s.db, outbound(s), integration, message),
  secret: (s, name) => outbound(s).secret(name, 'sdk.secret'),
};

function outbound(scope: BridgeScope): StepOutbound {
  if (!scope.outbound) throw new InvalidInput('Outbound calls and secrets are not offered here.');
  return scope.outbound;
}

/**
 * Every host function by the name a script calls it with: one entry per function, nothing else
 * changes.
 */
export const SDK_FUNCTIONS: Readonly<Record<string, SdkFunction>> = Object.freeze(
  Object.assign({}, ...RESOURCES.map(resourceFunctions), OTHER_FUNCTIONS) as Record<string, SdkFunction>,
);

/**
 * Reads only look (their VIEW audit aside) and are journaled after the fact; everything else acts
 * and is journaled in the transaction of its effect (see sdk-journal.ts).
 */
export function callMode(name: string): CallMode {
  if (name === 'secret') return 'unrecorded';
  // Sent outside the database: journaled once answered, so a retried attempt does not send it again.
  if (name === 'request' || name === 'sendEmail') return 'external';
  return /^(retrieve|list|read)[A-Z]/.test(name) ? 'read' : 'write';
}

/**
 * The bridge of one worker execution: the table's functions bound to the run's scope. A domain
 * error (not found, invalid fields) reaches the script as its message; anything else is the
 * service's fault and must not show the script SQL or host details. With a journal, each call is
 * recorded (and, on a retried attempt, answered from the record): see sdk-journal.ts.
 */
export function createSdkBridge(scope: BridgeScope, journal?: SdkJournal): Record<string, HostFunction> {
  return Object.fromEntries(
    Object.entries(SDK_FUNCTIONS).map(([name, fn]) => [
      name,
      async (...args: unknown[]) => {
        try {
          if (journal === undefined) return await fn(scope, ...args);
          return await journal.call(name, args, callMode(name), (db) => fn({ ...scope, db }, ...args));
        } catch (error) {
          if (error instanceof DomainError) throw error;
          throw new Error(`sdk.${name} failed on the service side; try again later.`, { cause: error });
        }
      },
    ]),
  );
}
