/**
 * The rules of a schedule the body schema cannot state (schemas.ts), checked before a schedule is stored:
 * every problem of a write at once, by field, as the clinics family answers them.
 */
import type { Static } from 'typebox';
import { isTimeZone, parseClock, parseDate } from '../../time.ts';
import type { ScheduleBody } from './schemas.ts';
import { crowdedDate, MAX_SESSIONS_PER_DATE, MAX_SLOTS_PER_DATE } from './slots.ts';

/** A schedule as the client sends it: the route's body schema's type. */
export type ScheduleInput = Static<typeof ScheduleBody>;

/** Messages by field (`sessions.0.end`), or by `message` for the whole body. */
export type FieldProblems = Record<string, string[]>;

const CLOCK = 'Enter a time HH:MM from 00:00 to 24:00.';

/**
 * The rules the schema cannot state, added to what it refused (fields it refused are not checked
 * again): real zones, dates and times, sessions at least one slot long and not overlapping on a day,
 * exceptions whose ends follow their starts, and no date past MAX_SESSIONS_PER_DATE sessions or
 * MAX_SLOTS_PER_DATE slots (what serving a day's slots costs is bounded by them).
 */
export function checkRules(input: ScheduleInput, refused: FieldProblems): FieldProblems {
  const problems: FieldProblems = Object.create(null);
  // Every field with a problem and every field holding one (`sessions.0.end`: also `sessions.0`, `sessions`),
  // so that skipping a field costs one look-up: scanning the problems for each item of a list made a body of
  // a few thousand refused items cost seconds (quadratic).
  const flagged = new Set<string>();
  const flag = (field: string) => {
    for (let end = field.indexOf('.'); end !== -1; end = field.indexOf('.', end + 1)) flagged.add(field.slice(0, end));
    flagged.add(field);
  };
  for (const [field, messages] of Object.entries(refused)) {
    problems[field] = [...messages];
    flag(field);
  }
  const add = (field: string, message: string) => {
    (problems[field] ??= []).push(message);
    flag(field);
  };
  const skip = (field: string) => flagged.has(field);
  if (typeof input.timezone === 'string' && !skip('timezone') && !isTimeZone(input.timezone)) add('timezone', `Unknown time zone: ${input.timezone}`);
  const slotMinutes = typeof input.slot_minutes === 'number' && !skip('slot_minutes') ? input.slot_minutes : null;
  const byDay = new Map<string, Array<{ index: number; from: number; to: number }>>();
  const sessions = Array.isArray(input.sessions) ? input.sessions : [];
  for (const [index, value] of sessions.entries()) {
    const field = `sessions.${index}`;
    if (skip(field) || 'sessions' in refused) continue;
    const from = parseClock(value.start);
    const to = parseClock(value.end);
    if (from === null) add(`${field}.start`, CLOCK);
    if (to === null) add(`${field}.end`, CLOCK);
    if (from === null || to === null) continue;
    if (to <= from) {
      add(`${field}.end`, 'The end must be after the start.');
      continue;
    }
    if (slotMinutes !== null && to - from < slotMinutes) {
      add(`${field}.end`, 'The session is shorter than one slot.');
      continue;
    }
    for (const day of new Set(value.days)) {
      const taken = byDay.get(day) ?? [];
      const clash = taken.find((other) => from < other.to && to > other.from);
      if (clash) add(field, `Overlaps sessions.${clash.index} on ${day}.`);
      taken.push({ index, from, to });
      byDay.set(day, taken);
    }
  }
  for (const [index, value] of (Array.isArray(input.exceptions) ? input.exceptions : []).entries()) {
    const field = `exceptions.${index}`;
    if (skip(field) || 'exceptions' in refused) continue;
    const startDate = parseDate(value.start_date);
    const endDate = parseDate(value.end_date);
    if (startDate === null) add(`${field}.start_date`, 'Enter a real date, YYYY-MM-DD.');
    if (endDate === null) add(`${field}.end_date`, 'Enter a real date, YYYY-MM-DD.');
    if (startDate !== null && endDate !== null && endDate < startDate) add(`${field}.end_date`, 'The end date must not be before the start date.');
    const timed = [value.start_time, value.end_time].filter((time) => time !== undefined).length;
    if (timed === 1) {
      add(field, 'Send both start_time and end_time, or neither.');
      continue;
    }
    if (timed === 0) {
      if (value.type === 'extra') add(field, 'An extra session needs start_time and end_time.');
      continue;
    }
    const from = parseClock(value.start_time!);
    const to = parseClock(value.end_time!);
    if (from === null) add(`${field}.start_time`, CLOCK);
    if (to === null) add(`${field}.end_time`, CLOCK);
    if (from !== null && to !== null && to <= from) add(`${field}.end_time`, 'The end must be after the start.');
  }
  if (Object.keys(problems).length === 0) {
    const crowded = crowdedDate({
      timezone: 'UTC',
      slot_minutes: input.slot_minutes,
      capacity: 1,
      buffer_minutes: input.buffer_minutes ?? 0,
      sessions,
      exceptions: input.exceptions ?? [],
    });
    if (crowded && crowded.sessions > MAX_SESSIONS_PER_DATE) {
      add(
        'exceptions',
        `On ${crowded.date} the schedule would have ${crowded.sessions} sessions and extra sessions: at most ${MAX_SESSIONS_PER_DATE} on one date.`,
      );
    } else if (crowded) {
      add(
        'exceptions',
        `On ${crowded.date} the schedule would offer ${crowded.slots} slots: at most ${MAX_SLOTS_PER_DATE} on one date (5-minute slots from 00:00 to 24:00).`,
      );
    }
  }
  return problems;
}
