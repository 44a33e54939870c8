import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/**
 * Envelope encryption of secret values (AES-256-GCM). Each secret has its own random 256-bit data
 * key; the value is sealed with it, and the data key is sealed (wrapped) with the installation's
 * master key. Rotating the master key re-wraps the small data keys and never touches a value.
 *
 * Both seals carry associated data naming what they belong to (the account and the secret's id),
 * so a ciphertext copied onto another row, or another account's, fails to open instead of reading
 * as that row's value. A sealed blob is `iv (12) ‖ tag (16) ‖ ciphertext`.
 */

export const MASTER_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const FORMAT = 'pas-secret-v1';

export interface MasterKey {
  /** Names the key without revealing it: the first 16 hex digits of an HMAC of a fixed label. */
  id: string;
  key: Buffer;
}

/** What a secret's row stores: nothing here reads as the value or the data key without the master key. */
export interface SealedValue {
  keyId: string;
  wrappedKey: Buffer;
  ciphertext: Buffer;
}

/** Where a sealed value belongs; part of both seals' associated data. */
export interface SealContext {
  accountId: string;
  secretId: string;
}

export function masterKeyOf(key: Buffer): MasterKey {
  if (key.length !== MASTER_KEY_BYTES) {
    throw new Error(`A master key is ${MASTER_KEY_BYTES} bytes; this one has ${key.length}.`);
  }
  const id = createHmac('sha256', key).update('pas secrets master key id').digest('hex').slice(0, 16);
  return { id, key: Buffer.from(key) };
}

export function newMasterKey(): MasterKey {
  return masterKeyOf(randomBytes(MASTER_KEY_BYTES));
}

/**
 * A master key as written in SECRETS_KEY or a key file: 64 hex digits, or the Base64 (standard or
 * URL-safe) of 32 bytes. Null for anything else, so the caller can name the setting.
 */
export function parseMasterKey(text: string): MasterKey | null {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return masterKeyOf(Buffer.from(trimmed, 'hex'));
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) {
    const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length === MASTER_KEY_BYTES) return masterKeyOf(bytes);
  }
  return null;
}

/** The form a key file holds: Base64, one key per line. */
export function formatMasterKey(key: MasterKey): string {
  return key.key.toString('base64');
}

function seal(key: Buffer, plaintext: Buffer, aad: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** Null when the blob does not open under `key` with `aad` (wrong key, other row, altered bytes). */
function open(key: Buffer, blob: Buffer, aad: string): Buffer | null {
  if (blob.length < IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, blob.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(blob.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(blob.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  } catch {
    return null;
  }
}

const keyAad = (context: SealContext) => `${FORMAT}:data-key:${context.accountId}:${context.secretId}`;
const valueAad = (context: SealContext) => `${FORMAT}:value:${context.accountId}:${context.secretId}`;

export function sealValue(master: MasterKey, context: SealContext, value: string): SealedValue {
  const dataKey = randomBytes(32);
  try {
    return {
      keyId: master.id,
      wrappedKey: seal(master.key, dataKey, keyAad(context)),
      ciphertext: seal(dataKey, Buffer.from(value, 'utf8'), valueAad(context)),
    };
  } finally {
    dataKey.fill(0);
  }
}

/** Why a sealed value did not open: which key it needs, and what went wrong. */
export type OpenFailure =
  { reason: 'unknown-key'; keyId: string } | { reason: 'does-not-open'; keyId: string };

export function openValue(
  keys: ReadonlyMap<string, MasterKey>,
  context: SealContext,
  sealed: SealedValue,
): { value: string } | OpenFailure {
  const master = keys.get(sealed.keyId);
  if (!master) return { reason: 'unknown-key', keyId: sealed.keyId };
  const dataKey = open(master.key, sealed.wrappedKey, keyAad(context));
  if (!dataKey) return { reason: 'does-not-open', keyId: sealed.keyId };
  try {
    const value = open(dataKey, sealed.ciphertext, valueAad(context));
    if (!value) return { reason: 'does-not-open', keyId: sealed.keyId };
    return { value: value.toString('utf8') };
  } finally {
    dataKey.fill(0);
  }
}

/** The same value under another master key: the data key is unwrapped and wrapped again. */
export function rewrap(
  keys: ReadonlyMap<string, MasterKey>,
  to: MasterKey,
  context: SealContext,
  sealed: SealedValue,
): SealedValue | OpenFailure {
  const master = keys.get(sealed.keyId);
  if (!master) return { reason: 'unknown-key', keyId: sealed.keyId };
  const dataKey = open(master.key, sealed.wrappedKey, keyAad(context));
  if (!dataKey) return { reason: 'does-not-open', keyId: sealed.keyId };
  try {
    return {
      keyId: to.id,
      wrappedKey: seal(to.key, dataKey, keyAad(context)),
      ciphertext: sealed.ciphertext,
    };
  } finally {
    dataKey.fill(0);
  }
}
