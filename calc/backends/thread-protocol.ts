/** Messages between the `threads` backend and its workers (`thread-worker.ts`). */
import type { Seed } from '../random';
import type { Scenario } from '../simulation';

/** Which kernel a pool's workers run. */
export type ThreadKernel = 'blocked' | 'wasm';

export type ThreadRequest =
  | {
      readonly type: 'scenario';
      readonly call: number;
      readonly scenario: Scenario;
      readonly seed: Seed;
      /** `blocked`: calc/kernels/path-block.ts (reference bits); `wasm`: the SIMD kernel. */
      readonly kernel: ThreadKernel;
    }
  | {
      readonly type: 'pass1';
      readonly call: number;
      readonly chunk: number;
      readonly first: number;
      readonly count: number;
    }
  | {
      readonly type: 'pass2';
      readonly call: number;
      readonly chunk: number;
      readonly ids: Uint32Array;
      readonly masks: Uint8Array;
      readonly band: boolean;
    };

export type ThreadReply =
  | {
      readonly type: 'pass1';
      readonly call: number;
      readonly chunk: number;
      readonly loss: Float64Array;
      readonly ev: Float64Array;
    }
  | {
      readonly type: 'pass2';
      readonly call: number;
      readonly chunk: number;
      readonly neg: Float64Array;
      readonly pos: Float64Array;
      readonly band: Float64Array;
    }
  | { readonly type: 'error'; readonly call: number; readonly message: string };
