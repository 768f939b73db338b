/**
 * The schedule rules the body schema cannot state, without a server: what a write of a schedule is
 * refused for, field by field, as the 400 answer lists them. One rule per test, its cases in a table.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkRules, type FieldProblems, type ScheduleInput } from '../../../src/modules/schedules/rules.ts';

const week = (start: string, end: string, days: ScheduleInput['sessions'][number]['days'] = ['MON']) => ({ days, start, end });

function schedule(changes: Partial<ScheduleInput> = {}): ScheduleInput {
  return { timezone: 'Asia/Kolkata', slot_minutes: 15, sessions: [week('09:00', '13:00')], exceptions: [], ...changes };
}

type Exception = NonNullable<ScheduleInput['exceptions']>[number];
const leave = (fields: Partial<Exception> = {}): Exception => ({ type: 'leave', start_date: '2026-12-01', end_date: '2026-12-02', ...fields });

interface Case {
  what: string;
  input: ScheduleInput;
  refused?: FieldProblems;
  problems: FieldProblems;
}

function check(cases: Case[]): void {
  for (const { what, input, refused, problems } of cases) assert.deepEqual({ ...checkRules(input, refused ?? {}) }, problems, what);
}

const CLOCK = 'Enter a time HH:MM from 00:00 to 24:00.';

describe('schedule rules', () => {
  it('accepts a schedule that keeps every rule', () => {
    check([
      { what: 'one session', input: schedule(), problems: {} },
      {
        what: 'sessions side by side, the same hours on other days, one exactly a slot long, to midnight',
        input: schedule({
          sessions: [
            week('09:00', '13:00', ['MON', 'TUE']),
            week('13:00', '17:00', ['MON']),
            week('09:00', '13:00', ['WED']),
            week('23:45', '24:00'),
          ],
        }),
        problems: {},
      },
      {
        what: 'exceptions of a day, a window and an extra session',
        input: schedule({
          exceptions: [
            leave({ end_date: '2026-12-01' }),
            leave({ type: 'holiday', start_time: '09:00', end_time: '10:00' }),
            leave({ type: 'extra', start_time: '18:00', end_time: '20:00' }),
          ],
        }),
        problems: {},
      },
      { what: 'no sessions, no zone', input: { slot_minutes: 15, sessions: [] }, problems: {} },
    ]);
  });

  it('refuses a time zone that does not exist', () => {
    check([
      { what: 'unknown zone', input: schedule({ timezone: 'Asia/Bombay-ish' }), problems: { timezone: ['Unknown time zone: Asia/Bombay-ish'] } },
      {
        what: 'a zone the schema refused is not checked again',
        input: schedule({ timezone: 'Nowhere' }),
        refused: { timezone: ['too long'] },
        problems: { timezone: ['too long'] },
      },
    ]);
  });

  it('refuses a session time that is no time of day', () => {
    check([
      {
        what: 'start past midnight',
        input: schedule({ sessions: [week('24:30', '25:00')] }),
        problems: { 'sessions.0.start': [CLOCK], 'sessions.0.end': [CLOCK] },
      },
      { what: 'end with 60 minutes', input: schedule({ sessions: [week('09:00', '09:60')] }), problems: { 'sessions.0.end': [CLOCK] } },
      {
        what: 'a session the schema refused is not checked again',
        input: schedule({ sessions: [week('09:00', '13:00'), week('99:00', '13:00')] }),
        refused: { 'sessions.1.start': ['bad'] },
        problems: { 'sessions.1.start': ['bad'] },
      },
      {
        what: 'the other sessions and fields are checked when the schema refused one',
        input: schedule({ timezone: 'Nowhere/Else', sessions: [week('13:00', '09:00'), week('99:00', '13:00')] }),
        refused: { 'sessions.1.start': ['bad'] },
        problems: {
          'sessions.1.start': ['bad'],
          timezone: ['Unknown time zone: Nowhere/Else'],
          'sessions.0.end': ['The end must be after the start.'],
        },
      },
      {
        what: 'no session is checked when the schema refused the list',
        input: schedule({ sessions: [week('99:00', '13:00')] }),
        refused: { sessions: ['too many'] },
        problems: { sessions: ['too many'] },
      },
    ]);
  });

  it('refuses a session that ends before it starts or is shorter than one slot', () => {
    check([
      {
        what: 'a real start and no such end',
        input: schedule({ exceptions: [leave({ end_date: '2026-12-32' })] }),
        problems: { 'exceptions.0.end_date': ['Enter a real date, YYYY-MM-DD.'] },
      },
      {
        what: 'no such start and a real end before 1970',
        input: schedule({ exceptions: [leave({ start_date: '2026-02-30', end_date: '1969-12-31' })] }),
        problems: { 'exceptions.0.start_date': ['Enter a real date, YYYY-MM-DD.'] },
      },
      {
        what: 'end before start',
        input: schedule({ sessions: [week('13:00', '09:00')] }),
        problems: { 'sessions.0.end': ['The end must be after the start.'] },
      },
      {
        what: 'end at start',
        input: schedule({ sessions: [week('09:00', '09:00')] }),
        problems: { 'sessions.0.end': ['The end must be after the start.'] },
      },
      {
        what: 'shorter than a slot',
        input: schedule({ sessions: [week('09:00', '09:14')] }),
        problems: { 'sessions.0.end': ['The session is shorter than one slot.'] },
      },
      {
        what: 'the slot length the schema refused is not used',
        input: schedule({ slot_minutes: 1000, sessions: [week('09:00', '09:14')] }),
        refused: { slot_minutes: ['too long'] },
        problems: { slot_minutes: ['too long'] },
      },
    ]);
  });

  it('refuses sessions overlapping on a day, naming the one overlapped', () => {
    check([
      {
        what: 'overlap on the shared day only',
        input: schedule({ sessions: [week('09:00', '13:00', ['MON', 'TUE']), week('12:00', '14:00', ['WED', 'TUE'])] }),
        problems: { 'sessions.1': ['Overlaps sessions.0 on TUE.'] },
      },
      {
        what: 'one inside another, a day listed twice counted once',
        input: schedule({ sessions: [week('09:00', '13:00'), week('17:00', '18:00'), week('10:00', '11:00', ['MON', 'MON'])] }),
        problems: { 'sessions.2': ['Overlaps sessions.0 on MON.'] },
      },
      {
        what: 'sessions side by side, the later one listed first',
        input: schedule({ sessions: [week('13:00', '17:00'), week('09:00', '13:00')] }),
        problems: {},
      },
      {
        what: 'one starting before another and ending after it',
        input: schedule({ sessions: [week('10:00', '11:00'), week('09:00', '12:00')] }),
        problems: { 'sessions.1': ['Overlaps sessions.0 on MON.'] },
      },
    ]);
  });

  it('refuses an exception whose dates are not real or run backwards', () => {
    check([
      {
        what: 'no such day',
        input: schedule({ exceptions: [leave({ start_date: '2026-02-30', end_date: '2026-13-01' })] }),
        problems: { 'exceptions.0.start_date': ['Enter a real date, YYYY-MM-DD.'], 'exceptions.0.end_date': ['Enter a real date, YYYY-MM-DD.'] },
      },
      {
        what: 'a real start and no such end',
        input: schedule({ exceptions: [leave({ end_date: '2026-12-32' })] }),
        problems: { 'exceptions.0.end_date': ['Enter a real date, YYYY-MM-DD.'] },
      },
      {
        what: 'end before start',
        input: schedule({ exceptions: [leave(), leave({ start_date: '2026-12-02', end_date: '2026-12-01' })] }),
        problems: { 'exceptions.1.end_date': ['The end date must not be before the start date.'] },
      },
      {
        what: 'an exception the schema refused is not checked again',
        input: schedule({ exceptions: [leave({ end_date: '2026-11-01' })] }),
        refused: { 'exceptions.0.type': ['bad'] },
        problems: { 'exceptions.0.type': ['bad'] },
      },
      {
        what: 'no exception is checked when the schema refused the list',
        input: schedule({ exceptions: [leave({ end_date: '2026-11-01' })] }),
        refused: { exceptions: ['too many'] },
        problems: { exceptions: ['too many'] },
      },
    ]);
  });

  it('refuses an exception with one of its times, an extra session without times, or times that run backwards', () => {
    check([
      {
        what: 'start time only',
        input: schedule({ exceptions: [leave({ start_time: '09:00' })] }),
        problems: { 'exceptions.0': ['Send both start_time and end_time, or neither.'] },
      },
      {
        what: 'end time only',
        input: schedule({ exceptions: [leave({ end_time: '09:00' })] }),
        problems: { 'exceptions.0': ['Send both start_time and end_time, or neither.'] },
      },
      {
        what: 'extra without times',
        input: schedule({ exceptions: [leave({ type: 'extra' })] }),
        problems: { 'exceptions.0': ['An extra session needs start_time and end_time.'] },
      },
      {
        what: 'times that are no time of day',
        input: schedule({ exceptions: [leave({ start_time: '25:00', end_time: '24:01' })] }),
        problems: { 'exceptions.0.start_time': [CLOCK], 'exceptions.0.end_time': [CLOCK] },
      },
      {
        what: 'a real start time and no such end time',
        input: schedule({ exceptions: [leave({ start_time: '10:00', end_time: '24:01' })] }),
        problems: { 'exceptions.0.end_time': [CLOCK] },
      },
      {
        what: 'no such start time and midnight as the end',
        input: schedule({ exceptions: [leave({ start_time: '25:00', end_time: '00:00' })] }),
        problems: { 'exceptions.0.start_time': [CLOCK] },
      },
      {
        what: 'end time at the start time',
        input: schedule({ exceptions: [leave({ start_time: '10:00', end_time: '10:00' })] }),
        problems: { 'exceptions.0.end_time': ['The end must be after the start.'] },
      },
    ]);
  });

  it('refuses a date with more sessions or slots than a day may hold', () => {
    const clock = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
    // Extra sessions of 5 minutes, 10 minutes apart from 01:00, on Monday 2026-12-07.
    const extras = (count: number) =>
      Array.from({ length: count }, (_, i) =>
        leave({ type: 'extra', start_date: '2026-12-07', end_date: '2026-12-07', start_time: clock(60 + i * 10), end_time: clock(65 + i * 10) }),
      );
    check([
      {
        what: '51 sessions on one Monday',
        input: schedule({ slot_minutes: 5, sessions: [week('00:00', '00:30')], exceptions: extras(50) }),
        problems: { exceptions: ['On 2026-12-07 the schedule would have 51 sessions and extra sessions: at most 50 on one date.'] },
      },
      {
        what: '50 sessions on one Monday',
        input: schedule({ slot_minutes: 5, sessions: [week('00:00', '00:30')], exceptions: extras(49) }),
        problems: {},
      },
      {
        what: 'a whole day of 5-minute slots and an extra session',
        input: schedule({
          slot_minutes: 5,
          sessions: [week('00:00', '24:00')],
          exceptions: [leave({ type: 'extra', start_date: '2026-12-07', end_date: '2026-12-07', start_time: '00:02', end_time: '00:07' })],
        }),
        problems: { exceptions: ['On 2026-12-07 the schedule would offer 289 slots: at most 288 on one date (5-minute slots from 00:00 to 24:00).'] },
      },
      {
        what: 'only counted once the rest is valid',
        input: schedule({
          timezone: 'Nowhere/Else',
          slot_minutes: 5,
          sessions: [week('00:00', '24:00')],
          exceptions: [leave({ type: 'extra', start_date: '2026-12-07', end_date: '2026-12-07', start_time: '00:02', end_time: '00:07' })],
        }),
        problems: { timezone: ['Unknown time zone: Nowhere/Else'] },
      },
    ]);
  });
  it('skips the items the schema refused, 20,000 of a kind, and reports them as refused (a scan of every problem per item once took seconds for a few thousand)', () => {
    const count = 20_000;
    const refused: FieldProblems = { exceptions: ['must NOT have more than 500 items'], sessions: ['must NOT have more than 50 items'] };
    for (let i = 0; i < count; i++) {
      refused[`exceptions.${i}.type`] = ['This field is required.'];
      refused[`sessions.${i}.days`] = ['This field is required.'];
    }
    const input = schedule({
      sessions: Array.from({ length: count }, () => week('10:00', '09:00')),
      exceptions: Array.from({ length: count }, () => leave({ end_date: '2026-11-01' })),
    });
    const problems = checkRules(input, refused);
    assert.deepEqual({ ...problems }, refused, 'the refused items are reported as refused, not checked again');
    // A refused item's sibling that the schema took is still checked.
    assert.deepEqual(
      {
        ...checkRules(schedule({ exceptions: [leave({ end_date: '2026-11-01' }), leave({ end_date: '2026-11-01' })] }), {
          'exceptions.0.type': ['x'],
        }),
      },
      { 'exceptions.0.type': ['x'], 'exceptions.1.end_date': ['The end date must not be before the start date.'] },
    );
  });
});
