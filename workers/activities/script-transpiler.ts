import { transformSync } from '@swc/core';

/**
 * TypeScript worker templates are transpiled to JavaScript when they run, with SWC: it is what
 * Temporal's worker bundles workflows with, so production installs have it (the `typescript`
 * package is a dev dependency only). SWC strips types and never evaluates anything: the output
 * still runs only inside the sandbox.
 */

/** Templates change rarely and runs repeat them: keep the output per template version. */
const CACHE_MAX = 256;
const cache = new Map<string, string>();

/** SWC's messages end with a Rust backtrace; the part before it names the line and the problem. */
function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split(/\n\s*\nCaused by:|\nStack backtrace:/)[0]!.trim();
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
    return { error: `TypeScript could not be transpiled: ${describe(error)}` };
  }
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(cacheKey, code);
  return { code };
}
