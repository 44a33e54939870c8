import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';

/**
 * Runs already in Temporal replay on the current interpreter: histories recorded from older code
 * (fixtures/histories/<set>/, written by fixtures/record-histories.ts; the sets are listed there)
 * must replay without a nondeterminism error, so workers can be upgraded under them.
 */
const HISTORIES = path.join(__dirname, 'fixtures', 'histories');
const workflowsPath = require.resolve('../../workers/workflows/index');

async function recorded(file: string): Promise<temporal.api.history.v1.History> {
  const json: unknown = JSON.parse(await readFile(path.join(HISTORIES, file), 'utf8'));
  return temporal.api.history.v1.History.fromObject(json as Record<string, unknown>);
}

const FILES = readdirSync(HISTORIES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .flatMap((set) =>
    readdirSync(path.join(HISTORIES, set.name))
      .filter((name) => name.endsWith('.json'))
      .map((name) => `${set.name}/${name}`),
  )
  .sort();

describe('replaying histories written by older interpreter code', () => {
  test('the recorded sets are there', () => {
    expect(FILES).toEqual(
      expect.arrayContaining([
        'before-failed-runs-fail/failed-at-ender.json',
        'before-failed-runs-fail/failed-in-branch.json',
        'before-failed-runs-fail/succeeded.json',
        'local-steps/failed-at-ender.json',
        'local-steps/failed-in-branch.json',
        'local-steps/short-and-long-steps.json',
        'local-steps/succeeded.json',
        'no-patch-markers/failed-at-ender.json',
        'no-patch-markers/failed-in-branch.json',
        'no-patch-markers/short-and-long-steps.json',
        'no-patch-markers/succeeded.json',
      ]),
    );
  });

  test.each(FILES)('%s replays', async (file) => {
    await expect(Worker.runReplayHistory({ workflowsPath }, await recorded(file))).resolves.toBeUndefined();
  });

  test('a run started with localSteps that an older worker ran with regular activities replays (a fleet mid-upgrade)', async () => {
    for (const file of ['failed-in-branch.json', 'succeeded.json']) {
      const history = await recorded(`before-failed-runs-fail/${file}`);
      // What the newer API starts: the same input naming every worker a local step.
      const payload = history.events[0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
      const input = JSON.parse(Buffer.from(payload.data!).toString('utf8')) as {
        workers: Array<{ id: string }>;
        localSteps?: string[];
      };
      input.localSteps = input.workers.map((worker) => worker.id);
      payload.data = Buffer.from(JSON.stringify(input));
      await expect(Worker.runReplayHistory({ workflowsPath }, history)).resolves.toBeUndefined();
    }
  });

  test('a history that does not match the code is caught (the check can fail)', async () => {
    const history = await recorded('before-failed-runs-fail/failed-at-ender.json');
    // Drop the first activity the run scheduled: the code schedules it, the history does not.
    const scheduled = history.events.findIndex(
      (event) => event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    );
    history.events.splice(scheduled, 1);
    await expect(Worker.runReplayHistory({ workflowsPath }, history)).rejects.toThrow();
  });
});
