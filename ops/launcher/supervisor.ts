import { setTimeout as sleep } from 'node:timers/promises';

/** One running instance of a supervised child. */
export interface Instance {
  /** Settles when the instance ends, however it ends, saying how (`exited with code 1`). */
  exited: Promise<string>;
  stop(): Promise<void>;
}

export interface ChildSpec {
  name: string;
  /** Starts an instance; resolves once it is ready to be used, rejects when it cannot start. */
  start(): Promise<Instance>;
  /** Children that must be running again before this one is restarted (the worker needs Temporal). */
  needs?: string[];
}

export interface SupervisorOptions {
  /** The service gives up on a child that failed more than this many times within `windowMs`. */
  maxFailures: number;
  windowMs: number;
  /** Delay before restart number `attempt` (1-based). */
  backoffMs(attempt: number): number;
  log(line: string): void;
  /** Called once, when a child failed too often; the caller stops the service. */
  giveUp(name: string, reason: string): void;
}

/** 0.5 s, 1 s, 2 s, 4 s … at most 10 s: quick for a one-off crash, gentle on a child that keeps failing. */
export function exponentialBackoff(attempt: number): number {
  return Math.min(500 * 2 ** (attempt - 1), 10_000);
}

interface Slot {
  spec: ChildSpec;
  instance: Instance | null;
  /** Resolves when the child is running; replaced while it is down. */
  up: Promise<void>;
  markUp: () => void;
  failures: number[];
}

/**
 * Restarts the launcher's children when they die: PostgreSQL (crash recovery on its own data), the
 * Temporal dev server (on its SQLite file), the worker and the API. A restart waits for the children it
 * needs, so a worker that died with Temporal comes back once Temporal does instead of failing again.
 * Only a child that keeps failing (more than maxFailures within windowMs, failed restarts included)
 * stops the service, and the message says which child and how it last failed.
 */
export class Supervisor {
  private readonly slots = new Map<string, Slot>();
  private stopping = false;

  constructor(private readonly options: SupervisorOptions) {}

  /** Starts the child for the first time (a failure here is a start-up failure and is thrown) and watches it. */
  async start(spec: ChildSpec): Promise<void> {
    let markUp = () => {};
    const up = new Promise<void>((resolve) => (markUp = resolve));
    const slot: Slot = { spec, instance: null, up, markUp, failures: [] };
    this.slots.set(spec.name, slot);
    slot.instance = await spec.start();
    slot.markUp();
    void this.watch(slot, slot.instance);
  }

  /** Stops the named children (together), leaving them down; used in reverse start order by the caller. */
  async stop(names: string[]): Promise<void> {
    this.stopping = true;
    await Promise.all(
      names.map(async (name) => {
        const slot = this.slots.get(name);
        const instance = slot?.instance;
        if (slot) slot.instance = null;
        await instance?.stop();
      }),
    );
  }

  private async watch(slot: Slot, instance: Instance): Promise<void> {
    let reason = await instance.exited;
    for (;;) {
      if (this.stopping || slot.instance !== instance) return;
      slot.instance = null;
      slot.up = new Promise<void>((resolve) => (slot.markUp = resolve));
      const now = Date.now();
      slot.failures = slot.failures.filter((at) => now - at < this.options.windowMs);
      slot.failures.push(now);
      const { name } = slot.spec;
      if (slot.failures.length > this.options.maxFailures) {
        this.options.giveUp(
          name,
          `${name} failed ${slot.failures.length} times within ${this.options.windowMs / 1000} s ` +
            `(last: ${reason})`,
        );
        return;
      }
      const delay = this.options.backoffMs(slot.failures.length);
      this.options.log(`supervisor: ${name} ${reason}; restarting it in ${delay / 1000} s`);
      await sleep(delay);
      for (const needed of slot.spec.needs ?? []) {
        const other = this.slots.get(needed);
        if (other) await other.up;
      }
      if (this.stopping) return;
      try {
        const next = await slot.spec.start();
        if (this.stopping) {
          await next.stop();
          return;
        }
        slot.instance = next;
        instance = next;
        slot.markUp();
        this.options.log(`supervisor: ${name} is running again`);
        reason = await next.exited;
      } catch (error) {
        // Counted as a failure like a crash, so a child that cannot start at all ends the service.
        reason = `could not be restarted: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`;
        instance = { exited: Promise.resolve(reason), stop: () => Promise.resolve() };
        slot.instance = instance;
      }
    }
  }
}
