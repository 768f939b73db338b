/** The pure slot computation: sessions, buffers, places, exceptions, and daylight-saving changes. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { placesTaken, slotAt, slotsBetween, slotsOfDay, type ScheduleRules } from '../../../src/modules/schedules/slots.ts';
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
  });
});
