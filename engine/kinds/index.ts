import type { ResourceKind } from '../store/resource-kind';
import { CUSTOM_INDEX } from './custom-index';
import { DATASTORE } from './datastore';
import { INTEGRATION } from './integration';
import { PORTFOLIO } from './portfolio';
import { PRIVATE_SECURITY } from './private-security';
import { REPORT_TEMPLATE } from './report-template';
import { USER_APP } from './user-app';
import { WORKER_TEMPLATE } from './worker-template';

/**
 * Every declared resource kind, one file each in this folder. The API registers a kind's routes by
 * looping over this table (api/app.ts, typed so a kind without routes does not compile), and the
 * workers' SDK bridge exposes the kinds of SDK_KINDS.
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

/** The kinds a worker script reaches through the SDK bridge, by the names its functions carry. */
export const SDK_KINDS: ReadonlyArray<{ kind: ResourceKindName; singular: string; plural: string }> = [
  { kind: 'portfolio', singular: 'Portfolio', plural: 'Portfolios' },
  { kind: 'datastore', singular: 'Datastore', plural: 'Datastores' },
  { kind: 'customIndex', singular: 'CustomIndex', plural: 'CustomIndexes' },
  { kind: 'privateSecurity', singular: 'PrivateSecurity', plural: 'PrivateSecurities' },
];
