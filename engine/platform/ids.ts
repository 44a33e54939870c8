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

/**
 * The id prefixes of what is not a declared resource kind. A declared kind (engine/kinds/) names
 * its own prefix in its declaration; `ID_REGISTRY` in engine/kinds/index.ts joins both and refuses
 * a prefix used twice.
 */
export const ID_PREFIXES = {
  file: 'file_',
  report: 'repo_',
  workflow: 'wrkf_',
  worker: 'wrkr_',
  workflowExecution: 'wfex_',
  workerExecution: 'wkex_',
  auditLog: 'audl_',
  apiKey: 'sid_',
  account: 'acct_',
  user: 'user_',
  oauthClient: 'ocid_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;
/** An id prefix as written (`dats_`): a kind's own, or one of ID_PREFIXES. */
export type IdPrefix = `${string}_`;

/** The prefix of `kind`, or `kind` itself when it is already a prefix (`dats_`). */
export function idPrefixOf(kind: IdKind | IdPrefix): string {
  return kind in ID_PREFIXES ? ID_PREFIXES[kind as IdKind] : kind;
}

/** Ids are the prefix plus 25 characters of [a-zA-Z0-9], as the hosted product issues them. */
export function newId(kind: IdKind | IdPrefix): string {
  return idPrefixOf(kind) + randomAlphanumeric(25);
}

export function isId(kind: IdKind | IdPrefix, value: string): boolean {
  const prefix = idPrefixOf(kind);
  return value.startsWith(prefix) && /^[A-Za-z0-9]{25}$/.test(value.slice(prefix.length));
}
