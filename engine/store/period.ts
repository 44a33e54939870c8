import { isCalendarDay } from './entity-fields';
import { InvalidInput } from '../platform/errors';

/** A bound of a period filter: the day (YYYYMMDD) and, when a time was given, the exact second. */
export interface PeriodBound {
  day: string;
  hasTime: boolean;
  /** First instant (for a start) or last instant (for an end) the bound covers, UTC. */
  instant: Date;
}

export interface Period {
  start: PeriodBound | null;
  end: PeriodBound | null;
}

const FORMAT = /^(\d{4})(\d{2})(\d{2})(?: (\d{2}):(\d{2}):(\d{2}))?$/;

function parseBound(name: string, value: string, edge: 'start' | 'end'): PeriodBound {
  const match = FORMAT.exec(value);
  if (!match || !isCalendarDay(value.slice(0, 8))) {
    throw new InvalidInput(`${name} must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), got "${value}".`);
  }
  const [, y, mo, d, h, mi, s] = match;
  const hasTime = h !== undefined;
  if (hasTime && (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59)) {
    throw new InvalidInput(`${name} has an invalid time of day: "${value}".`);
  }
  const base = Date.UTC(
    Number(y),
    Number(mo) - 1,
    Number(d),
    Number(h ?? 0),
    Number(mi ?? 0),
    Number(s ?? 0),
  );
  // A day runs to its last instant; a time to the end of that second. Bounds are inclusive.
  const instant = edge === 'start' ? base : base + (hasTime ? 1000 : 86_400_000) - 1;
  return { day: value.slice(0, 8), hasTime, instant: new Date(instant) };
}

/** `start`, `end`, `date_time` (both at once); any other format is a 400. */
export function parsePeriod(input: {
  start?: string | null;
  end?: string | null;
  dateTime?: string | null;
}): Period | null {
  const present = (v: string | null | undefined): v is string => v !== undefined && v !== null && v !== '';
  if (present(input.dateTime)) {
    if (present(input.start) || present(input.end)) {
      throw new InvalidInput('date_time sets start and end: do not combine it with them.');
    }
    return {
      start: parseBound('date_time', input.dateTime, 'start'),
      end: parseBound('date_time', input.dateTime, 'end'),
    };
  }
  if (!present(input.start) && !present(input.end)) return null;
  const period = {
    start: present(input.start) ? parseBound('start', input.start, 'start') : null,
    end: present(input.end) ? parseBound('end', input.end, 'end') : null,
  };
  if (period.start && period.end && period.start.instant > period.end.instant) {
    throw new InvalidInput('start must not be after end.');
  }
  return period;
}
