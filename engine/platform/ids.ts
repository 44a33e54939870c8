import { randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `length` characters of [A-Za-z0-9], uniformly drawn (rejection sampling keeps it unbiased). */
export function randomAlphanumeric(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const ID_PREFIXES = {
  portfolio: 'port_',
  datastore: 'dats_',
  file: 'file_',
  report: 'repo_',
  reportTemplate: 'rtpl_',
  workflow: 'wrkf_',
  worker: 'wrkr_',
  workflowExecution: 'wfex_',
  workerExecution: 'wkex_',
  workerTemplate: 'wtpl_',
  userApp: 'uapp_',
  integration: 'intg_',
  auditLog: 'audl_',
  apiKey: 'sid_',
  account: 'acct_',
  user: 'user_',
  oauthClient: 'ocid_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** Ids are the prefix plus 25 characters of [a-zA-Z0-9], as the hosted product issues them. */
export function newId(kind: IdKind): string {
  return ID_PREFIXES[kind] + randomAlphanumeric(25);
}

export function isId(kind: IdKind, value: string): boolean {
  const prefix = ID_PREFIXES[kind];
  return value.startsWith(prefix) && /^[A-Za-z0-9]{25}$/.test(value.slice(prefix.length));
}
