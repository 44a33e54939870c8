/**
 * The `threads` backend: the blocked kernel of `calc/kernels/path-block.ts` on a pool of
 * worker_threads. The generator is counter-based, so a worker needs no RNG state, only its path range.
 *
 * Pass 1 cuts the paths into fixed chunks of CHUNK_PATHS; each chunk returns its paths' L and its own
 * ev sums. The main thread finds the tail sets exactly as the reference does (the L values are the
 * reference's bits), then pass 2 sends the ascending tail path ids in fixed chunks of CHUNK_TAIL.
 * Chunk sums are added in chunk order whatever worker finished first, so results do not depend on
 * the thread count or on timing. The portfolio figures (ev, cvar±, var of L) are summed on the main
 * thread over L in path order and equal the reference's bits; the per-driver component means are
 * sums of chunk partials, which differ from the reference's one running sum only by f64 rounding
 * (measured ≤ 1e-12 relative to the array's largest entry; see test/calc/backends.test.ts).
 *
 * With `kernel: 'wasm'` the same pool, chunks and merge order run the WebAssembly SIMD kernel: the
 * `wasm` backend. Its chunks are drawn from its own counter-based generator, so it agrees with the
 * reference within Monte Carlo error, and gives the same bits for any thread count.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { findTailSets } from '../kernels/tail-sets';
import { lineCount } from '../kernels/line-pricing';
import type { Scenario, SimulationOptions, SimulationResult } from '../simulation';
import { checkPaths, type SimulationBackend, twoPassResult } from './backend';
import type { ThreadKernel, ThreadReply, ThreadRequest } from './thread-protocol';

/** Paths per pass-1 chunk, fixed so the merge order is the same for any thread count. */
export const CHUNK_PATHS = 8192;
/**
 * Paths per pass-1 chunk of the wasm kernel: it runs about 8× faster per path, so smaller chunks
 * keep the workers evenly loaded at the end of a pass. Fixed, like CHUNK_PATHS.
 */
export const WASM_CHUNK_PATHS = 4096;
/** Jobs waiting in each worker's port (the one it runs and the next). */
const QUEUED_JOBS = 2;
/** Tail paths per pass-2 chunk. */
export const CHUNK_TAIL = 2048;
/** Tail paths per pass-2 chunk of the wasm kernel (more chunks: the workers stay evenly loaded). */
export const WASM_CHUNK_TAIL = 1024;

export interface ThreadsOptions {
  /** Worker count (the caller decides, e.g. from os.availableParallelism()). */
  readonly threads: number;
  /**
   * How to start a worker on `thread-worker.ts`. By default the TypeScript file is loaded through
   * tsx, as the service itself runs (`node --import tsx`).
   */
  readonly startWorker?: () => Worker;
  /**
   * The workers' kernel: `blocked` (default; the `threads` backend, reference bits) or `wasm` (the
   * `wasm` backend: WebAssembly SIMD, its own generator, calc/kernels/wasm-kernel.ts).
   */
  readonly kernel?: ThreadKernel;
}

type Job = { request: ThreadRequest; transfer: ArrayBuffer[] };

function defaultWorker(): Worker {
  return new Worker(path.join(__dirname, 'thread-worker.ts'), { execArgv: ['--import', 'tsx'] });
}

