import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';

/**
 * Runs already in Temporal replay on the current interpreter: histories recorded from older code
 * (fixtures/histories, written by fixtures/record-histories.ts at the commit named in its
 * docstring) must replay without a nondeterminism error, so workers can be upgraded under them.
 */
const HISTORIES = path.join(__dirname, 'fixtures', 'histories');
const workflowsPath = require.resolve('../../workers/workflows/index');

async function recorded(name: string): Promise<temporal.api.history.v1.History> {
  const json: unknown = JSON.parse(await readFile(path.join(HISTORIES, `${name}.json`), 'utf8'));
  return temporal.api.history.v1.History.fromObject(json as Record<string, unknown>);
}

describe('replaying histories written by older interpreter code', () => {
  test.each(['failed-at-ender', 'failed-in-branch', 'succeeded'])('%s replays', async (name) => {
    await expect(Worker.runReplayHistory({ workflowsPath }, await recorded(name))).resolves.toBeUndefined();
  });

  test('a history that does not match the code is caught (the check can fail)', async () => {
    const history = await recorded('failed-at-ender');
    // Drop the first activity the run scheduled: the code schedules it, the history does not.
    const scheduled = history.events.findIndex(
      (event) => event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    );
    history.events.splice(scheduled, 1);
    await expect(Worker.runReplayHistory({ workflowsPath }, history)).rejects.toThrow();
  });
});
