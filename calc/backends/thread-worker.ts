/**
 * A `threads` worker: runs chunks of paths on the blocked kernel for the scenario last sent to it.
 * Each chunk's sums start from zero and go back whole, so the main thread can add chunks in a fixed
 * order whatever worker ran them.
 */
import { parentPort } from 'node:worker_threads';
import { BLOCK_PATHS, newSetSums, PathBlockKernel } from '../kernels/path-block';
import { lineCount } from '../kernels/line-pricing';
import { WasmKernel } from '../kernels/wasm-kernel';
import type { ThreadReply, ThreadRequest } from './thread-protocol';

let current: { call: number; kernel: PathBlockKernel; drivers: number; width: number } | null = null;
let wasm: { call: number; kernel: WasmKernel } | null = null;

function handle(request: ThreadRequest): { reply: ThreadReply; transfer: ArrayBuffer[] } | null {
  if (request.type === 'scenario') {
    const { scenario, seed, call } = request;
    current = null;
    wasm = null;
    if (request.kernel === 'wasm') {
      wasm = { call, kernel: new WasmKernel(scenario, seed) };
      return null;
    }
    const drivers = lineCount(scenario);
    current = { call, kernel: new PathBlockKernel(scenario, seed), drivers, width: scenario.k + 1 };
    return null;
  }
  if (wasm !== null && wasm.call === request.call) return handleWasm(wasm.kernel, request);
  if (current === null || current.call !== request.call) throw new Error('No scenario for this call.');
  const { kernel, drivers, width } = current;
  if (request.type === 'pass1') {
    const sums = newSetSums(drivers, width, false);
    const loss = new Float64Array(request.count);
    for (let at = 0; at < request.count; at += BLOCK_PATHS) {
      const count = Math.min(BLOCK_PATHS, request.count - at);
      kernel.run(request.first + at, count, null, null, sums);
      loss.set(kernel.loss.subarray(0, count), at);
    }
    const reply: ThreadReply = { type: 'pass1', call: request.call, chunk: request.chunk, loss, ev: sums.ev };
    return { reply, transfer: [loss.buffer, sums.ev.buffer] };
  }
  const sums = newSetSums(drivers, width, request.band);
  const { ids, masks } = request;
  for (let at = 0; at < ids.length; at += BLOCK_PATHS) {
    const count = Math.min(BLOCK_PATHS, ids.length - at);
    kernel.run(at, count, ids, masks.subarray(at, at + count), sums);
  }
  const reply: ThreadReply = {
    type: 'pass2',
    call: request.call,
    chunk: request.chunk,
    neg: sums.neg,
    pos: sums.pos,
    band: sums.band,
  };
  return { reply, transfer: [sums.neg.buffer, sums.pos.buffer, sums.band.buffer] };
}

function handleWasm(
  kernel: WasmKernel,
  request: Exclude<ThreadRequest, { type: 'scenario' }>,
): { reply: ThreadReply; transfer: ArrayBuffer[] } {
  const { call, chunk } = request;
  if (request.type === 'pass1') {
    const { loss, ev } = kernel.pass1(request.first, request.count);
    return { reply: { type: 'pass1', call, chunk, loss, ev }, transfer: [loss.buffer, ev.buffer] };
  }
  const { neg, pos, band } = kernel.pass2(request.ids, request.masks, request.band);
  const bandSums = request.band ? band : new Float64Array(0);
  return {
    reply: { type: 'pass2', call, chunk, neg, pos, band: bandSums },
    transfer: [neg.buffer, pos.buffer, bandSums.buffer],
  };
}

parentPort?.on('message', (request: ThreadRequest) => {
  try {
    const out = handle(request);
    if (out !== null) parentPort?.postMessage(out.reply, out.transfer);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    parentPort?.postMessage({ type: 'error', call: request.call, message } satisfies ThreadReply);
  }
});
