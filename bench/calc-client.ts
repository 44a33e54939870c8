/**
 * The calculation bench's HTTP client, in a process of its own as a real client is: it sends a
 * request and reads the whole answer on its own event loop, so what the bench times outside the
 * kernel is the service's share and the HTTP exchange, not the client's own work on the service's
 * thread. The clock runs from the request's send to the last byte of the answer.
 */
import { type ChildProcess, fork } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { gunzipSync } from 'node:zlib';

const CLIENT_FLAG = '--calc-bench-client';

interface Call {
  id: number;
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface CallAnswer {
  id: number;
  /** From the request's send to the answer's last byte. */
  ms: number;
  /** The client inflating a gzip answer, after the clock stopped; 0 for an identity answer. */
  inflateMs: number;
  status: number;
  serverTiming: string | null;
  /** The answer's first 300 characters when it is not a 200. */
  head: string;
  /** The answer's size once inflated, and on the wire. */
  bytes: number;
  wireBytes: number;
  error?: string;
}

/**
 * One POST over node:http, the answer read into one buffer as it arrives, as a lean client in any
 * language reads it (in a side experiment here, undici's fetch took 8 to 28 ms longer than node:http to
 * read an 8.2 MB answer, its web streams' own work). The clock stops at the answer's last byte; a gzip answer is then inflated in one
 * call, timed apart: the client's own work, not the service's.
 */
function post(call: Call): Promise<CallAnswer> {
  return new Promise((resolve, reject) => {
    const begun = performance.now();
    const req = http.request(call.url, { method: 'POST', headers: call.headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const ms = performance.now() - begun;
        const wire = Buffer.concat(chunks);
        const inflating = performance.now();
        const body = res.headers['content-encoding'] === 'gzip' ? gunzipSync(wire) : wire;
        const inflateMs = res.headers['content-encoding'] === 'gzip' ? performance.now() - inflating : 0;
        const status = res.statusCode ?? 0;
        const serverTiming = res.headers['server-timing'];
        resolve({
          id: call.id,
          ms,
          inflateMs,
          status,
          serverTiming: typeof serverTiming === 'string' ? serverTiming : null,
          head: status === 200 ? '' : body.toString('utf8', 0, 300),
          bytes: body.length,
          wireBytes: wire.length,
        });
      });
    });
    req.on('error', reject);
    req.end(call.body);
  });
}

const agent = new http.Agent({ keepAlive: true });

if (process.argv.includes(CLIENT_FLAG)) {
  process.on('message', (call: Call) => {
    post(call).then(
      (answer) => process.send!(answer),
      (error: unknown) =>
        process.send!({
          id: call.id,
          ms: NaN,
          inflateMs: 0,
          status: 0,
          serverTiming: null,
          head: '',
          bytes: 0,
          wireBytes: 0,
          error: error instanceof Error ? error.message : String(error),
        } satisfies CallAnswer),
    );
  });
}

export interface CalcClient {
  post(url: string, headers: Record<string, string>, body: string): Promise<CallAnswer>;
  close(): void;
}

export function startCalcClient(): CalcClient {
  const child: ChildProcess = fork(__filename, [CLIENT_FLAG], { execArgv: process.execArgv });
  const waiting = new Map<number, (answer: CallAnswer) => void>();
  child.on('message', (answer: CallAnswer) => {
    waiting.get(answer.id)?.(answer);
    waiting.delete(answer.id);
  });
  let next = 0;
  return {
    post(url, headers, body) {
      const id = next++;
      return new Promise((resolve, reject) => {
        waiting.set(id, (answer) =>
          answer.error === undefined ? resolve(answer) : reject(new Error(answer.error)),
        );
        child.send({ id, url, headers, body } satisfies Call);
      });
    },
    close() {
      child.kill();
    },
  };
}
