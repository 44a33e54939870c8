import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import knexFactory from 'knex';
import { interruptedRunMessage } from '../../ops/backup/settle-interrupted-runs';
import { connectDatabase } from '../../engine/platform/database';
import { newId } from '../../engine/platform/ids';
import { scheduleIdOf } from '../../engine/workflows/workflow-schedules';
import { pas } from '../support/pas-cli';
import { temporalAddress } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/**
 * A restore of only the service's database onto a Temporal cluster that kept its state (the
 * scale-out case, TEMPORAL_ADDRESS set): the run in flight at the snapshot is FAILED in the database
 * and its workflow terminated in Temporal, and a schedule the cluster lost is recreated at once.
 */
const ROOT = path.resolve(__dirname, '..', '..');
// No worker polls this queue, so a started run stays open in Temporal.
const taskQueue = `backup-restore-${randomBytes(4).toString('hex')}`;
const h = useTestApp({ taskQueue });

async function eventually<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

test('with TEMPORAL_ADDRESS, pas restore terminates the run workflows left open and recreates the schedules', async () => {
  const workDir = await mkdtemp(path.join(ROOT, '.test-data', 'restore-temporal-')).catch(async () => {
    await mkdir(path.join(ROOT, '.test-data'), { recursive: true });
    return mkdtemp(path.join(ROOT, '.test-data', 'restore-temporal-'));
  });
  const target = `pas_restore_temporal_${randomBytes(4).toString('hex')}`;
  const targetUrl = new URL(process.env.TEST_DATABASE_ADMIN_URL!);
  targetUrl.pathname = `/${target}`;
  let scheduledId = '';
  try {
    const workers = () => {
      const [s, e] = [newId('worker'), newId('worker')];
      return [
        { id: s, name: 'Start', type: 'STARTER', next: [e] },
        { id: e, name: 'End', type: 'ENDER', script: 'function main() { return 1; }' },
      ];
    };
    const scheduled = await h.call('POST', '/v2/workflows', {
      name: 'Yearly',
      trigger_type: 'TIME_BASED',
      trigger_config: { cron: '0 0 1 1 *', timezone: 'UTC' },
      trigger_enabled: true,
      workers: workers(),
    });
    expect(scheduled.statusCode).toBe(200);
    scheduledId = scheduled.json().workflow.id as string;
    const manual = await h.call('POST', '/v2/workflows', { name: 'Manual', workers: workers() });
    const manualId = manual.json().workflow.id as string;
    const run = await h.call('POST', `/v2/workflows/${manualId}/run`, { parameters: {} });
    expect(run.statusCode).toBe(202);
    const executionId = run.json().workflow_execution.id as string;
    const handle = h.t.temporal.workflow.getHandle(executionId);
    expect(
      await eventually(
        async () => ((await handle.describe()).status.name === 'RUNNING' ? true : undefined),
        30_000,
      ),
    ).toBe(true);

    const file = path.join(workDir, 'cluster.tar');
    const made = pas(h.databaseUrl, 'backup', '--output', file);
    expect({ status: made.status, stderr: made.stderr }).toEqual({ status: 0, stderr: '' });
    // The cluster no longer has the schedule (as a cluster rebuilt from an older backup would not).
    await h.t.temporal.schedule.getHandle(scheduleIdOf(scheduledId)).delete();

    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: targetUrl.toString(),
      TEMPORAL_ADDRESS: temporalAddress(),
      TEMPORAL_TASK_QUEUE: taskQueue,
    };
    const restored = spawnSync(process.execPath, [path.join(ROOT, 'ops/cli/pas.mjs'), 'restore', file], {
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect({ status: restored.status, stderr: restored.stderr }).toEqual({ status: 0, stderr: '' });
    expect(restored.stdout).toContain(`now FAILED`);
    expect(restored.stdout).toMatch(
      /Temporal \(.*\): 1 open run workflow\(s\) terminated; schedules 1 created/,
    );

    expect((await handle.describe()).status.name).toBe('TERMINATED');
    const schedule = await h.t.temporal.schedule.getHandle(scheduleIdOf(scheduledId)).describe();
    expect(schedule.state.paused).toBe(false);
    const db = connectDatabase(targetUrl.toString(), 1);
    try {
      const row = (await db('workflow_executions').where({ id: executionId }).first()) as {
        run_status: string;
        resume: { failure: { message: string } };
      };
      expect(row.run_status).toBe('FAILED');
      const manifest = JSON.parse(
        spawnSync('tar', ['-xOf', file, 'manifest.json'], { encoding: 'utf8' }).stdout,
      ) as { snapshot_at: string };
      expect(row.resume.failure.message).toBe(interruptedRunMessage(manifest.snapshot_at));
    } finally {
      await db.destroy();
    }
  } finally {
    if (scheduledId)
      await h.t.temporal.schedule
        .getHandle(scheduleIdOf(scheduledId))
        .delete()
        .catch(() => {});
    const admin = knexFactory({
      client: 'pg',
      connection: process.env.TEST_DATABASE_ADMIN_URL!,
      pool: { min: 0, max: 1 },
    });
    await admin.raw(`drop database if exists ${target} with (force)`);
    await admin.destroy();
    await rm(workDir, { recursive: true, force: true });
  }
}, 180_000);
