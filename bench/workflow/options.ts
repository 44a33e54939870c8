/** The workflow bench's command line and fixed sizes (bench/workflow.bench.ts). */

const DEFAULT_POLL_MS = 15;
/** Runs in flight at once in the sustained (runs per second) figures. */
export const IN_FLIGHT = 10;
export const NAMESPACE = 'default';

export interface Sizes {
  /** Sequential runs for the latency figures (each case). */
  latencyRuns: number;
  /** Runs for the runs-per-second figures (each case). */
  throughputRuns: number;
  warmUpRuns: number;
}
const FULL: Sizes = { latencyRuns: 50, throughputRuns: 100, warmUpRuns: 5 };
const QUICK: Sizes = { latencyRuns: 10, throughputRuns: 20, warmUpRuns: 2 };

/** The command line: `--quick`, `--worker=in-process`, `--temporal-db=memory`, `--poll-ms=N`. */
export interface BenchOptions {
  quick: boolean;
  inProcess: boolean;
  /** `npm start` keeps Temporal's state in a SQLite file; the test suite runs it in memory. */
  temporalInMemory: boolean;
  sizes: Sizes;
  pollMs: number;
}

export function benchOptions(argv: readonly string[]): BenchOptions {
  const quick = argv.includes('--quick');
  const pollFlag = argv.find((arg) => arg.startsWith('--poll-ms='));
  const pollMs = pollFlag === undefined ? DEFAULT_POLL_MS : Number(pollFlag.slice('--poll-ms='.length));
  if (!Number.isInteger(pollMs) || pollMs < 1 || pollMs > 1000) {
    throw new Error(`--poll-ms must be a whole number of milliseconds from 1 to 1000, got ${pollFlag}`);
  }
  return {
    quick,
    inProcess: argv.includes('--worker=in-process'),
    temporalInMemory: argv.includes('--temporal-db=memory'),
    sizes: quick ? QUICK : FULL,
    pollMs,
  };
}
