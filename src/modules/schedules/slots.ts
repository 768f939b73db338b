/**
 * Slots from a schedule, pure: weekly sessions and extra sessions cut into slots of `slot_minutes` with
 * `buffer_minutes` between them, less leaves and holidays, in the schedule's time zone. A session runs
 * from the instant its wall-clock start is shown to the instant its end is, so a session that spans a
 * daylight-saving change is as long as the real time between them, and the sessions of the days around
 * a change start at their wall-clock times.
 */
import {
  addDays,
  DAY_MS,
  dayClock,
  daysBetween,
  localDate,
  MINUTE_MS,
  parseClock,
  parseDate,
  weekday,
  type DayClock,
  type Weekday,
} from '../../time.ts';

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

/** Minutes after a date's midnight, wall clock: [from, to). */
type Window = readonly [from: number, to: number];

/** At most this many weekly and extra sessions on one date: what checking a schedule's dates costs is bounded by it. */
export const MAX_SESSIONS_PER_DATE = 50;
/** At most this many slot starts on one date, counted on the wall clock: 5-minute slots from 00:00 to 24:00. */
export const MAX_SLOTS_PER_DATE = 288;

interface DatedWindow {
  /** UTC midnights of the first and last dates, inclusive. */
  first: number;
  last: number;
  window: Window;
}

/** A schedule's rules parsed once: the weekly windows of each weekday, and the dated ones. */
interface Plan {
  slotMs: number;
  stepMs: number;
  step: number;
  weekly: ReadonlyMap<Weekday, Window[]>;
  extras: DatedWindow[];
  blocks: DatedWindow[];
}

const plans = new WeakMap<ScheduleRules, Plan>();

function planOf(rules: ScheduleRules): Plan {
  let plan = plans.get(rules);
  if (plan) return plan;
  const weekly = new Map<Weekday, Window[]>();
  for (const session of rules.sessions) {
    for (const day of session.days) {
      const windows = weekly.get(day) ?? [];
      windows.push([parseClock(session.start)!, parseClock(session.end)!]);
      weekly.set(day, windows);
    }
  }
  const extras: DatedWindow[] = [];
  const blocks: DatedWindow[] = [];
  for (const exception of rules.exceptions) {
    const timed = exception.start_time !== undefined && exception.end_time !== undefined;
    const window: Window = timed ? [parseClock(exception.start_time!)!, parseClock(exception.end_time!)!] : [0, 24 * 60];
    const dated = { first: parseDate(exception.start_date)!, last: parseDate(exception.end_date)!, window };
    if (exception.type !== 'extra') blocks.push(dated);
    else if (timed) extras.push(dated);
  }
  const step = rules.slot_minutes + rules.buffer_minutes;
  plan = { slotMs: rules.slot_minutes * MINUTE_MS, stepMs: step * MINUTE_MS, step, weekly, extras, blocks };
  plans.set(rules, plan);
  return plan;
}

const covering = (dated: readonly DatedWindow[], day: number) =>
  dated.filter(({ first, last }) => first <= day && day <= last).map(({ window }) => window);

/**
 * The sessions of a date, each offering the starts of its grid (its start plus whole steps): sessions
 * whose grids line up (starts a whole number of steps apart) and that overlap are one session, since
 * they offer the same starts where they overlap; so each start is offered once, by one session, and the
 * work of a date is bounded by its slots, not by how many sessions overlap. By start.
 */
