/** Calendar dates (YYYY-MM-DD) in an IANA time zone, as epoch milliseconds. */

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

/** How far the zone's wall clock is ahead of UTC at `epochMs`. */
function offsetAt(timeZone: string, epochMs: number): number {
  const parts: Record<string, number> = {};
  for (const part of formatFor(timeZone).formatToParts(new Date(epochMs))) parts[part.type] = Number(part.value);
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - Math.floor(epochMs / 1000) * 1000;
}

/** UTC midnight of a valid YYYY-MM-DD, or null when it is not a real calendar date. */
export function parseDate(date: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!match) return null;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const utc = Date.UTC(year, month - 1, day);
  const check = new Date(utc);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return null;
  return utc;
}

/** The instant the day `date` (already validated) begins in `timeZone`. */
export function startOfDay(date: string, timeZone: string): number {
  const utc = parseDate(date)!;
  let guess = utc - offsetAt(timeZone, utc);
  // Across a DST change the offset at the guess may differ from the one at UTC midnight.
  const second = offsetAt(timeZone, guess);
  if (utc - second !== guess) guess = utc - second;
  return guess;
}

export const DAY_MS = 86_400_000;

/** Today's date in `timeZone`, as YYYY-MM-DD. */
export function today(timeZone: string, now = Date.now()): string {
  return new Date(now + offsetAt(timeZone, now)).toISOString().slice(0, 10);
}
