/**
 * The calculation bench's HTTP client, in a process of its own as a real client is: it sends a
 * request and reads the whole answer on its own event loop, so what the bench times outside the
 * kernel is the service's share and the HTTP exchange, not the client's own work on the service's
 * thread. The clock runs from the request's send to the last byte of the answer read as text.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';

const CLIENT_FLAG = '--calc-bench-client';

interface Call {
  id: number;
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface CallAnswer {
  id: number;
  ms: number;
  status: number;
  serverTiming: string | null;
  /** The answer's first 300 characters when it is not a 200. */
  head: string;
  bytes: number;
  error?: string;
}

if (process.argv.includes(CLIENT_FLAG)) {
  process.on('message', (call: Call) => {
    void (async () => {
      try {
        const begun = performance.now();
        const res = await fetch(call.url, { method: 'POST', headers: call.headers, body: call.body });
        const text = await res.text();
        const ms = performance.now() - begun;
        process.send!({
          id: call.id,
          ms,
          status: res.status,
          serverTiming: res.headers.get('server-timing'),
          head: res.status === 200 ? '' : text.slice(0, 300),
          bytes: Buffer.byteLength(text),
        } satisfies CallAnswer);
      } catch (error) {
        process.send!({
          id: call.id,
          ms: NaN,
          status: 0,
          serverTiming: null,
          head: '',
          bytes: 0,
          error: error instanceof Error ? error.message : String(error),
        } satisfies CallAnswer);
      }
    })();
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
