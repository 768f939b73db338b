/** Shared set-up for schedule tests: a practice with a weekly schedule, its slots and bookings into them. */
import assert from 'node:assert/strict';
import type { TestApp } from '../../support.ts';
import { bookingBody, request, type Practice } from '../appointments/support.ts';

/** Mondays to Saturdays 09:00 to 12:00 in Asia/Kolkata, 15-minute slots of 3 places. */
export const WEEKLY = {
  timezone: 'Asia/Kolkata',
  slot_minutes: 15,
  capacity: 3,
  sessions: [{ days: ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'], start: '09:00', end: '12:00' }],
};

/** A Monday far enough ahead that its slots have not begun: 2030-01-07, 09:00 IST is 03:30Z. */
export const MONDAY = '2030-01-07';
export const MONDAY_0900 = Date.parse('2030-01-07T03:30:00Z') / 1000;

export function schedulePath(practice: Practice, partner = false): string {
  return partner
    ? `/cdr/v1/doctor/${practice.partnerDoctorId}/clinic/${practice.partnerClinicId}/schedule?partner_id=1`
    : `/cdr/v1/doctor/${practice.doctorId}/clinic/${practice.clinicId}/schedule`;
}

export function slotPath(practice: Practice, from = MONDAY, to = MONDAY): string {
  return `/dr/v1/doctor/${practice.doctorId}/clinic/${practice.clinicId}/appointment/slot?start_date=${from}&end_date=${to}`;
}

export async function setSchedule(t: TestApp, practice: Practice, body: Record<string, unknown> = WEEKLY): Promise<Record<string, unknown>> {
  const response = await request(t, practice.client.token, 'PUT', schedulePath(practice), body);
  assert.equal(response.statusCode, 200, response.body);
  return response.json().schedule;
}

/** Books the slot starting at `start` (epoch seconds, 15 minutes); answers the response. */
export function bookAt(t: TestApp, practice: Practice, start: number, overrides: Record<string, unknown> = {}, minutes = 15) {
  return request(
    t,
    practice.client.token,
    'POST',
    '/dr/v1/appointment',
    bookingBody(practice, { appointment_details: { start_time: start, end_time: start + minutes * 60 }, ...overrides }),
  );
}
