import { transformSync } from '@swc/core';
import { types } from 'node:util';

/**
 * TypeScript worker templates are transpiled to JavaScript with SWC when they are published (the
 * JavaScript is stored beside the source) and, for rows stored before that, when they run. SWC is
 * what Temporal's worker bundles workflows with, so production installs have it (the `typescript`
 * package is a dev dependency only). SWC strips types and never evaluates anything: the output
 * still runs only inside the sandbox.
 */

/** Templates change rarely and runs repeat them: keep the output per template version. */
const CACHE_MAX = 256;
const cache = new Map<string, string>();

/**
 * SWC's messages are a drawing (`x Expected ';', got ')'` then `,-[worker.ts:2:1]` and the source
 * lines) followed by a Rust backtrace; the problem and its line are what a client can act on.
 */
export function describeTranspileError(error: unknown): string {
  // isNativeError, not instanceof: the error may come from another realm (a test runner's).
  const text = types.isNativeError(error) ? error.message : String(error);
  const drawing = text.split(/\n\s*\nCaused by:|\nStack backtrace:/)[0]!;
  const problem = /^(?:Error:)?\s*x\s+(.+)$/m.exec(drawing)?.[1]?.trim();
  const line = /\[worker\.ts:(\d+):\d+\]/.exec(drawing)?.[1];
  if (problem && line) return `line ${line}: ${problem}`;
  return drawing.trim();
}

function transpile(source: string): string {
  const { code } = transformSync(source, {
    filename: 'worker.ts',
    // Sources with import/export become CommonJS; plain scripts stay scripts.
    isModule: 'unknown',
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
    sourceMaps: false,
  });
  // The sandbox runs a classic script and finds `main` as a global; CommonJS output writes to an
  // `exports` the isolate does not have. Defined on the first line, so line numbers are unchanged.
  const strict = '"use strict";\n';
  if (code.startsWith(strict)) {
    return `"use strict"; var module = { exports: {} }, exports = module.exports;\n${code.slice(strict.length)}`;
  }
  return code;
}

/** The runnable JavaScript of a TypeScript source, or why it cannot be transpiled. */
export function transpileTypeScript(cacheKey: string, source: string): { code: string } | { error: string } {
  const cached = cache.get(cacheKey);
  if (cached !== undefined) return { code: cached };
  let code: string;
  try {
    code = transpile(source);
  } catch (error) {
    return { error: `TypeScript could not be transpiled: ${describeTranspileError(error)}` };
  }
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(cacheKey, code);
  return { code };
}

/** Publishing transpiles once, uncached: the result is stored with the template. */
export function transpileForPublishing(source: string): { code: string } | { error: string } {
  try {
    return { code: transpile(source) };
  } catch (error) {
    return { error: describeTranspileError(error) };
  }
}
