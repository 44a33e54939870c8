import type pg from 'pg';
import type { Database } from '../platform/database';
import { connectionOf, ListenConnection } from '../platform/listen-connection';
import type { Principal } from '../platform/principal';

/** Channel the `pas_credentials` triggers notify (migrations/20261124030000_credential_notify.ts). */
export const CREDENTIALS_CHANNEL = 'pas_credentials';

/** A safety net only: a change is normally seen at once through the channel. */
const MAX_AGE_MS = 5 * 60_000;
const MAX_ENTRIES = 10_000;

/** Every cache of this process, so a change made here empties them synchronously, before any reply. */
const caches = new Set<CredentialCache>();

/**
 * Empties every credential cache of this process. Called after a change to credentials commits,
 * so the next request of this process already sees it; other processes hear the NOTIFY.
 */
export function invalidateCachedCredentials(): void {
  for (const cache of caches) cache.invalidate();
}

interface Entry {
  principal: Principal;
  expiresAtMs: number;
}

export interface ResolvedCredential {
  principal: Principal;
  /** When the credential itself expires (an access token), if it does. */
  expiresAt: Date | null;
}

/**
 * Resolved credentials kept in process, keyed by the credential and the digest of its secret (a
 * wrong secret is a miss, looked up and refused). It serves only while its LISTEN connection is up:
 * a process that could miss a revocation does not cache. Any notification empties it; a lookup that
 * raced a notification is not stored (the generation moved on).
 */
export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;
  private readonly listener: ListenConnection;
  private closed = false;

  constructor(
    connection: string | pg.ClientConfig,
    private readonly log: (message: string, error?: unknown) => void = () => undefined,
  ) {
    caches.add(this);
    this.listener = new ListenConnection(connection, CREDENTIALS_CHANNEL, {
      notified: () => this.invalidate(),
      // Whatever changed while nobody listened is unknown: start empty.
      up: () => this.invalidate(),
      down: (error) => {
        this.invalidate();
        if (!this.closed) this.log('credential cache off: its LISTEN connection was lost; retrying', error);
      },
    });
  }

  /** Whether lookups are being cached (the LISTEN connection is up). */
  get active(): boolean {
    return this.listener.active;
  }

  invalidate(): void {
    this.generation += 1;
    this.entries.clear();
  }

  async resolve(key: string, lookup: () => Promise<ResolvedCredential | null>): Promise<Principal | null> {
    const now = Date.now();
    const hit = this.active ? this.entries.get(key) : undefined;
    if (hit && hit.expiresAtMs > now) return hit.principal;
    if (hit) this.entries.delete(key);
    const generation = this.generation;
    const resolved = await lookup();
    // Refusals are not cached: a key created a moment later must work at once.
    if (resolved && this.active && generation === this.generation) {
      if (this.entries.size >= MAX_ENTRIES) {
        const oldest = this.entries.keys().next().value;
        if (oldest !== undefined) this.entries.delete(oldest);
      }
      const expiresAtMs = Math.min(now + MAX_AGE_MS, resolved.expiresAt?.getTime() ?? Infinity);
      this.entries.set(key, { principal: resolved.principal, expiresAtMs });
    }
    return resolved?.principal ?? null;
  }

  async close(): Promise<void> {
    this.closed = true;
    caches.delete(this);
    this.invalidate();
    await this.listener.close();
  }
}

/** A cache listening on the database `db` is connected to. */
export function startCredentialCache(
  db: Database,
  log?: (message: string, error?: unknown) => void,
): CredentialCache {
  return new CredentialCache(connectionOf(db), log);
}
