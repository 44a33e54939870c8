/**
 * The workflow editor's preview of a schedule not saved yet (api/console/ui/parts/cron-preview.ts)
 * against the real thing: for each schedule, the next five firings the Temporal Schedule reports
 * (GET /v2/workflows/{id}/schedule) are the five the preview computes from the same moment. Time
 * zones east and west of UTC, a half-hour one, names, steps, lists, day-of-month with day-of-week
 * (both must match, as Temporal reads cron), and a 29 February.
 */
import { nextFirings } from '../../api/console/ui/parts/cron-preview';
import { newId } from '../../engine/platform/ids';
import { createTestAccount, createTestApp, type TestAccount, type TestApp } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

const SCHEDULES: Array<[string, string]> = [
  ['0 7 * * 1-5', 'Europe/Paris'],
  ['*/20 9-17 * * MON-FRI', 'America/New_York'],
  ['5 4 * * SUN', 'Asia/Kolkata'],
  ['30 2 1,15 * *', 'UTC'],
  ['0 12 1-7 * 5', 'Australia/Sydney'],
  ['0 0 29 FEB *', 'UTC'],
  ['15 10 * JAN,JUL 0,6', 'America/Los_Angeles'],
];

describe('the editor’s preview of a schedule’s next firings', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let t: TestApp;
  let account: TestAccount;
  const made: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    t = await createTestApp(database.db);
    account = await createTestAccount(database.db);
  });
  afterAll(async () => {
    // The suites share one Temporal server: each workflow's schedule goes with it.
    for (const id of made) {
      await t.app.inject({
        method: 'DELETE',
        url: `/v2/workflows/${id}`,
        headers: { authorization: account.bearer },
      });
    }
    await t?.close();
    await database?.drop();
  });

  test.each(SCHEDULES)('%s in %s: the five firings the scheduler reports', async (cron, timezone) => {
    const [s, e] = [newId('worker'), newId('worker')];
    const stored = await t.app.inject({
      method: 'POST',
      url: '/v2/workflows',
      headers: { authorization: account.bearer },
      payload: {
        name: `Preview ${cron}`,
        trigger_type: 'TIME_BASED',
        trigger_config: { cron, timezone },
        workers: [
          { id: s, name: 'S', type: 'STARTER', next: [e] },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      },
    });
    expect(stored.statusCode).toBe(200);
    const id = stored.json().workflow.id as string;
    made.push(id);
    const res = await t.app.inject({
      method: 'GET',
      url: `/v2/workflows/${id}/schedule`,
      headers: { authorization: account.bearer },
    });
    expect(res.statusCode).toBe(200);
    const scheduled = (res.json().schedule.next_firings as string[]).map((at) => Date.parse(at));
    // Five, or fewer where Temporal looks no further ahead (a 29 February comes once in four years).
    expect(scheduled.length).toBeGreaterThanOrEqual(cron.includes('FEB') ? 1 : 5);
    // From just before the scheduler's first firing, so both count from the same moment.
    const preview = nextFirings(cron, timezone, scheduled[0]! - 1);
    expect(
      Array.isArray(preview) && preview.slice(0, scheduled.length).map((at) => new Date(at).toISOString()),
    ).toEqual(scheduled.map((at) => new Date(at).toISOString()));
    // And from now, the preview's first firing is the scheduler's first.
    const fromNow = nextFirings(cron, timezone, Date.now()) as number[];
    expect(fromNow[0]).toBe(scheduled[0]);
  });

  test('what does not read says why', () => {
    expect(nextFirings('0 7 * *', 'UTC', 0)).toBe('A schedule has 5 fields: minute hour day month weekday.');
    expect(nextFirings('0 25 * * *', 'UTC', 0)).toBe('The schedule does not read: “25” is out of range.');
    expect(nextFirings('0 7 * * *', 'Mars/Olympus', 0)).toBe(
      '“Mars/Olympus” is not a time zone this browser knows.',
    );
    expect(nextFirings('0 0 31 FEB *', 'UTC', 0)).toBe('The schedule never fires.');
  });
});
