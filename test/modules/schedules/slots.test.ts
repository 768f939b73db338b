/** The pure slot computation: sessions, buffers, places, exceptions, and daylight-saving changes. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  crowdedDate,
  MAX_SESSIONS_PER_DATE,
  MAX_SLOTS_PER_DATE,
  placesTaken,
  slotAt,
  slotsBetween,
  slotsOfDay,
  type ScheduleException,
  type ScheduleRules,
} from '../../../src/modules/schedules/slots.ts';
import { localIso, zonedInstant } from '../../../src/time.ts';

const rules = (overrides: Partial<ScheduleRules> = {}): ScheduleRules => ({
  timezone: 'Asia/Kolkata',
  slot_minutes: 15,
  capacity: 3,
  buffer_minutes: 0,
  sessions: [{ days: ['MON', 'WED'], start: '09:00', end: '10:00' }],
  exceptions: [],
  ...overrides,
});

const local = (slots: Array<{ start: number; end: number }>, zone: string) => slots.map((s) => `${localIso(s.start, zone)}/${localIso(s.end, zone)}`);

describe('schedules: slots', () => {
  it('cuts a session into slots of its length, on its weekdays only, each with the places per slot', () => {
    const monday = slotsOfDay(rules(), '2030-01-07');
    assert.deepEqual(
      monday.map((s) => localIso(s.start, 'Asia/Kolkata')),
      ['2030-01-07T09:00:00+05:30', '2030-01-07T09:15:00+05:30', '2030-01-07T09:30:00+05:30', '2030-01-07T09:45:00+05:30'],
    );
    assert.ok(monday.every((s) => s.capacity === 3 && s.end - s.start === 15 * 60_000 && s.sessionStart === monday[0]!.start));
    assert.deepEqual(slotsOfDay(rules(), '2030-01-08'), [], 'no session on a Tuesday');
    assert.equal(slotsBetween(rules(), '2030-01-06', '2030-01-12').length, 8, 'Monday and Wednesday');
  });

  it('leaves the buffer after each slot, and no slot that would run past the session end', () => {
    const slots = slotsOfDay(rules({ slot_minutes: 20, buffer_minutes: 5 }), '2030-01-07');
    assert.deepEqual(local(slots, 'Asia/Kolkata'), [
      '2030-01-07T09:00:00+05:30/2030-01-07T09:20:00+05:30',
      '2030-01-07T09:25:00+05:30/2030-01-07T09:45:00+05:30',
    ]);
  });

  it('takes out whole days of leave and holidays, a timed leave only its window, and adds extra sessions', () => {
    const schedule = rules({
      exceptions: [
        { type: 'leave', start_date: '2030-01-07', end_date: '2030-01-07' },
        { type: 'holiday', start_date: '2030-01-09', end_date: '2030-01-09', start_time: '09:15', end_time: '09:45' },
        { type: 'extra', start_date: '2030-01-10', end_date: '2030-01-11', start_time: '17:00', end_time: '17:30' },
      ],
    });
    assert.deepEqual(slotsOfDay(schedule, '2030-01-07'), [], 'on leave');
    assert.deepEqual(
      slotsOfDay(schedule, '2030-01-09').map((s) => localIso(s.start, 'Asia/Kolkata').slice(11, 16)),
      ['09:00', '09:45'],
    );
    assert.deepEqual(
      slotsOfDay(schedule, '2030-01-10').map((s) => localIso(s.start, 'Asia/Kolkata').slice(11, 16)),
      ['17:00', '17:15'],
    );
    assert.equal(slotsOfDay(schedule, '2030-01-14').length, 4, 'the week after is as usual');
  });

  it('answers the slots of sessions given in any order by their start', () => {
    const schedule = rules({
      sessions: [
        { days: ['MON'], start: '14:00', end: '14:30' },
        { days: ['MON'], start: '09:10', end: '09:40' },
        { days: ['MON'], start: '11:00', end: '11:15' },
      ],
      exceptions: [{ type: 'extra', start_date: '2030-01-07', end_date: '2030-01-07', start_time: '08:00', end_time: '08:15' }],
    });
    assert.deepEqual(
      slotsOfDay(schedule, '2030-01-07').map((s) => localIso(s.start, 'Asia/Kolkata').slice(11, 16)),
      ['08:00', '09:10', '09:25', '11:00', '14:00', '14:15'],
    );
  });

  it('reads an exception with one of its two times as untimed: a leave takes the whole day, an extra session adds nothing', () => {
    const cases: Array<[ScheduleException, string[]]> = [
      [{ type: 'leave', start_date: '2030-01-07', end_date: '2030-01-07', start_time: '09:15' }, []],
      [{ type: 'holiday', start_date: '2030-01-07', end_date: '2030-01-07', end_time: '09:30' }, []],
      [{ type: 'extra', start_date: '2030-01-07', end_date: '2030-01-07', start_time: '17:00' }, ['09:00', '09:15', '09:30', '09:45']],
      [{ type: 'extra', start_date: '2030-01-07', end_date: '2030-01-07', end_time: '17:30' }, ['09:00', '09:15', '09:30', '09:45']],
    ];
    for (const [exception, starts] of cases) {
      const slots = slotsOfDay(rules({ exceptions: [exception] }), '2030-01-07');
      assert.deepEqual(
        slots.map((s) => localIso(s.start, 'Asia/Kolkata').slice(11, 16)),
        starts,
        JSON.stringify(exception),
      );
    }
  });

  it('keeps wall-clock times across the spring-forward change in America/New_York', () => {
    const zone = 'America/New_York';
    const schedule = rules({ timezone: zone, slot_minutes: 60, sessions: [{ days: ['SAT', 'SUN', 'MON'], start: '09:00', end: '11:00' }] });
    const slots = slotsBetween(schedule, '2025-03-08', '2025-03-10');
    assert.deepEqual(
      slots.map((s) => new Date(s.start).toISOString()),
      [
        '2025-03-08T14:00:00.000Z',
        '2025-03-08T15:00:00.000Z',
        '2025-03-09T13:00:00.000Z',
        '2025-03-09T14:00:00.000Z',
        '2025-03-10T13:00:00.000Z',
        '2025-03-10T14:00:00.000Z',
      ],
      '09:00 EST is 14:00Z; from Sunday 09:00 EDT is 13:00Z',
    );
    assert.deepEqual(
      slots.map((s) => localIso(s.start, zone).slice(11)),
      ['09:00:00-05:00', '10:00:00-05:00', '09:00:00-04:00', '10:00:00-04:00', '09:00:00-04:00', '10:00:00-04:00'],
    );
    // A night session spanning the change is as long as the real time: 01:00 to 04:00 is two hours that night.
    const night = slotsOfDay(rules({ timezone: zone, slot_minutes: 60, sessions: [{ days: ['SUN'], start: '01:00', end: '04:00' }] }), '2025-03-09');
    assert.deepEqual(local(night, zone), [
      '2025-03-09T01:00:00-05:00/2025-03-09T03:00:00-04:00',
      '2025-03-09T03:00:00-04:00/2025-03-09T04:00:00-04:00',
    ]);
  });

  it('keeps wall-clock times across the fall-back change in Europe/London, the repeated hour counted once', () => {
    const zone = 'Europe/London';
    const schedule = rules({ timezone: zone, slot_minutes: 30, sessions: [{ days: ['SAT', 'SUN'], start: '09:00', end: '10:00' }] });
    const slots = slotsBetween(schedule, '2025-10-25', '2025-10-26');
    assert.deepEqual(
      slots.map((s) => new Date(s.start).toISOString()),
      ['2025-10-25T08:00:00.000Z', '2025-10-25T08:30:00.000Z', '2025-10-26T09:00:00.000Z', '2025-10-26T09:30:00.000Z'],
    );
    const night = slotsOfDay(rules({ timezone: zone, slot_minutes: 60, sessions: [{ days: ['SUN'], start: '00:00', end: '03:00' }] }), '2025-10-26');
    assert.equal(night.length, 4, '00:00 BST to 03:00 GMT is four hours');
    assert.equal(zonedInstant('2025-10-26', 60, zone), Date.parse('2025-10-26T00:00:00Z'), '01:00 shown twice: its first showing (BST)');
  });

  it('finds a slot by its exact start and end only', () => {
    const schedule = rules();
    const [first] = slotsOfDay(schedule, '2030-01-07');
    assert.deepEqual(slotAt(schedule, first!.start, first!.end), first);
    assert.equal(slotAt(schedule, first!.start, first!.end + 60_000), null);
    assert.equal(slotAt(schedule, first!.start + 60_000, first!.end + 60_000), null);
    assert.equal(slotAt(schedule, Date.parse('2030-01-08T03:30:00Z'), Date.parse('2030-01-08T03:45:00Z')), null, 'Tuesday: no session');
  });

  it('finds a slot that starts after midnight in a session of the day before (spring-forward gap at its end)', () => {
    // Nuuk skips 23:00 to 00:00 on the night of 2030-03-30: a Saturday session ending at 23:30 runs to 00:30.
    const schedule = rules({ timezone: 'America/Nuuk', slot_minutes: 30, sessions: [{ days: ['SAT'], start: '22:00', end: '23:30' }] });
    const last = slotsOfDay(schedule, '2030-03-30').at(-1)!;
    assert.equal(localIso(last.start, 'America/Nuuk'), '2030-03-31T00:00:00-01:00');
    assert.deepEqual(slotAt(schedule, last.start, last.end), last);
  });

  it('counts the appointments overlapping each slot', () => {
    const slots = slotsOfDay(rules(), '2030-01-07');
    const at = (i: number) => ({ start: slots[i]!.start, end: slots[i]!.end });
    const spanning = { start: slots[1]!.start, end: slots[2]!.end };
    assert.deepEqual(placesTaken(slots, [at(0), at(0), spanning, at(3)]), [2, 1, 1, 1]);
    assert.deepEqual(
      placesTaken(slots, [{ ...at(0), places: 3 }, { ...spanning, places: 2 }, at(3)]),
      [3, 2, 2, 1],
      'grouped rows count their places',
    );
    const early = { start: slots[0]!.start - 3_600_000, end: slots[0]!.start };
    assert.deepEqual(
      placesTaken(slots, [early, { start: early.start, end: slots[3]!.end }]),
      [1, 1, 1, 1],
      'one ending as a slot starts holds none of it',
    );
  });

  const EVERY_DAY = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'] as const;
  const clock = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
  const hourly = Array.from({ length: 24 }, (_, hour) => ({ days: [...EVERY_DAY], start: clock(hour * 60), end: clock(hour * 60 + 60) }));
  const wholeDayExtras = (count: number, from = '2030-01-01', to = '2030-12-31'): ScheduleException[] =>
    Array.from({ length: count }, () => ({ type: 'extra', start_date: from, end_date: to, start_time: '00:00', end_time: '24:00' }));

  it('offers each start of overlapping sessions on one grid once, as one session; other grids keep their own', () => {
    const schedule = rules({
      sessions: [{ days: ['MON'], start: '09:00', end: '10:00' }],
      exceptions: [
        { type: 'extra', start_date: '2030-01-07', end_date: '2030-01-07', start_time: '09:30', end_time: '11:00' },
        { type: 'extra', start_date: '2030-01-07', end_date: '2030-01-07', start_time: '09:00', end_time: '09:45' },
        { type: 'extra', start_date: '2030-01-07', end_date: '2030-01-07', start_time: '10:05', end_time: '10:35' },
      ],
    });
    const slots = slotsOfDay(schedule, '2030-01-07');
    const times = slots.map((s) => localIso(s.start, 'Asia/Kolkata').slice(11, 16));
    assert.deepEqual(times, ['09:00', '09:15', '09:30', '09:45', '10:00', '10:05', '10:15', '10:20', '10:30', '10:45']);
    const sessionOf = (time: string) => localIso(slots[times.indexOf(time)]!.sessionStart, 'Asia/Kolkata').slice(11, 16);
    assert.deepEqual(['09:00', '10:45', '10:05', '10:20'].map(sessionOf), ['09:00', '09:00', '10:05', '10:05'], 'one token sequence a session');
  });

  it("a date's work grows with its slots, not with overlapping sessions and leaves (the 55 KB schedule of issue 38)", () => {
    // Stored before the limits existed: 24 sessions, 250 overlapping whole-day extra sessions, 250 one-minute leaves.
    const leaves: ScheduleException[] = Array.from({ length: 250 }, (_, i) => ({
      type: 'leave',
      start_date: '2030-01-01',
      end_date: '2030-12-31',
      start_time: clock((i * 5) % 1440),
      end_time: clock(((i * 5) % 1440) + 1),
    }));
    const schedule = rules({ slot_minutes: 5, sessions: hourly, exceptions: [...wholeDayExtras(250), ...leaves] });
    const formatToParts = Intl.DateTimeFormat.prototype.formatToParts;
    let lookups = 0;
    Intl.DateTimeFormat.prototype.formatToParts = function (this: Intl.DateTimeFormat, date?: Date | number) {
      lookups++;
      return formatToParts.call(this, date);
    };
    let slots: ReturnType<typeof slotsBetween>;
    try {
      slots = slotsBetween(schedule, '2030-03-01', '2030-03-31');
    } finally {
      Intl.DateTimeFormat.prototype.formatToParts = formatToParts;
    }
    assert.equal(slots.length, 31 * (288 - 250), 'every 5-minute start but the 250 with a leave in them');
    assert.ok(lookups <= 31 * 4, `time-zone look-ups: ${lookups}, at most 4 a date`);
    assert.equal(new Set(slots.map((s) => s.start)).size, slots.length);
  });

  it('finds the first date past MAX_SESSIONS_PER_DATE sessions or MAX_SLOTS_PER_DATE slots, and none within them', () => {
    const limit = MAX_SESSIONS_PER_DATE - hourly.length;
    const five = (exceptions: ScheduleException[]) => rules({ slot_minutes: 5, sessions: hourly, exceptions });
    assert.equal(crowdedDate(five(wholeDayExtras(limit))), null, 'the most sessions allowed, all on one grid: 288 slots');
    assert.deepEqual(crowdedDate(five(wholeDayExtras(limit + 1))), { date: '2030-01-01', sessions: MAX_SESSIONS_PER_DATE + 1, slots: Number.NaN });
    // A session on another grid (a start 1 minute off) offers 288 more starts on a Friday only.
    const offGrid: ScheduleException = { type: 'extra', start_date: '2030-01-09', end_date: '2030-01-13', start_time: '00:01', end_time: '23:56' };
    const crowded = crowdedDate(rules({ slot_minutes: 5, sessions: [{ days: ['FRI'], start: '00:00', end: '24:00' }], exceptions: [offGrid] }));
    assert.deepEqual(crowded, { date: '2030-01-11', sessions: 2, slots: MAX_SLOTS_PER_DATE + 287 });
    assert.equal(
      crowdedDate(rules({ slot_minutes: 5, sessions: [{ days: ['MON'], start: '00:00', end: '24:00' }], exceptions: [offGrid] })),
      null,
      'no Monday among its dates',
    );
  });
});
