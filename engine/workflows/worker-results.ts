/**
 * How the interpreter reads the results of the workers that steer a run (see workflow-definition.ts).
 * Each returns the value, or a message saying why the result cannot steer the run; the worker
 * execution then ends with ERROR.
 */

/** Branches of one FORKER: each is a few activities and history events in the Temporal run. */
export const FORK_BRANCHES_MAX = 500;

/** A FORKER's list: its result if that is an array, or the array in `items`. */
export function forkItems(result: unknown): { items: unknown[] } | { error: string } {
  const list = Array.isArray(result)
    ? result
    : result !== null && typeof result === 'object' && Array.isArray((result as { items?: unknown }).items)
      ? (result as { items: unknown[] }).items
      : null;
  if (list === null) {
    return { error: 'A FORKER must return a list, or an object with the list in "items".' };
  }
  if (list.length > FORK_BRANCHES_MAX) {
    return {
      error: `A FORKER makes at most ${FORK_BRANCHES_MAX} branches; its list has ${list.length} items.`,
    };
  }
  return { items: list };
}

/** A CONDITIONAL's decision: its result if boolean, or the boolean in `condition`. */
export function conditionOf(result: unknown): { condition: boolean } | { error: string } {
  if (typeof result === 'boolean') return { condition: result };
  if (result !== null && typeof result === 'object') {
    const condition = (result as { condition?: unknown }).condition;
    if (typeof condition === 'boolean') return { condition };
  }
  return { error: 'A CONDITIONAL must return true or false, or an object with a boolean "condition".' };
}
