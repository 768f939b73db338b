/** Shared set-up for appointment tests: a business with a clinic, a doctor assigned to it, and booking. */
import assert from 'node:assert/strict';
import { createTestClient, type TestApp, type TestClient } from '../../support.ts';
import type { EventName } from '../../../src/events.ts';

export interface Practice {
  client: TestClient;
  clinicId: string;
  doctorId: string;
  /** Partner ids of the clinic and doctor. */
  partnerClinicId: string;
  partnerDoctorId: string;
}

let counter = 0;

export async function request(t: TestApp, token: string, method: string, url: string, payload?: unknown) {
  return t.app.inject({ method: method as 'GET', url, headers: { auth: token }, ...(payload === undefined ? {} : { payload: payload as object }) });
}

/** A business (or another practice within `client`'s business) with one clinic and one doctor. */
export async function createPractice(
  t: TestApp,
  options: { client?: TestClient; clinic?: Record<string, unknown>; doctor?: Record<string, unknown> } = {},
): Promise<Practice> {
  const client = options.client ?? (await createTestClient(t.ctx));
  const n = ++counter;
  const doctor = await request(t, client.token, 'POST', '/cdr/v1/doctor/', {
    firstname: 'Asha',
    lastname: 'Rao',
    partner_id: `pd-${n}`,
    ...options.doctor,
  });
  assert.equal(doctor.statusCode, 201, doctor.body);
  const clinic = await request(t, client.token, 'POST', '/cdr/v1/clinic/', {
    name: 'Sunrise Clinic',
    address: '1 MG Road',
    partner_id: `pc-${n}`,
    doctor_ids: [doctor.json().svcid],
    ...options.clinic,
  });
  assert.equal(clinic.statusCode, 201, clinic.body);
  return { client, clinicId: clinic.json().svcid, doctorId: doctor.json().svcid, partnerClinicId: `pc-${n}`, partnerDoctorId: `pd-${n}` };
}

export const START = 1_900_000_000;

export function bookingBody(practice: Practice, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    clinic_id: practice.clinicId,
    doctor_id: practice.doctorId,
    appointment_details: { start_time: START, end_time: START + 900 },
    patient_details: { first_name: 'Ravi', last_name: 'Kumar', mobile: '+919812345678', gender: 'M', dob: '1990-04-01' },
    ...overrides,
  };
}

/** Books and returns the new appointment's id. */
export async function book(t: TestApp, practice: Practice, overrides: Record<string, unknown> = {}, token = practice.client.token): Promise<string> {
  const response = await request(t, token, 'POST', '/dr/v1/appointment', bookingBody(practice, overrides));
  assert.equal(response.statusCode, 201, response.body);
  return response.json().appointment_id;
}

/** The business's stored events of `type` (review requests unless told), oldest first. */
export async function events(t: TestApp, businessId: string, type: EventName = 'external_review.request') {
  const rows = await t.ctx.storage.db
    .selectFrom('events')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('type', '=', type)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ id: row.id, type: row.type, payload: JSON.parse(row.payload) }));
}
