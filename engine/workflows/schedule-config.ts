import { InvalidInput } from '../platform/errors';

/** The `trigger_config` of a TIME_BASED workflow, as stored: normalised cron and an IANA zone name. */
export interface ScheduleConfig {
  cron: string;
  timezone: string;
}

interface CronField {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** What the first name stands for (JAN is 1, SUN is 0). */
  nameBase?: number;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

// The five fields of classic cron, as Temporal reads them (7 is Sunday too, as in crontab).
const FIELDS: readonly CronField[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, nameBase: 1 },
  { name: 'day-of-week', min: 0, max: 7, names: DAYS, nameBase: 0 },
];

const EXAMPLE = 'for example "0 7 * * 1-5" (07:00, Monday to Friday)';
const ITEM = /^(?:(\*)|([A-Za-z0-9]+)(?:-([A-Za-z0-9]+))?)(?:\/(\d+))?$/;

function fieldValue(field: CronField, text: string, cron: string): number {
  const named = field.names?.indexOf(text.toUpperCase() as never) ?? -1;
  const value = named >= 0 ? named + field.nameBase! : /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(value) || value < field.min || value > field.max) {
    const names = field.names ? ` or ${field.names[0]}-${field.names[field.names.length - 1]}` : '';
    throw new InvalidInput(
      `trigger_config.cron "${cron}": ${field.name} value "${text}" must be ${field.min}-${field.max}${names}.`,
    );
  }
  return value;
}

/** One field: `*`, a value, a range, each with an optional `/step`, comma-separated. */
function checkField(field: CronField, text: string, cron: string): void {
  for (const item of text.split(',')) {
    const match = ITEM.exec(item);
    if (!match) {
      throw new InvalidInput(
        `trigger_config.cron "${cron}": ${field.name} field "${text}" is not valid cron syntax (use *, n, a-b, */s, a-b/s or lists of them).`,
      );
    }
    const [, star, from, to, step] = match;
    if (!star) {
      const start = fieldValue(field, from!, cron);
      if (to !== undefined && fieldValue(field, to, cron) < start) {
        throw new InvalidInput(
          `trigger_config.cron "${cron}": ${field.name} range "${item}" runs backwards.`,
        );
      }
    }
    if (step !== undefined && (Number(step) < 1 || Number(step) > field.max)) {
      throw new InvalidInput(
        `trigger_config.cron "${cron}": ${field.name} step "${step}" must be 1-${field.max}.`,
      );
    }
  }
}

/**
 * The 5-field cron syntax (minute hour day-of-month month day-of-week) checked here, so a bad
 * expression gets a message naming the field; Temporal parses it again when the Schedule is saved.
 * Temporal's extras (seconds and year fields, `@daily`, `CRON_TZ=`) are refused: the time zone has
 * its own field and one syntax is easier to document.
 */
export function parseCron(value: unknown): string {
  if (value === undefined || value === null || value === '') {
    throw new InvalidInput(`trigger_config.cron is required for a TIME_BASED trigger, ${EXAMPLE}.`);
  }
  if (typeof value !== 'string') {
    throw new InvalidInput(`trigger_config.cron must be a string, ${EXAMPLE}.`);
  }
  const fields = value.trim().split(/\s+/);
  const cron = fields.join(' ');
  if (fields.length !== 5) {
    throw new InvalidInput(
      `trigger_config.cron "${cron}" must have 5 fields (minute hour day-of-month month day-of-week), ${EXAMPLE}.`,
    );
  }
  fields.forEach((text, index) => checkField(FIELDS[index]!, text, cron));
  return cron;
}

/** An IANA zone name that Intl knows, in its canonical spelling ("utc" becomes "UTC"). */
export function parseTimezone(value: unknown): string {
  if (value === undefined || value === null || value === '') return 'UTC';
  // Intl also takes offsets such as "+01:00"; Temporal wants a zone name, so only names pass.
  if (typeof value !== 'string' || !/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(value)) {
    throw new InvalidInput(
      'trigger_config.timezone must be an IANA time zone name such as "America/New_York".',
    );
  }
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: value }).resolvedOptions().timeZone;
  } catch {
    throw new InvalidInput(
      `trigger_config.timezone "${value}" is not a known IANA time zone (for example "America/New_York" or "UTC").`,
    );
  }
}

/** The stored form of a TIME_BASED trigger_config: `{cron, timezone}`, other keys dropped. */
export function parseScheduleConfig(value: unknown): ScheduleConfig {
  const config = (value ?? {}) as Record<string, unknown>;
  return { cron: parseCron(config.cron), timezone: parseTimezone(config.timezone) };
}
