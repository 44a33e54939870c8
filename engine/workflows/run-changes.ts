import type { Database } from '../platform/database';
import { connectionOf, ListenConnection } from '../platform/listen-connection';

/** Channel the run-change triggers notify (migrations/20261128000000_console_sessions.ts). */
export const RUN_CHANGES_CHANNEL = 'pas_run_changes';

/** What a subscriber hears: a run (or one of its steps) changed, or everything may have (resync). */
export type RunChange = { kind: 'run'; executionId: string } | { kind: 'resync' };

/**
 * Run and step changes of each account, for the web console's live views: one LISTEN connection
 * per process (opened with the first subscriber), fanned out to the subscribers of the account
 * named in each notification. A notification only says "look again": a subscriber reads the
 * records through the API, so a lost notification costs freshness, never a wrong answer, and the
 * connection coming back (or going down) tells every subscriber to resync.
 */
export class RunChangeFeed {
  private readonly subscribers = new Map<string, Set<(change: RunChange) => void>>();
  private listener: ListenConnection | null = null;

  constructor(
    private readonly db: Database,
    private readonly log: (message: string, error?: unknown) => void = () => undefined,
  ) {}

  subscribe(accountId: string, hear: (change: RunChange) => void): () => void {
    this.listener ??= new ListenConnection(connectionOf(this.db), RUN_CHANGES_CHANNEL, {
      notified: (payload) => {
        const space = payload.indexOf(' ');
        if (space <= 0) return;
        const executionId = payload.slice(space + 1);
        for (const listener of this.subscribers.get(payload.slice(0, space)) ?? []) {
          listener({ kind: 'run', executionId });
        }
      },
      up: () => this.everyone({ kind: 'resync' }),
      down: (error) => {
        this.everyone({ kind: 'resync' });
        this.log('console live updates off: their LISTEN connection was lost; retrying', error);
      },
    });
    let set = this.subscribers.get(accountId);
    if (!set) this.subscribers.set(accountId, (set = new Set()));
    set.add(hear);
    return () => {
      set.delete(hear);
      if (set.size === 0) this.subscribers.delete(accountId);
    };
  }

  private everyone(change: RunChange): void {
    for (const set of this.subscribers.values()) for (const hear of set) hear(change);
  }

  async close(): Promise<void> {
    this.subscribers.clear();
    await this.listener?.close();
    this.listener = null;
  }
}
