/**
 * Slots from a schedule, pure: weekly sessions and extra sessions cut into slots of `slot_minutes` with
 * `buffer_minutes` between them, less leaves and holidays, in the schedule's time zone. A session runs
 * from the instant its wall-clock start is shown to the instant its end is, so a session that spans a
 * daylight-saving change is as long as the real time between them, and the sessions of the days around
 * a change start at their wall-clock times.
 */
import { addDays, daysBetween, localDate, MINUTE_MS, parseClock, weekday, zonedInstant, type Weekday } from '../../time.ts';

export interface Session {
  days: Weekday[];
  /** HH:MM, wall clock. */
  start: string;
  end: string;
}

export type ExceptionType = 'leave' | 'holiday' | 'extra';

export interface ScheduleException {
  type: ExceptionType;
  /** YYYY-MM-DD, inclusive. */
  start_date: string;
  end_date: string;
  /** HH:MM; a leave or holiday without them takes whole days; an extra session needs them. */
  start_time?: string;
  end_time?: string;
  note?: string;
}

export interface ScheduleRules {
  timezone: string;
  slot_minutes: number;
  /** Patients per slot. */
  capacity: number;
  buffer_minutes: number;
  sessions: Session[];
  exceptions: ScheduleException[];
}

export interface Slot {
  /** The local date the slot is on. */
  date: string;
  /** Epoch milliseconds. */
  start: number;
  end: number;
  /** The first instant of the session the slot belongs to: OPD tokens are numbered per session. */
  sessionStart: number;
  /** The session's last instant (exclusive). */
  sessionEnd: number;
  capacity: number;
}

const covers = (exception: ScheduleException, date: string) => exception.start_date <= date && date <= exception.end_date;

/** The slots of one local date (validated), by start. */
export function slotsOfDay(rules: ScheduleRules, date: string): Slot[] {
  const day = weekday(date);
  const windows: Array<[number, number]> = [];
  for (const session of rules.sessions) {
    if (session.days.includes(day)) windows.push([parseClock(session.start)!, parseClock(session.end)!]);
  }
  const blocked: Array<[number, number]> = [];
  for (const exception of rules.exceptions) {
    if (!covers(exception, date)) continue;
    const timed = exception.start_time !== undefined && exception.end_time !== undefined;
    const window: [number, number] = timed ? [parseClock(exception.start_time!)!, parseClock(exception.end_time!)!] : [0, 24 * 60];
    if (exception.type === 'extra') {
      if (timed) windows.push(window);
    } else {
      blocked.push(window);
    }
  }
  if (windows.length === 0) return [];
  const instant = (minutes: number) => zonedInstant(date, minutes, rules.timezone);
  const blockedInstants = blocked.map(([from, to]) => [instant(from), instant(to)] as const);
  const slotMs = rules.slot_minutes * MINUTE_MS;
  const stepMs = slotMs + rules.buffer_minutes * MINUTE_MS;
  const slots = new Map<number, Slot>();
  for (const [from, to] of windows.sort((a, b) => a[0] - b[0])) {
    const sessionStart = instant(from);
    const sessionEnd = instant(to);
    for (let start = sessionStart; start + slotMs <= sessionEnd; start += stepMs) {
      // Overlapping windows offer a start once; the blocked scan runs once per start.
      if (slots.has(start)) continue;
      const end = start + slotMs;
      if (blockedInstants.some(([bFrom, bTo]) => start < bTo && end > bFrom)) continue;
      slots.set(start, { date, start, end, sessionStart, sessionEnd, capacity: rules.capacity });
    }
  }
  return [...slots.values()].sort((a, b) => a.start - b.start);
}

/** The slots of the local dates `from` to `to` (validated, inclusive), by start. */
export function slotsBetween(rules: ScheduleRules, from: string, to: string): Slot[] {
  const slots: Slot[] = [];
  for (let day = 0, last = daysBetween(from, to); day <= last; day++) slots.push(...slotsOfDay(rules, addDays(from, day)));
  return slots;
}

/** The slot that starts at `start` and ends at `end` exactly, or null: the time is not one the schedule offers. */
export function slotAt(rules: ScheduleRules, start: number, end: number): Slot | null {
  const date = localDate(start, rules.timezone);
  // A slot may start after midnight and belong to the day before: a session whose end falls in a
  // daylight-saving gap runs on to the first instant shown after it, on the next date.
  for (const day of [date, addDays(date, -1)]) {
    const slot = slotsOfDay(rules, day).find((candidate) => candidate.start === start && candidate.end === end);
    if (slot) return slot;
  }
  return null;
}

/** How many of `held` (appointments holding a place) overlap each slot. */
export function placesTaken(slots: readonly Slot[], held: ReadonlyArray<{ start: number; end: number }>): number[] {
  const sorted = [...held].sort((a, b) => a.start - b.start);
  return slots.map((slot) => {
    let count = 0;
    for (const appointment of sorted) {
      if (appointment.start >= slot.end) break;
      if (appointment.end > slot.start) count++;
    }
    return count;
  });
}
