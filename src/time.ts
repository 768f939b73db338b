/**
 * Calendar dates (YYYY-MM-DD) and wall-clock times in an IANA time zone, as instants (epoch
 * milliseconds), daylight saving included: the one place the service does date arithmetic.
 */

const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formats.set(timeZone, format);
  }
  return format;
}

export function isTimeZone(name: string): boolean {
  try {
    formatFor(name);
    return true;
  } catch {
    return false;
  }
}

/** How far the zone's wall clock is ahead of UTC at `epochMs`. */
export function offsetAt(timeZone: string, epochMs: number): number {
  const parts: Record<string, number> = {};
  for (const part of formatFor(timeZone).formatToParts(new Date(epochMs))) parts[part.type] = Number(part.value);
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - Math.floor(epochMs / 1000) * 1000;
}

export const DAY_MS = 86_400_000;
export const MINUTE_MS = 60_000;

/** The last year a date may name: a range of days after it stays within four-digit years. */
const LAST_YEAR = 9998;

/** UTC midnight of a valid YYYY-MM-DD (years 0001 to 9998), or null when it is not one. */
export function parseDate(date: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!match) return null;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < 1 || year > LAST_YEAR) return null;
  const utc = Date.UTC(year, month - 1, day);
  const check = new Date(utc);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return null;
  return utc;
}

/** Minutes since midnight of an `HH:MM` (00:00 to 24:00), or null. */
export function parseClock(clock: string): number | null {
  const match = /^(\d{2}):(\d{2})$/.exec(clock);
  if (!match) return null;
  const minutes = Number(match[1]) * 60 + Number(match[2]);
  return Number(match[2]) < 60 && minutes <= 24 * 60 ? minutes : null;
}

/**
 * The instant the wall clock of `timeZone` shows `minutes` after the midnight of `date` (validated). A
 * time skipped by a spring-forward change maps to the instant one offset later; a time shown twice
 * at a fall-back change maps to its first showing.
 */
export function zonedInstant(date: string, minutes: number, timeZone: string): number {
  const wall = parseDate(date)! + minutes * MINUTE_MS;
  const before = offsetAt(timeZone, wall - DAY_MS);
  const after = offsetAt(timeZone, wall + DAY_MS);
  const fits = [wall - before, wall - after].filter((instant) => instant + offsetAt(timeZone, instant) === wall);
  return fits.length > 0 ? Math.min(...fits) : wall - before;
}

/** The instant the day `date` (validated) begins in `timeZone`. */
export function startOfDay(date: string, timeZone: string): number {
  return zonedInstant(date, 0, timeZone);
}

/** Today's date in `timeZone`, as YYYY-MM-DD. */
export function today(timeZone: string, now = Date.now()): string {
  return localDate(now, timeZone);
}

/** The date (YYYY-MM-DD) the wall clock of `timeZone` shows at `epochMs`. */
export function localDate(epochMs: number, timeZone: string): string {
  return new Date(epochMs + offsetAt(timeZone, epochMs)).toISOString().slice(0, 10);
}

/** ISO 8601 with the zone's offset at that instant, as Eka writes slot times: `2024-09-05T09:15:00+05:30`. */
export function localIso(epochMs: number, timeZone: string): string {
  const offset = offsetAt(timeZone, epochMs);
  return `${new Date(epochMs + offset).toISOString().slice(0, 19)}${offsetText(offset)}`;
}

/** A date's wall-clock times as instants, and instants near it as local ISO text (see `dayClock`). */
export interface DayClock {
  /** As `zonedInstant(date, minutes, zone)`. */
  instant(minutes: number): number;
  /** As `localIso(epochMs, zone)`, for an instant within a day of the date. */
  iso(epochMs: number): string;
}

/**
 * The clock of one date in `timeZone`. A date whose zone keeps one offset from the day before it to the
 * day after (all but a few dates a year) looks the offset up once, so a day's hundreds of slot times
 * cost arithmetic, not a time-zone look-up each.
 */
export function dayClock(date: string, timeZone: string): DayClock {
  const midnight = parseDate(date)!;
  const offset = offsetAt(timeZone, midnight - DAY_MS);
  const steady = [midnight, midnight + DAY_MS, midnight + 2 * DAY_MS].every((at) => offsetAt(timeZone, at) === offset);
  if (!steady) return { instant: (minutes) => zonedInstant(date, minutes, timeZone), iso: (epochMs) => localIso(epochMs, timeZone) };
  const suffix = offsetText(offset);
  return {
    instant: (minutes) => midnight + minutes * MINUTE_MS - offset,
    iso: (epochMs) => {
      const sinceMidnight = epochMs + offset - midnight;
      if (sinceMidnight < 0 || sinceMidnight >= DAY_MS || sinceMidnight % 1000 !== 0)
        return `${new Date(epochMs + offset).toISOString().slice(0, 19)}${suffix}`;
      const seconds = sinceMidnight / 1000;
      return `${date}T${TWO_DIGITS[Math.floor(seconds / 3600)]}:${TWO_DIGITS[Math.floor(seconds / 60) % 60]}:${TWO_DIGITS[seconds % 60]}${suffix}`;
    },
  };
}

const TWO_DIGITS = Array.from({ length: 60 }, (_, value) => String(value).padStart(2, '0'));

function offsetText(offset: number): string {
  const minutes = Math.abs(offset) / MINUTE_MS;
  const sign = offset < 0 ? '-' : '+';
  return `${sign}${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

/** Whole days from `from` to `to` (both validated). */
export function daysBetween(from: string, to: string): number {
  return Math.round((parseDate(to)! - parseDate(from)!) / DAY_MS);
}

/** The date `days` after `date` (validated). */
export function addDays(date: string, days: number): string {
  return new Date(parseDate(date)! + days * DAY_MS).toISOString().slice(0, 10);
}

const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;
export type Weekday = (typeof WEEKDAYS)[number];
export const WEEKDAY_NAMES: readonly Weekday[] = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];

/** The day of the week of a calendar date (validated); the same in every zone. */
export function weekday(date: string): Weekday {
  return WEEKDAYS[new Date(parseDate(date)!).getUTCDay()]!;
}
