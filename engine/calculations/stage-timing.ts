import { performance } from 'node:perf_hooks';
import { inSpan, inSpanSync } from '../platform/tracing';

/**
 * The stages of a calculation request, in the order they run (issue 20: where the API time goes).
 * - `parse`: from the request's arrival to the handler (body read, JSON parse, schema validation,
 *   credentials), measured by the route;
 * - `checks`: the body's rules, the stored portfolio, the symbols the request reads;
 * - `market`: the price series and master attributes (from the process's series cache);
 * - `estimation`: the window of returns, the factor model and the book (§1–§3, §9–§11);
 * - `simulation`: the Monte Carlo paths and the decomposition of the tail sets (§5–§8);
 * - `report`: aggregation and filter (§14, §15);
 * - `audit`: the EXECUTE audit record;
 * - `serialize`: the response's JSON, measured by the route.
 * The analytics (§16–§19) compute their figures inside `estimation` (no simulation but properties').
 */
export const STAGES = [
  'parse',
  'checks',
  'market',
  'estimation',
  'simulation',
  'report',
  'audit',
  'serialize',
] as const;
export type Stage = (typeof STAGES)[number];

/** Milliseconds per stage of one request; a stage timed twice adds up. */
export class StageTimer {
  private readonly spent = new Map<Stage, number>();

  add(stage: Stage, ms: number): void {
    this.spent.set(stage, (this.spent.get(stage) ?? 0) + ms);
  }

  /** Runs `work` and counts its wall time (awaited) against `stage`. */
  async time<T>(stage: Stage, work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      // A span per stage when tracing is on (engine/platform/tracing.ts), under the request's.
      return await inSpan(`calc ${stage}`, work, { 'calc.stage': stage });
    } finally {
      this.add(stage, performance.now() - started);
    }
  }

  /** The synchronous form, for the calc/ steps that hold the event loop. */
  timeSync<T>(stage: Stage, work: () => T): T {
    const started = performance.now();
    try {
      return inSpanSync(`calc ${stage}`, work, { 'calc.stage': stage });
    } finally {
      this.add(stage, performance.now() - started);
    }
  }

  /** Every stage timed so far, in the order of STAGES. */
  stages(): Array<{ stage: Stage; ms: number }> {
    return STAGES.filter((s) => this.spent.has(s)).map((stage) => ({ stage, ms: this.spent.get(stage)! }));
  }

  /** The `Server-Timing` header value (W3C Server Timing): `checks;dur=1.23, market;dur=4.56, …`. */
  header(): string {
    return this.stages()
      .map(({ stage, ms }) => `${stage};dur=${ms.toFixed(2)}`)
      .join(', ');
  }
}

/** Parses a `Server-Timing` value back into stage → ms (the benchmark and the tests read it). */
export function parseServerTiming(value: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const part of (value ?? '').split(',')) {
    const [name, ...params] = part.trim().split(';');
    if (!name) continue;
    const dur = params.map((p) => /^\s*dur=([0-9.]+)\s*$/.exec(p)?.[1]).find((d) => d !== undefined);
    out.set(name, dur === undefined ? NaN : Number(dur));
  }
  return out;
}
