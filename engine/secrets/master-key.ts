import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SecretKeyUnavailable } from '../platform/errors';
import { formatMasterKey, type MasterKey, newMasterKey, parseMasterKey } from './secret-crypto';

/** The key file made in DATA_DIR when neither SECRETS_KEY nor SECRETS_KEY_FILE is set. */
export const DEFAULT_KEY_FILE_NAME = 'secrets.key';

/** Where the master keys come from; each process resolves it the same way from its configuration. */
export type KeySetting =
  | { kind: 'env'; text: string }
  | { kind: 'file'; path: string; explicit: boolean }
  | { kind: 'none'; why: string };

export interface KeyringSettings {
  secretsKey: string | null;
  secretsKeyFile: string | null;
  dataDir: string;
}

export function keySetting(config: KeyringSettings): KeySetting {
  if (config.secretsKey !== null) return { kind: 'env', text: config.secretsKey };
  if (config.secretsKeyFile !== null) return { kind: 'file', path: config.secretsKeyFile, explicit: true };
  return { kind: 'file', path: path.join(config.dataDir, DEFAULT_KEY_FILE_NAME), explicit: false };
}

/**
 * Keys written one per line (the first is the current one, later ones are still read): what
 * SECRETS_KEY holds comma-separated and a key file holds line by line. Blank lines and `#` comments
 * are skipped. The error names the line, never its text.
 */
export function parseKeyList(text: string, separator: RegExp, where: string): MasterKey[] {
  const keys: MasterKey[] = [];
  const entries = text.split(separator);
  entries.forEach((entry, index) => {
    const trimmed = entry.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const key = parseMasterKey(trimmed);
    if (key === null) {
      throw new Error(
        `${where}: entry ${index + 1} is not a master key (64 hex digits, or the Base64 of 32 bytes)`,
      );
    }
    if (!keys.some((k) => k.id === key.id)) keys.push(key);
  });
  if (keys.length === 0) throw new Error(`${where} holds no key`);
  return keys;
}

/** A new key file: the key and a line saying what it is; created only if absent (two starts race). */
export function writeNewKeyFile(file: string, keys: MasterKey[], flag: 'wx' | 'w' = 'wx'): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const text =
    "# Master key of the service's secrets (AES-256, Base64). Back it up apart from the data:\n" +
    '# a backup does not hold it, and without it no stored secret can be read.\n' +
    keys.map((k) => `${formatMasterKey(k)}\n`).join('');
  writeFileSync(file, text, { flag, mode: 0o600 });
}

interface Loaded {
  keys: MasterKey[];
  problem: string | null;
  /** The key file's identity when it was read, to notice a rotation by another process. */
  stamp: string | null;
}

function fileStamp(file: string): string | null {
  try {
    const stat = statSync(file);
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  } catch {
    return null;
  }
}

/**
 * The master keys this process holds. The first is current (new seals use it); the others only
 * open what was sealed under them (a rotation under way). A key file is read again when it changes
 * (`pas secrets rotate-key` writes a new one while the service runs), so running processes follow a
 * rotation without a restart. A process without a usable key starts anyway: each use of a secret
 * then says why, and everything else works.
 */
export class SecretsKeyring {
  private loaded: Loaded;
  /** Set when this process made the key file (the first start): the launcher's banner says so. */
  readonly created: boolean;

  private constructor(
    readonly setting: KeySetting,
    options: { create: boolean },
  ) {
    let created = false;
    if (setting.kind === 'file' && !setting.explicit && options.create && fileStamp(setting.path) === null) {
      try {
        writeNewKeyFile(setting.path, [newMasterKey()]);
        created = true;
      } catch (error) {
        // Another process made it first: read theirs.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
    this.created = created;
    this.loaded = this.load();
  }

  /** The keyring of a configuration; makes DATA_DIR's key file when nothing names a key. */
  static fromConfig(config: KeyringSettings, options: { create?: boolean } = {}): SecretsKeyring {
    return new SecretsKeyring(keySetting(config), { create: options.create ?? true });
  }

  /** Fixed keys (tests, tools): the first is current. */
  static fromKeys(keys: MasterKey[]): SecretsKeyring {
    return new SecretsKeyring({ kind: 'env', text: keys.map(formatMasterKey).join(',') }, { create: false });
  }

  /** No key at all: every use of a secret says `why`. */
  static unavailable(why: string): SecretsKeyring {
    return new SecretsKeyring({ kind: 'none', why }, { create: false });
  }

  /** Where the keys come from, for messages and the banner (never the key). */
  describe(): string {
    if (this.setting.kind === 'env') return 'SECRETS_KEY';
    if (this.setting.kind === 'none') return 'no master key';
    return this.setting.explicit ? `SECRETS_KEY_FILE ${this.setting.path}` : `key file ${this.setting.path}`;
  }

  private load(): Loaded {
    const setting = this.setting;
    if (setting.kind === 'none') return { keys: [], problem: setting.why, stamp: null };
    if (setting.kind === 'env') {
      try {
        return { keys: parseKeyList(setting.text, /,/, 'SECRETS_KEY'), problem: null, stamp: null };
      } catch (error) {
        return { keys: [], problem: (error as Error).message, stamp: null };
      }
    }
    const stamp = fileStamp(setting.path);
    let text: string;
    try {
      text = readFileSync(setting.path, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
      return { keys: [], problem: `${this.describe()} cannot be read (${code})`, stamp };
    }
    try {
      return { keys: parseKeyList(text, /\r?\n/, this.describe()), problem: null, stamp };
    } catch (error) {
      return { keys: [], problem: (error as Error).message, stamp };
    }
  }

  /** Reads the key file again if it changed since it was read. */
  private refresh(): void {
    if (this.setting.kind !== 'file') return;
    if (fileStamp(this.setting.path) !== this.loaded.stamp) this.loaded = this.load();
  }

  /** Why no key is usable, or null. */
  problem(): string | null {
    this.refresh();
    return this.loaded.problem;
  }

  /** The key new seals use. */
  current(): MasterKey {
    this.refresh();
    const key = this.loaded.keys[0];
    if (!key) {
      throw new SecretKeyUnavailable(
        `Secrets cannot be stored or read: ${this.loaded.problem ?? 'no master key'}. Set SECRETS_KEY or SECRETS_KEY_FILE (docs/integrations.md).`,
      );
    }
    return key;
  }

  /** Every key held, by id (a missing id makes the key file be read again first). */
  keys(neededId?: string): ReadonlyMap<string, MasterKey> {
    if (neededId === undefined || !this.loaded.keys.some((k) => k.id === neededId)) this.refresh();
    return new Map(this.loaded.keys.map((k) => [k.id, k]));
  }

  /** The ids of the keys held, current first (for messages and `pas secrets status`). */
  keyIds(): string[] {
    this.refresh();
    return this.loaded.keys.map((k) => k.id);
  }
}
