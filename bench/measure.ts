import { performance } from 'node:perf_hooks';

export interface LatencyReport {
  label: string;
  requests: number;
  concurrency: number;
  p50Ms: number;
  p99Ms: number;
  perSecond: number;
}

/** The nearest-rank `p`th percentile of `sorted` (ascending, not empty). */
export function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

/** Runs `task` for 0..count-1, `concurrency` at a time. */
export async function bounded(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(count, concurrency) }, async () => {
      while (next < count) {
        const index = next;
        next += 1;
        await task(index);
      }
    }),
  );
}

/** Fires `requests` calls of `call`, `concurrency` at a time, and reports latency percentiles. */
export async function measureLatency(
  label: string,
  requests: number,
  concurrency: number,
  call: () => Promise<void>,
): Promise<LatencyReport> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        next += 1;
        const t0 = performance.now();
        await call();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = performance.now() - started;
  latencies.sort((a, b) => a - b);
  return {
    label,
    requests,
    concurrency,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    perSecond: (requests / elapsed) * 1000,
  };
}

export function printReports(title: string, reports: LatencyReport[], baseline: LatencyReport): void {
  console.log(`\n${title}`);
  console.log('| case | requests | concurrency | p50 ms | p99 ms | req/s | p50 vs baseline |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of reports) {
    const ratio = r === baseline ? 'baseline' : `+${(r.p50Ms - baseline.p50Ms).toFixed(2)} ms`;
    console.log(
      `| ${r.label} | ${r.requests} | ${r.concurrency} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.perSecond.toFixed(0)} | ${ratio} |`,
    );
  }
}

/**
 * CPU seconds (user + system) used so far by this process and each of its descendants, grouped by
 * command name (node, temporal, postgres, …), from /proc (Linux; elsewhere an empty map). Take it
 * before and after a phase; `cpuDelta` gives what the phase cost each kind of process.
 */
export async function processTreeCpu(): Promise<Map<string, number>> {
  const { readdir, readFile } = await import('node:fs/promises');
  const ticksPerSecond = 100; // USER_HZ on Linux
  const out = new Map<string, number>();
  let entries: string[];
  try {
    entries = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  } catch {
    return out;
  }
  const stats = new Map<number, { parent: number; name: string; seconds: number }>();
  for (const pid of entries) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // After the name: state, ppid, …, utime (field 14 of stat) and stime (15), counted from 3.
      const seconds = (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
      stats.set(Number(pid), { parent: Number(fields[1]), name, seconds });
    } catch {
      // The process ended while we looked.
    }
  }
  const inTree = (pid: number): boolean => {
    for (let at = pid, hops = 0; at > 1 && hops < 64; hops++) {
      if (at === process.pid) return true;
      at = stats.get(at)?.parent ?? 0;
    }
    return false;
  };
  for (const [pid, stat] of stats) {
    if (!inTree(pid)) continue;
    const label = pid === process.pid ? 'bench process (API, client)' : stat.name;
    out.set(label, (out.get(label) ?? 0) + stat.seconds);
  }
  return out;
}

/** What each kind of process used between two `processTreeCpu` readings (seconds, largest first). */
export function cpuDelta(before: Map<string, number>, after: Map<string, number>): Array<[string, number]> {
  return [...after]
    .map(([name, seconds]) => [name, seconds - (before.get(name) ?? 0)] as [string, number])
    .filter(([, seconds]) => seconds > 0.005)
    .sort((a, b) => b[1] - a[1]);
}