export function threadsBackend(options: ThreadsOptions): SimulationBackend {
  const threads = Math.max(1, Math.floor(options.threads));
  const kernel = options.kernel ?? 'blocked';
  const chunkPaths = kernel === 'wasm' ? WASM_CHUNK_PATHS : CHUNK_PATHS;
  const chunkTail = kernel === 'wasm' ? WASM_CHUNK_TAIL : CHUNK_TAIL;
  const workers = Array.from({ length: threads }, () => (options.startWorker ?? defaultWorker)());
  // Idle workers must not keep the process alive; a running simulation refs them (runJobs).
  workers.forEach((w) => w.unref());
  let calls = 0;
  let queue: Promise<unknown> = Promise.resolve();

  /**
   * Sends every worker the scenario, then the jobs: QUEUED_JOBS each to start with, and one more
   * whenever a reply comes back, so a worker always has its next chunk waiting in its port and never
   * idles while the main thread gets a turn (on a loaded machine that turn took tens of ms per
   * chunk). Resolves with the replies indexed by chunk; the merge order is the chunks', whichever
   * worker ran them.
   */
  const runJobs = (call: number, scenario: Scenario, options: SimulationOptions, jobs: Job[]) =>
    new Promise<ThreadReply[]>((resolve, reject) => {
      const replies: ThreadReply[] = new Array<ThreadReply>(jobs.length);
      let next = 0;
      let done = 0;
      let failed = false;
      const cleanup = () =>
        workers.forEach((w) => w.removeAllListeners('message').removeAllListeners('error').unref());
      const feed = (worker: Worker) => {
        if (next < jobs.length) {
          const job = jobs[next++]!;
          worker.postMessage(job.request, job.transfer);
        }
      };
      if (jobs.length === 0) return resolve(replies);
      for (const worker of workers) {
        worker.ref();
        worker.on('message', (reply: ThreadReply) => {
          if (failed || reply.call !== call) return;
          if (reply.type === 'error') {
            failed = true;
            cleanup();
            return reject(new Error(`simulation worker: ${reply.message}`));
          }
          replies[reply.chunk] = reply;
          if (++done === jobs.length) {
            cleanup();
            return resolve(replies);
          }
          feed(worker);
        });
        worker.on('error', (error) => {
          failed = true;
          cleanup();
          reject(error);
        });
        worker.postMessage({
          type: 'scenario',
          call,
          scenario,
          seed: options.seed,
          kernel,
        } satisfies ThreadRequest);
        for (let queued = 0; queued < QUEUED_JOBS; queued++) feed(worker);
      }
    });

  const simulate = async (scenario: Scenario, options: SimulationOptions): Promise<SimulationResult> => {
    const { paths } = options;
    checkPaths(paths);
    const note = options.onAllocate ?? (() => {});
    const drivers = lineCount(scenario);
    const width = scenario.k + 1;
    const call = ++calls;
    const withBand = options.varBand === true;

    const pass1: Job[] = [];
    for (let first = 0, chunk = 0; first < paths; first += chunkPaths, chunk++) {
      const count = Math.min(chunkPaths, paths - first);
      pass1.push({ request: { type: 'pass1', call, chunk, first, count }, transfer: [] });
    }
    note('portfolio P&L per path', paths);
    const loss = new Float64Array(paths);
    for (const set of ['ev', 'cvar_neg', 'cvar_pos']) note(`${set} sums`, drivers * width);
    note('var sums', withBand ? drivers * width : 0);
    const ev = new Float64Array(drivers * width);
    const replies1 = await runJobs(call, scenario, options, pass1);
    replies1.forEach((reply, chunk) => {
      if (reply.type !== 'pass1') throw new Error('unexpected reply');
      loss.set(reply.loss, chunk * chunkPaths);
      for (let i = 0; i < ev.length; i++) ev[i]! += reply.ev[i]!;
    });
    let evTotal = 0;
    for (let p = 0; p < paths; p++) evTotal += loss[p]!;

    const sets = findTailSets(loss, options.tail, withBand, note);
    const pass2: Job[] = [];
    for (let first = 0, chunk = 0; first < sets.ids.length; first += chunkTail, chunk++) {
      const ids = sets.ids.slice(first, first + chunkTail);
      const masks = sets.masks.slice(first, first + chunkTail);
      pass2.push({
        request: { type: 'pass2', call, chunk, ids, masks, band: withBand },
        transfer: [ids.buffer, masks.buffer],
      });
    }
    const neg = new Float64Array(drivers * width);
    const pos = new Float64Array(drivers * width);
    const band = new Float64Array(withBand ? drivers * width : 0);
    const replies2 = await runJobs(call, scenario, options, pass2);
    for (const reply of replies2) {
      if (reply.type !== 'pass2') throw new Error('unexpected reply');
      for (let i = 0; i < neg.length; i++) neg[i]! += reply.neg[i]!;
      for (let i = 0; i < pos.length; i++) pos[i]! += reply.pos[i]!;
      for (let i = 0; i < band.length; i++) band[i]! += reply.band[i]!;
    }
    return twoPassResult(paths, loss, evTotal, sets, { ev, neg, pos, band });
  };

  return {
    name: kernel === 'wasm' ? 'wasm' : 'threads',
    detail:
      kernel === 'wasm'
        ? `WebAssembly SIMD f32x4 (own generator), ${threads} worker_threads, ${chunkPaths}-path chunks`
        : `${threads} worker_threads, ${chunkPaths}-path chunks`,
    // One simulation at a time per pool: the workers hold one scenario each.
    simulate: (scenario, options) => {
      const run = queue.then(() => simulate(scenario, options));
      queue = run.catch(() => undefined);
      return run;
    },
    close: async () => {
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}
