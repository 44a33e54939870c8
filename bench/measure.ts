import { performance } from 'node:perf_hooks';

export interface LatencyReport {
  label: string;
  requests: number;
  concurrency: number;
  p50Ms: number;
  p99Ms: number;
  perSecond: number;
}

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
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