export function mergeSessions(windows: readonly Window[], step: number): Window[] {
  const sorted = [...windows].sort((a, b) => (a[0] % step) - (b[0] % step) || a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const [from, to] of sorted) {
    const last = merged.at(-1);
    if (last && last[0] % step === from % step && from < last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged.sort((a, b) => a[0] - b[0]);
}

/** The blocked windows of a date merged into disjoint ones, by start. */
function mergeBlocked(windows: readonly Window[]): Window[] {
  const sorted = [...windows].sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const [from, to] of sorted) {
    const last = merged.at(-1);
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}

/** How many slots merged sessions offer, counted on the wall clock (a daylight-saving change aside). */
function startsOf(sessions: readonly Window[], rules: ScheduleRules): number {
  const step = rules.slot_minutes + rules.buffer_minutes;
  let count = 0;
  for (const [from, to] of sessions) if (to - from >= rules.slot_minutes) count += Math.floor((to - from - rules.slot_minutes) / step) + 1;
  return count;
}

/** The slots of one local date (validated), by start; `clock` is the date's (`dayClock`), when the caller has it. */
export function slotsOfDay(rules: ScheduleRules, date: string, clock: DayClock = dayClock(date, rules.timezone)): Slot[] {
  const plan = planOf(rules);
  const day = parseDate(date)!;
  const windows = [...(plan.weekly.get(weekday(date)) ?? []), ...covering(plan.extras, day)];
  if (windows.length === 0) return [];
  const blocked = mergeBlocked(covering(plan.blocks, day)).map(([from, to]) => [clock.instant(from), clock.instant(to)] as const);
  /** Whether [start, end) overlaps a blocked window: the first one ending after `start` decides. */
  const isBlocked = (start: number, end: number) => {
    let low = 0;
    let high = blocked.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (blocked[middle]![1] <= start) low = middle + 1;
      else high = middle;
    }
    return low < blocked.length && blocked[low]![0] < end;
  };
  const slots: Slot[] = [];
  // Distinct grids offer distinct wall-clock starts; a daylight-saving change can still map two to one instant.
  const offered = new Set<number>();
  for (const [from, to] of mergeSessions(windows, plan.step)) {
    const sessionStart = clock.instant(from);
    const sessionEnd = clock.instant(to);
    for (let start = sessionStart; start + plan.slotMs <= sessionEnd; start += plan.stepMs) {
      const end = start + plan.slotMs;
      if (offered.has(start) || isBlocked(start, end)) continue;
      offered.add(start);
      slots.push({ date, start, end, sessionStart, sessionEnd, capacity: rules.capacity });
    }
  }
  return slots.sort((a, b) => a.start - b.start);
}

/**
 * The first date on which the schedule has more than MAX_SESSIONS_PER_DATE sessions or offers more than
 * MAX_SLOTS_PER_DATE slots, with what it has there; null when there is none. Only extra sessions can
 * make a date crowded (weekly sessions do not overlap), and the extra sessions that apply change only
 * where one begins or ends: each such stretch is checked on each of its weekdays.
 */
export function crowdedDate(rules: ScheduleRules): { date: string; sessions: number; slots: number } | null {
  const plan = planOf(rules);
  if (plan.extras.length === 0) return null;
  const bounds = [...new Set(plan.extras.flatMap(({ first, last }) => [first, last + DAY_MS]))].sort((a, b) => a - b);
  for (let index = 0; index < bounds.length - 1; index++) {
    const from = bounds[index]!;
    const active = covering(plan.extras, from);
    if (active.length === 0) continue;
    const days = Math.min(7, (bounds[index + 1]! - from) / DAY_MS);
    for (let offset = 0; offset < days; offset++) {
      const date = new Date(from + offset * DAY_MS).toISOString().slice(0, 10);
      const windows = [...(plan.weekly.get(weekday(date)) ?? []), ...active];
      if (windows.length > MAX_SESSIONS_PER_DATE) return { date, sessions: windows.length, slots: Number.NaN };
      const slots = startsOf(mergeSessions(windows, plan.step), rules);
      if (slots > MAX_SLOTS_PER_DATE) return { date, sessions: windows.length, slots };
    }
  }
  return null;
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

/**
 * How many places `held` (appointments holding places, `places` each, 1 when not given) take in each
 * slot: those that start before the slot ends, less those that end by its start (they started before
 * it too). Two binary searches a slot, so the cost grows with the slots and the distinct times held,
 * never with their product.
 */
export function placesTaken(slots: readonly Slot[], held: ReadonlyArray<{ start: number; end: number; places?: number }>): number[] {
  const cumulative = (key: 'start' | 'end') => {
    const sorted = [...held].sort((a, b) => a[key] - b[key]);
    const times = sorted.map((appointment) => appointment[key]);
    const totals = [0];
    for (const appointment of sorted) totals.push(totals.at(-1)! + (appointment.places ?? 1));
    /** Places of those whose time is before `at` (or at it, when `inclusive`). */
    return (at: number, inclusive: boolean) => {
      let low = 0;
      let high = times.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (times[middle]! < at || (inclusive && times[middle] === at)) low = middle + 1;
        else high = middle;
      }
      return totals[low]!;
    };
  };
  const startedBefore = cumulative('start');
  const endedBy = cumulative('end');
  return slots.map((slot) => startedBefore(slot.end, false) - endedBy(slot.start, true));
}
