import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * Free loopback ports for the servers a test starts, each configured with its port as an operator
 * would. A port the OS hands out for `listen(0)` lies in the kernel's ephemeral range, the same range
 * every outgoing connection takes its local port from: between the pick and the server's own bind
 * (a Temporal dev server binds its UI a second later), a PostgreSQL client in another jest worker
 * can take it, and the server dies of "address already in use". Ports outside that range are never
 * handed out by the kernel, so only another explicit pick could take one, and every pick here checks
 * the port by binding it. (The product's own automatic picks, engine/platform/metrics.ts, stay in
 * the ephemeral range, so they never meet these.)
 */

const LOOPBACK = '127.0.0.1';
const LOWEST = 10_000;
const HIGHEST = 65_535;

/** The kernel's ephemeral range (Linux); the Linux default where it cannot be read. */
export function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low! <= high!) return [low!, high!];
  } catch {
    // Not Linux, or /proc is not mounted.
  }
  return [32_768, 60_999];
}

/** The ports from LOWEST up that lie outside the ephemeral range, as [first, last] intervals. */
function candidateIntervals(highest: number): [number, number][] {
  const [low, high] = ephemeralRange();
  const intervals: [number, number][] = [];
  if (low - 1 >= LOWEST) intervals.push([LOWEST, Math.min(low - 1, highest)]);
  if (high + 1 <= highest) intervals.push([Math.max(LOWEST, high + 1), highest]);
  // An ephemeral range that covers everything leaves nothing safer than a random port in it.
  return intervals.length > 0 ? intervals : [[LOWEST, highest]];
}

function randomCandidate(intervals: [number, number][], span: number): number {
  const usable = intervals
    .map(([first, last]) => [first, last - span + 1] as [number, number])
    .filter(([first, last]) => last >= first);
  const total = usable.reduce((sum, [first, last]) => sum + (last - first + 1), 0);
  let offset = Math.floor(Math.random() * total);
  for (const [first, last] of usable) {
    const size = last - first + 1;
    if (offset < size) return first + offset;
    offset -= size;
  }
  throw new Error(`no run of ${span} ports outside the ephemeral range`);
}

function bind(port: number): Promise<net.Server | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(null));
    server.listen(port, LOOPBACK, () => resolve(server));
  });
}

function close(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

export interface PortOptions {
  /** Each port is the first of this many consecutive free ports (a worker's metrics take METRICS_PORT + 1). */
  span?: number;
  /** The highest port allowed (Temporal records its members' ports in a SMALLINT column: 32767). */
  highest?: number;
}

/**
 * `count` free ports outside the ephemeral range. All are held open together while picking, so none
 * repeats and no block overlaps another.
 */
export async function freePorts(
  count: number,
  { span = 1, highest = HIGHEST }: PortOptions = {},
): Promise<number[]> {
  const intervals = candidateIntervals(highest);
  const held: net.Server[] = [];
  const firsts: number[] = [];
  try {
    for (let attempts = 0; firsts.length < count; attempts += 1) {
      if (attempts > 10_000)
        throw new Error(`could not find ${count} free ports outside the ephemeral range`);
      const first = randomCandidate(intervals, span);
      const block: net.Server[] = [];
      for (let port = first; port < first + span; port += 1) {
        const server = await bind(port);
        if (server === null) break;
        block.push(server);
      }
      held.push(...block);
      if (block.length === span) firsts.push(first);
    }
    return firsts;
  } finally {
    await Promise.all(held.map(close));
  }
}
