import { ScheduleNotFoundError, type ScheduleDescription } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { temporalWorkflowRunner } from '../../engine/workflows/temporal-workflow-runner';
import {
  reconcileSchedules,
  type ScheduledLaunchOutcome,
  scheduledExecutionId,
  scheduleIdOf,
} from '../../engine/workflows/workflow-schedules';
import { createTriggerActivities } from '../../workers/activities/trigger-activities';
import { createTestApp } from '../support/test-app';
import { type Execution, startHarness, type WorkflowHarness, workerId } from './workflow-harness';

/**
 * TIME_BASED triggers on a real Temporal dev server and a real PostgreSQL: the Schedule kept per
 * workflow, firings through the launcher workflow and its activity, and the failure paths.
 */
describe('TIME_BASED triggers', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    h = await startHarness({ worker: true });
  }, 120_000);
  afterAll(async () => {
    // The dev server outlives the suite: leave none of this suite's schedules firing into it.
    const schedules = temporalWorkflowRunner(h.t.temporal, h.taskQueue).schedules;
    for (const line of await schedules.list()) await schedules.remove(line.workflowId);
    await h.close();
  });

  const keyword = (name: string) => defineSearchAttributeKey(name, SearchAttributeType.KEYWORD);
  const handleOf = (workflowId: string) => h.t.temporal.schedule.getHandle(scheduleIdOf(workflowId));
  const describeSchedule = (workflowId: string) => handleOf(workflowId).describe();

  async function expectNoSchedule(workflowId: string): Promise<void> {
    await expect(describeSchedule(workflowId)).rejects.toBeInstanceOf(ScheduleNotFoundError);
  }

  /** A three-step workflow whose ender returns what it was given plus a marker. */
  function definition() {
    const [s, b, e] = [workerId(), workerId(), workerId()];
    return [
      { id: s, name: 'Start', type: 'STARTER', next: [b] },
      { id: b, name: 'Work', type: 'BASIC', script: 'function main() { return { ok: 1 }; }', next: [e] },
      { id: e, name: 'End', type: 'ENDER', script: 'function main(args) { return { got: args.inputs }; }' },
    ];
  }

  const timeBased = (extra: object = {}) => ({
    name: 'Morning report',
    trigger_type: 'TIME_BASED',
    trigger_config: { cron: '0 7 * * 1-5', timezone: 'America/New_York' },
    trigger_enabled: true,
    workers: definition(),
    ...extra,
  });

  async function executionsOf(workflowId: string): Promise<Execution[]> {
    const res = await h.call('GET', `/v2/workflows/${workflowId}/workflow_executions?page_size=100`);
    expect(res.statusCode).toBe(200);
    return res.json().workflow_executions;
  }

  /** The launcher started by the schedule's latest firing, and what it ended with. */
  async function latestLaunch(
    workflowId: string,
    before: number,
  ): Promise<{ launcherId: string; outcome: ScheduledLaunchOutcome }> {
    const deadline = Date.now() + 30_000;
    let description: ScheduleDescription;
    for (;;) {
      description = await describeSchedule(workflowId);
      if (description.info.recentActions.length > before) break;
      if (Date.now() > deadline) throw new Error('the schedule took no action within 30 s');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const launcherId = description.info.recentActions.at(-1)!.action.workflow.workflowId;
    const outcome = (await h.t.temporal.workflow.getHandle(launcherId).result()) as ScheduledLaunchOutcome;
    return { launcherId, outcome };
  }

  describe('trigger_config validation', () => {
    const refused: Array<[string, object, RegExp]> = [
      ['no cron', { timezone: 'UTC' }, /^trigger_config\.cron is required/],
      ['a number as cron', { cron: 7 }, /^trigger_config\.cron must be a string/],
      ['four fields', { cron: '0 7 * *' }, /^trigger_config\.cron "0 7 \* \*" must have 5 fields/],
      ['six fields', { cron: '0 0 7 * * 1' }, /must have 5 fields/],
      ['a shorthand', { cron: '@daily' }, /must have 5 fields/],
      ['minute 60', { cron: '60 7 * * *' }, /minute value "60" must be 0-59/],
      ['hour 24', { cron: '0 24 * * *' }, /hour value "24" must be 0-23/],
      ['day 0', { cron: '0 7 0 * *' }, /day-of-month value "0" must be 1-31/],
      ['month 13', { cron: '0 7 * 13 *' }, /month value "13" must be 1-12 or JAN-DEC/],
      ['a weekday name typo', { cron: '0 7 * * MON-FRX' }, /day-of-week value "FRX"/],
      ['a backwards range', { cron: '0 17-9 * * *' }, /hour range "17-9" runs backwards/],
      ['a zero step', { cron: '*/0 * * * *' }, /minute step "0" must be 1-59/],
      ['garbage', { cron: '0 7 ? * L' }, /day-of-month field "\?" is not valid cron syntax/],
      [
        'an unknown zone',
        { cron: '0 7 * * *', timezone: 'Mars/Olympus_Mons' },
        /^trigger_config\.timezone "Mars\/Olympus_Mons" is not a known IANA time zone/,
      ],
      [
        'an offset for a zone',
        { cron: '0 7 * * *', timezone: '+01:00' },
        /^trigger_config\.timezone must be an IANA time zone name/,
      ],
      [
        'a number as zone',
        { cron: '0 7 * * *', timezone: 5 },
        /^trigger_config\.timezone must be an IANA time zone name/,
      ],
    ];

    test.each(refused)('%s → 400 naming the field, nothing stored', async (_case, config, message) => {
      const name = `Refused ${Math.random().toString(36).slice(2)}`;
      const res = await h.call('POST', '/v2/workflows', timeBased({ name, trigger_config: config }));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ code: 400, message: expect.stringMatching(message) });
      const stored = await h.db('entities').where({ kind: 'workflow', name });
      expect(stored).toEqual([]);
    });

    // What the local check lets through, Temporal must take too (a refusal there would also be a 400).
    test.each([
      '0 7 * * 7',
      '0 7 * * SUN-SAT',
      '0 7 * * mon,wed,fri',
      '5/15 * * * *',
      '0 7 * JAN-MAR *',
      '0,30 8-18/2 1-15 */3 1-5',
      '59 23 31 12 0',
    ])('"%s" is accepted and scheduled', async (cron) => {
      const workflow = await h.store(timeBased({ trigger_config: { cron }, trigger_enabled: false }));
      expect(workflow.trigger_config).toEqual({ cron, timezone: 'UTC' });
      expect((await describeSchedule(workflow.id)).info.nextActionTimes.length).toBeGreaterThan(0);
    });

    test('a PUT that makes a workflow TIME_BASED without a cron is refused and changes nothing', async () => {
      const workflow = await h.store({ name: 'Manual first', workers: definition() });
      const res = await h.call('PUT', `/v2/workflows/${workflow.id}`, { trigger_type: 'TIME_BASED' });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/^trigger_config\.cron is required for a TIME_BASED trigger/);
      const after = (await h.call('GET', `/v2/workflows/${workflow.id}`)).json().workflow;
      expect(after).toMatchObject({ trigger_type: 'MANUAL', version: '1' });
      await expectNoSchedule(workflow.id);
    });

    test('the stored config is normalised: spacing, the zone spelled canonically, UTC by default', async () => {
      const spaced = await h.store(
        timeBased({ trigger_config: { cron: ' 30  6 * * MON-FRI ', timezone: 'europe/london', extra: 1 } }),
      );
      expect(spaced.trigger_config).toEqual({ cron: '30 6 * * MON-FRI', timezone: 'Europe/London' });
      const utc = await h.store(
        timeBased({ trigger_config: { cron: '*/15 * * * *' }, trigger_enabled: false }),
      );
      expect(utc.trigger_config).toEqual({ cron: '*/15 * * * *', timezone: 'UTC' });
      expect((await describeSchedule(utc.id)).spec.timezone).toBe('UTC');
    });
  });

  test('POST of an enabled TIME_BASED workflow creates its schedule: spec, zone, state, attributes, memo', async () => {
    const workflow = await h.store(timeBased());
    const description = await describeSchedule(workflow.id);
    expect(description.scheduleId).toBe(`schedule-${workflow.id}`);
    expect(description.spec.timezone).toBe('America/New_York');
    expect(description.spec.calendars).toEqual([
      expect.objectContaining({
        minute: [{ start: 0, end: 0, step: 1 }],
        hour: [{ start: 7, end: 7, step: 1 }],
        dayOfWeek: [{ start: 'MONDAY', end: 'FRIDAY', step: 1 }],
      }),
    ]);
    // The zone is applied: the next firings are at 07:00 on weekdays in New York.
    const local = new Intl.DateTimeFormat('en-US', {
      timeZone: 'America/New_York',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    expect(description.info.nextActionTimes.length).toBeGreaterThan(0);
    for (const time of description.info.nextActionTimes) {
      expect(local.format(time)).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 07:00$/);
    }
    expect(description.state).toMatchObject({
      paused: false,
      note: `Runs workflow "Morning report" (${workflow.id}) at "0 7 * * 1-5" America/New_York.`,
    });
    expect(description.policies.overlap).toBe('SKIP');
    expect(description.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'scheduledLauncherWorkflow',
      workflowId: `launch-${workflow.id}`,
      taskQueue: h.taskQueue,
    });
    expect(description.memo).toMatchObject({
      workflow_id: workflow.id,
      workflow_name: 'Morning report',
      workspace: 'main',
      account: h.account.accountId,
    });
    const attributes = description.typedSearchAttributes;
    expect(attributes.get(keyword('PasWorkflowId'))).toBe(workflow.id);
    expect(attributes.get(keyword('PasTrigger'))).toBe('TIME_BASED');
    expect(attributes.get(keyword('PasWorkspace'))).toBe('main');
    expect(attributes.get(keyword('PasAccount'))).toBe(h.account.accountId);
  });

  test('POST of a disabled TIME_BASED workflow creates a paused schedule; a MANUAL one none', async () => {
    const disabled = await h.store(timeBased({ trigger_enabled: false }));
    expect((await describeSchedule(disabled.id)).state.paused).toBe(true);
    const manual = await h.store({ name: 'Manual', workers: definition() });
    await expectNoSchedule(manual.id);
  });

  test('PUT follows: new cron and zone and name, disable pauses, enable unpauses, another trigger removes', async () => {
    const workflow = await h.store(timeBased());
    const put = async (body: object) => {
      const res = await h.call('PUT', `/v2/workflows/${workflow.id}`, body);
      expect(res.statusCode).toBe(200);
      return describeSchedule(workflow.id);
    };

    let description = await put({
      name: 'Evening report',
      trigger_config: { cron: '30 18 * * *', timezone: 'Asia/Tokyo' },
    });
    expect(description.spec.timezone).toBe('Asia/Tokyo');
    expect(description.spec.calendars).toEqual([
      expect.objectContaining({
        minute: [{ start: 30, end: 30, step: 1 }],
        hour: [{ start: 18, end: 18, step: 1 }],
      }),
    ]);
    expect(description.state.note).toBe(
      `Runs workflow "Evening report" (${workflow.id}) at "30 18 * * *" Asia/Tokyo.`,
    );
    expect(description.action.memo).toMatchObject({ workflow_name: 'Evening report' });

    description = await put({ trigger_enabled: false });
    expect(description.state.paused).toBe(true);
    expect(description.state.note).toMatch(/Paused: the trigger is disabled\.$/);
    expect(description.spec.timezone).toBe('Asia/Tokyo');

    description = await put({ trigger_enabled: true });
    expect(description.state.paused).toBe(false);

    // A change that does not touch the trigger keeps the schedule as it is.
    description = await put({ description: 'Daily figures' });
    expect(description.state.paused).toBe(false);
    expect(description.spec.timezone).toBe('Asia/Tokyo');

    const manual = await h.call('PUT', `/v2/workflows/${workflow.id}`, { trigger_type: 'API' });
    expect(manual.statusCode).toBe(200);
    await expectNoSchedule(workflow.id);

    // Back to TIME_BASED: the stored config is used again and the schedule comes back.
    description = await put({ trigger_type: 'TIME_BASED' });
    expect(description.spec.timezone).toBe('Asia/Tokyo');
    expect(description.state.paused).toBe(false);
  });

  test('DELETE removes the schedule', async () => {
    const workflow = await h.store(timeBased());
    await describeSchedule(workflow.id);
    const res = await h.call('DELETE', `/v2/workflows/${workflow.id}`);
    expect(res.statusCode).toBe(200);
    await expectNoSchedule(workflow.id);
  });

  test('a firing makes a run like the API does, with trigger TIME_BASED and a SCHEDULER audit record', async () => {
    // Never due on its own within the test: only the manual trigger fires it.
    const workflow = await h.store(timeBased({ trigger_config: { cron: '0 0 1 1 *', timezone: 'UTC' } }));
    await handleOf(workflow.id).trigger();
    const { launcherId, outcome } = await latestLaunch(workflow.id, 0);
    expect(launcherId).toMatch(new RegExp(`^launch-${workflow.id}-`));
    const executionId = scheduledExecutionId(launcherId);
    expect(executionId).toMatch(/^wfex_[a-zA-Z0-9]{25}$/);
    expect(outcome).toEqual({ executionId, skipped: null });

    const ended = await h.pollUntilEnded(workflow.id, executionId);
    expect(ended).toMatchObject({
      id: executionId,
      run_status: 'SUCCEEDED',
      trigger: 'TIME_BASED',
      workflow_id: workflow.id,
      workflow_name: 'Morning report',
    });
    expect((await h.workerExecution(ended.ender_worker_execution_id!)).result).toEqual({ got: { ok: 1 } });
    expect(await executionsOf(workflow.id)).toHaveLength(1);

    // Execution id = Temporal workflow id; the run carries the trigger as a search attribute.
    const run = await h.t.temporal.workflow.getHandle(executionId).describe();
    expect(run.type).toBe('interpreterWorkflowV2');
    expect(run.typedSearchAttributes.get(keyword('PasTrigger'))).toBe('TIME_BASED');

    const audit = await h.call('GET', '/v2/audit_logs?page_size=100');
    expect(audit.statusCode).toBe(200);
    const records = audit
      .json()
      .audit_logs.filter((record: { entity_id: string }) => record.entity_id === executionId);
    expect(records).toEqual([
      expect.objectContaining({
        operation: 'EXECUTE',
        source: 'SCHEDULER',
        status: 'SUCCESS',
        user_email: 'System',
        entity_type: 'WorkflowExecution',
        entity_name: 'Morning report',
        activity: 'Started workflow execution of Morning report',
      }),
    ]);
  });

  test('a firing after the trigger was disabled, or the workflow deleted, makes no run', async () => {
    const workflow = await h.store(timeBased({ trigger_config: { cron: '0 0 1 1 *', timezone: 'UTC' } }));
    // The row changes behind the schedule's back (as when a commit fails after Temporal was told):
    // the launcher reads the row at each firing.
    await h
      .db('entities')
      .where({ kind: 'workflow', id: workflow.id })
      .update({ body: h.db.raw(`jsonb_set(body, '{trigger_enabled}', 'false')`) });
    await handleOf(workflow.id).trigger();
    const disabled = await latestLaunch(workflow.id, 0);
    expect(disabled.outcome).toEqual({ executionId: null, skipped: "The workflow's trigger is disabled." });

    await h.db('entities').where({ kind: 'workflow', id: workflow.id }).delete();
    await handleOf(workflow.id).trigger();
    const deleted = await latestLaunch(workflow.id, 1);
    expect(deleted.outcome).toEqual({ executionId: null, skipped: 'The workflow was deleted.' });

    expect(await h.db('workflow_executions').where({ workflow_id: workflow.id })).toEqual([]);
    await handleOf(workflow.id).delete();
  });

  test('a trigger of a schedule paused through the API makes no run', async () => {
    const workflow = await h.store(timeBased({ trigger_config: { cron: '0 0 1 1 *', timezone: 'UTC' } }));
    expect((await h.call('PUT', `/v2/workflows/${workflow.id}`, { trigger_enabled: false })).statusCode).toBe(
      200,
    );
    await handleOf(workflow.id).trigger();
    const { outcome } = await latestLaunch(workflow.id, 0);
    expect(outcome).toEqual({ executionId: null, skipped: "The workflow's trigger is disabled." });
    expect(await h.db('workflow_executions').where({ workflow_id: workflow.id })).toEqual([]);
  });

  test('the launch activity run twice for one launcher id makes one execution and one audit record', async () => {
    const workflow = await h.store(timeBased({ trigger_config: { cron: '0 0 1 1 *', timezone: 'UTC' } }));
    const { launchScheduledRun } = createTriggerActivities(
      h.db,
      temporalWorkflowRunner(h.t.temporal, h.taskQueue),
    );
    const input = {
      accountId: h.account.accountId,
      workflowId: workflow.id,
      workspace: 'main',
      runAs: null,
      launcherWorkflowId: `launch-${workflow.id}-2026-01-05T07:00:00Z`,
    };
    const first = await launchScheduledRun(input);
    const second = await launchScheduledRun(input);
    expect(first).toEqual({ executionId: scheduledExecutionId(input.launcherWorkflowId), skipped: null });
    expect(second).toEqual(first);
    await h.pollUntilEnded(workflow.id, first.executionId!);
    expect((await executionsOf(workflow.id)).map((execution) => execution.id)).toEqual([first.executionId]);
    const audits = await h.db('audit_logs').where({ entity_id: first.executionId, operation: 'EXECUTE' });
    expect(audits).toHaveLength(1);
    // runAs null: the run acts for the account owner.
    expect(audits[0]).toMatchObject({
      source: 'SCHEDULER',
      user_email: 'System',
      user_id: h.account.ownerId,
    });

    // Another firing is another run.
    const next = await launchScheduledRun({
      ...input,
      launcherWorkflowId: `launch-${workflow.id}-2026-01-06T07:00:00Z`,
    });
    expect(next.executionId).not.toBe(first.executionId);
    expect(await executionsOf(workflow.id)).toHaveLength(2);
  });

  test('Temporal unreachable: 503 and the workflow and its schedule stay in step', async () => {
    const offline = await createTestApp(h.db, { taskQueue: h.taskQueue });
    await offline.temporal.connection.close();
    const call = (method: 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) =>
      offline.app.inject({ method, url, payload, headers: { authorization: h.account.bearer } });
    try {
      const name = `Offline ${Math.random().toString(36).slice(2)}`;
      const created = await call('POST', '/v2/workflows', timeBased({ name }));
      expect(created.statusCode).toBe(503);
      expect(created.json()).toEqual({
        code: 503,
        message: 'The workflow scheduler (Temporal) is unavailable; nothing was saved. Try again.',
      });
      expect(await h.db('entities').where({ kind: 'workflow', name })).toEqual([]);

      const workflow = await h.store(timeBased());
      const renamed = await call('PUT', `/v2/workflows/${workflow.id}`, {
        name: 'Renamed',
        trigger_enabled: false,
      });
      expect(renamed.statusCode).toBe(503);
      const stored = (await h.call('GET', `/v2/workflows/${workflow.id}`)).json().workflow;
      expect(stored).toMatchObject({ name: 'Morning report', trigger_enabled: true, version: '1' });
      expect((await describeSchedule(workflow.id)).state.paused).toBe(false);

      const deleted = await call('DELETE', `/v2/workflows/${workflow.id}`);
      expect(deleted.statusCode).toBe(503);
      expect((await h.call('GET', `/v2/workflows/${workflow.id}`)).statusCode).toBe(200);
      await describeSchedule(workflow.id);

      // Workflows that have nothing to do with schedules never wait on Temporal.
      const manual = await call('POST', '/v2/workflows', { name: 'Manual offline', workers: definition() });
      expect(manual.statusCode).toBe(200);
    } finally {
      await offline.app.close();
    }
  });

  test('reconciliation restores lost schedules, fixes drifted ones, removes leftovers, leaves the rest', async () => {
    const schedules = temporalWorkflowRunner(h.t.temporal, h.taskQueue).schedules;
    // Settle what the other tests left: afterwards every TIME_BASED row of this suite has its schedule.
    await reconcileSchedules(h.db, schedules);

    const lost = await h.store(timeBased({ name: 'Lost' }));
    const drifted = await h.store(timeBased({ name: 'Drifted' }));
    const leftover = await h.store(timeBased({ name: 'Leftover' }));
    const kept = await h.store(timeBased({ name: 'Kept' }));
    await handleOf(lost.id).delete();
    await handleOf(drifted.id).pause('paused by hand');
    await h
      .db('entities')
      .where({ kind: 'workflow', id: leftover.id })
      .update({ body: h.db.raw(`jsonb_set(body, '{trigger_type}', '"MANUAL"')`) });

    // Schedule lists are eventually consistent: wait until the listing shows what was just done.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const lines = new Map((await schedules.list()).map((line) => [line.workflowId, line]));
      if (
        !lines.has(lost.id) &&
        lines.get(drifted.id)?.paused === true &&
        lines.has(leftover.id) &&
        lines.has(kept.id)
      )
        break;
      if (Date.now() > deadline) throw new Error('the schedule listing did not catch up within 30 s');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }

    const report = await reconcileSchedules(h.db, schedules);
    expect(report).toMatchObject({ synced: 2, removed: 1, failed: [] });
    expect(report.unchanged).toBeGreaterThanOrEqual(1);
    expect((await describeSchedule(lost.id)).state).toMatchObject({ paused: false });
    expect((await describeSchedule(drifted.id)).state).toMatchObject({
      paused: false,
      note: `Runs workflow "Drifted" (${drifted.id}) at "0 7 * * 1-5" America/New_York.`,
    });
    await expectNoSchedule(leftover.id);
    expect((await describeSchedule(kept.id)).state.paused).toBe(false);

    // Nothing left to do: a second pass touches nothing.
    const again = await reconcileSchedules(h.db, schedules);
    expect(again).toMatchObject({ synced: 0, removed: 0, failed: [] });
  });
});
