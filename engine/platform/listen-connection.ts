import pg from 'pg';
import type { Database } from './database';

const RECONNECT_MS = 1_000;

export interface ListenHandlers {
  /** A notification on the channel (its payload, '' when none). */
  notified(payload: string): void;
  /** The connection is up and listening: whatever happened while nobody listened is unknown. */
  up(): void;
  /** The connection was lost (it retries every second until closed). */
  down(error?: unknown): void;
}

/**
 * One dedicated PostgreSQL connection that LISTENs on `channel` and reconnects after a loss, for
 * the process-local state that notifications keep current (the credential cache, waits on runs).
 * `active` says whether it is listening now; a user that could miss a notification while it is
 * not must not rely on one.
 */
export class ListenConnection {
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private listening = false;

  constructor(
    private readonly connection: string | pg.ClientConfig,
    private readonly channel: string,
    private readonly handlers: ListenHandlers,
  ) {
    void this.listen();
  }

  get active(): boolean {
    return this.listening;
  }

  private async listen(): Promise<void> {
    this.timer = null;
    if (this.closed) return;
    const client = new pg.Client(
      typeof this.connection === 'string' ? { connectionString: this.connection } : this.connection,
    );
    this.client = client;
    const lost = (error?: unknown) => {
      if (this.client !== client) return;
      this.client = null;
      this.listening = false;
      client.end().catch(() => undefined);
      this.handlers.down(error);
      if (!this.closed) this.timer = setTimeout(() => void this.listen(), RECONNECT_MS);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      if (message.channel === this.channel) this.handlers.notified(message.payload ?? '');
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
      if (this.client !== client) return;
      this.listening = true;
      this.handlers.up();
    } catch (error) {
      lost(error);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.listening = false;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}

/** The connection settings of `db` (a listener connects as the pool does). */
export function connectionOf(db: Database): string | pg.ClientConfig {
  return (db.client as { config: { connection: string | pg.ClientConfig } }).config.connection;
}
