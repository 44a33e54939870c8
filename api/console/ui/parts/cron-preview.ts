/**
 * The next firings of a schedule not saved yet, computed in the browser (no DOM: jest checks it
 * against the Temporal Schedule's own answer). The 5-field cron the API takes (minute hour
 * day-of-month month day-of-week; `*`, values, names, ranges, steps, lists) read as Temporal reads
 * it: every field must match, day-of-month and day-of-week included (Temporal has no cron "or" of
 * the two), in the schedule's time zone.
 */

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const FIELDS = [
  { min: 0, max: 59 },
  { min: 0, max: 23 },
  { min: 1, max: 31 },
  { min: 1, max: 12, names: MONTHS, base: 1 },
  { min: 0, max: 7, names: DAYS, base: 0 },
] as const;

function value(text: string, index: number): number {
  const field = FIELDS[index]!;
  const named = 'names' in field ? field.names.indexOf(text.toUpperCase()) : -1;
  const n = named >= 0 && 'base' in field ? named + field.base : /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < field.min || n > field.max) throw new Error(`“${text}” is out of range`);
  return n;
}

/** One field's values; null when it is `*` (matches everything). */
function parseField(text: string, index: number): Set<number> | null {
  const { min, max } = FIELDS[index]!;
  if (text === '*') return null;
  const out = new Set<number>();
  for (const item of text.split(',')) {
    const match = /^(?:(\*)|([A-Za-z0-9]+)(?:-([A-Za-z0-9]+))?)(?:\/(\d+))?$/.exec(item);
    if (!match) throw new Error(`“${item}” is not cron syntax`);
    const [, star, from, to, step] = match;
    const start = star ? min : value(from!, index);
    // `a/s` runs from a to the field's end, as in cron.
    const end =
      star || (step !== undefined && to === undefined) ? max : to !== undefined ? value(to, index) : start;
    const by = step === undefined ? 1 : Number(step);
    if (by < 1) throw new Error(`step “${step}” must be 1 or more`);
    for (let n = start; n <= end; n += by) out.add(index === 4 && n === 7 ? 0 : n);
  }
  return out;
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** How far the zone's wall clock is ahead of UTC at `instant`, in milliseconds. */
function offset(instant: number, timeZone: string): number {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(timeZone, format);
  }
  const parts: Record<string, number> = {};
  for (const part of format.formatToParts(instant))
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - Math.floor(instant / 1000) * 1000;
}

/** The instant a wall-clock time of the zone names (a time skipped by a clock change moves on). */
function instantOf(wall: number, timeZone: string): number {
  const first = wall - offset(wall, timeZone);
  return wall - offset(first, timeZone);
}

/**
 * The next `count` firings after `after` (epoch ms), or why there are none to show: a cron that
 * does not read, or a time zone the browser does not know.
 */
export function nextFirings(cron: string, timeZone: string, after: number, count = 5): number[] | string {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5 || fields[0] === '')
    return 'A schedule has 5 fields: minute hour day month weekday.';
  let sets: Array<Set<number> | null>;
  try {
    sets = fields.map(parseField);
  } catch (error) {
    return `The schedule does not read: ${(error as Error).message}.`;
  }
  const zone = timeZone || 'UTC';
  try {
    offset(after, zone);
  } catch {
    return `“${zone}” is not a time zone this browser knows.`;
  }
  const [minutes, hours, days, months, weekdays] = sets;
  const sorted = (set: Set<number> | null, min: number, max: number) =>
    set ? [...set].sort((a, b) => a - b) : Array.from({ length: max - min + 1 }, (_, i) => min + i);
  const minuteList = sorted(minutes!, 0, 59);
  const hourList = sorted(hours!, 0, 23);
  // The zone's calendar day of `after`, then day by day, up to the 400 years the calendar repeats in.
  const today = after + offset(after, zone);
  const start = Date.UTC(
    new Date(today).getUTCFullYear(),
    new Date(today).getUTCMonth(),
    new Date(today).getUTCDate(),
  );
  const out: number[] = [];
  for (let day = 0; day < 146_097 && out.length < count; day++) {
    const date = new Date(start + day * 86_400_000);
    if (months && !months.has(date.getUTCMonth() + 1)) continue;
    if (days && !days.has(date.getUTCDate())) continue;
    if (weekdays && !weekdays.has(date.getUTCDay())) continue;
    for (const hour of hourList) {
      for (const minute of minuteList) {
        const at = instantOf(date.getTime() + hour * 3_600_000 + minute * 60_000, zone);
        if (at > after && !out.includes(at)) out.push(at);
        if (out.length >= count) return out.sort((a, b) => a - b);
      }
    }
  }
  return out.length ? out.sort((a, b) => a - b) : 'The schedule never fires.';
}
