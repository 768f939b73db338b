/**
 * The slots answer's bytes (slotsJsonBytes in src/modules/appointments/scheduling.ts) are exactly what
 * JSON.stringify writes for the same answer, in UTF-8, whichever slots the clinic's shape shares with the doctor's.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type EkaSlot, type EkaSlots, slotsJsonBytes } from '../../../src/modules/appointments/scheduling.ts';

const slot = (start: number, booked: number): EkaSlot => ({
  available: booked < 2,
  conf_id: 'sch-1',
  s: new Date(start * 1000).toISOString(),
  e: new Date((start + 900) * 1000).toISOString(),
  slots_booked: booked,
  start_time: start,
  end_time: start + 900,
  capacity: 2,
  places_left: Math.max(0, 2 - booked),
});

function answer(days: Record<string, EkaSlot[]>, clinicSlots: EkaSlot[], serviceName = 'Consultation'): EkaSlots {
  return {
    success: 'true',
    status_code: 200,
    data: {
      schedule: {
        'doctor-1': days,
        'clinic "main" ✓': [{ service_type: 'consultation', service_name: serviceName, conf_id: 'sch-1', fee: 350.5, slots: clinicSlots }],
      },
      services: {
        'sch-1': {
          allow_patient_booking: true,
          appointment_type: 'REGULAR',
          c_at: '2031-01-01T00:00:00.000Z',
          conf_id: 'sch-1',
          mode: ['in-clinic'],
          owner_id: 'doctor-1',
          post_pay: false,
          pre_pay: false,
          price: 350.5,
          service_name: serviceName,
          timezone: 'Asia/Kolkata',
          slot_minutes: 15,
          capacity: 2,
        },
      },
    },
  };
}

const asStringified = (value: EkaSlots) => Buffer.from(JSON.stringify(value));

describe('the slots answer as bytes', () => {
  const monday = [slot(1_930_000_000, 0), slot(1_930_000_900, 2)];
  const wednesday = [slot(1_930_172_800, 1)];
  const days = { '2031-03-03': monday, '2031-03-04': [], '2031-03-05': wednesday };

  it('are what JSON.stringify writes when the clinic lists every day’s slots again', () => {
    const value = answer(days, Object.values(days).flat());
    assert.deepEqual(slotsJsonBytes(value), asStringified(value));
  });

  it('are what JSON.stringify writes when the clinic lists other slots, or some of the same', () => {
    for (const clinicSlots of [
      [],
      [slot(1_930_000_000, 0)],
      [monday[0]!],
      [...monday.slice(1), ...wednesday],
      [...wednesday, ...monday],
      [...monday, slot(1, 1), ...wednesday],
    ]) {
      const value = answer(days, clinicSlots);
      assert.deepEqual(slotsJsonBytes(value), asStringified(value), JSON.stringify(clinicSlots));
    }
  });

  it('write names in any script as UTF-8', () => {
    const value = answer(days, Object.values(days).flat(), 'परामर्श · Zoë ☕ 😀');
    const bytes = slotsJsonBytes(value);
    assert.deepEqual(bytes, asStringified(value));
    assert.equal(JSON.parse(bytes.toString('utf8')).data.services['sch-1'].service_name, 'परामर्श · Zoë ☕ 😀');
  });

  it('are what JSON.stringify writes for a pair without a schedule', () => {
    const empty: EkaSlots = { success: 'true', status_code: 200, data: { schedule: {}, services: {} } };
    assert.deepEqual(slotsJsonBytes(empty), asStringified(empty));
  });
});
