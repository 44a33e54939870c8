import type { ResourceKind } from '../store/resource-kind';
import { ID_PREFIXES } from '../platform/ids';
import { CUSTOM_INDEX } from './custom-index';
import { DATASTORE } from './datastore';
import { INTEGRATION } from './integration';
import { PORTFOLIO } from './portfolio';
import { PRIVATE_SECURITY } from './private-security';
import { REPORT_TEMPLATE } from './report-template';
import { USER_APP } from './user-app';
import { WORKER_TEMPLATE } from './worker-template';

/**
 * Every declared resource kind, one file each in this folder. The API registers each kind's routes
 * by looping over this table (api/app.ts), the id registry below takes each kind's prefix from it,
 * and the workers' SDK bridge exposes the kinds of SDK_KINDS.
 */
export const RESOURCE_KINDS = {
  portfolio: PORTFOLIO,
  datastore: DATASTORE,
  reportTemplate: REPORT_TEMPLATE,
  customIndex: CUSTOM_INDEX,
  privateSecurity: PRIVATE_SECURITY,
  workerTemplate: WORKER_TEMPLATE,
  userApp: USER_APP,
  integration: INTEGRATION,
} satisfies Record<string, ResourceKind>;

export type ResourceKindName = keyof typeof RESOURCE_KINDS;

/**
 * The kinds a worker script reaches through the SDK bridge, by the names their declaration derives
 * (retrievePortfolio, listPortfolios, …).
 */
export const SDK_KINDS: readonly ResourceKindName[] = [
  'portfolio',
  'datastore',
  'customIndex',
  'privateSecurity',
];

/**
 * Every id prefix the service issues, by what it identifies: the platform's (ID_PREFIXES) and each
 * declared kind's own (generated ids only; client-named kinds have none). A prefix used twice would
 * make an id ambiguous: the module refuses to load.
 */
export const ID_REGISTRY: Readonly<Record<string, string>> = (() => {
  const registry: Record<string, string> = { ...ID_PREFIXES };
  for (const [name, kind] of Object.entries(RESOURCE_KINDS) as Array<[string, ResourceKind]>) {
    if (kind.idPrefix !== null) registry[name] = kind.idPrefix;
  }
  const prefixes = Object.values(registry);
  const twice = prefixes.find((prefix, i) => prefixes.indexOf(prefix) !== i);
  if (twice) throw new Error(`The id prefix ${twice} is used by two kinds.`);
  return Object.freeze(registry);
})();
