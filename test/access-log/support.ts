/** Shared set-up for access log tests: a practice with a patient, an appointment and a case, and the log's rows. */
import assert from 'node:assert/strict';
import type { Selectable } from 'kysely';
import type { AuditEntry } from '../../src/access-log/entry.ts';
import { newId } from '../../src/db/ids.ts';
import type { AccessLogTable } from '../../src/db/schema.ts';
import { ChainSeal } from '../../src/access-log/seal.ts';
import type { ChainCheck } from '../../src/access-log/verify.ts';
import { createTestClient, type TestApp, type TestClient } from '../support.ts';

/** What `cps audit verify` checks the chains' ends with, for the test app's keys and settings. */
export function chainCheck(t: TestApp): ChainCheck {
  return { seal: new ChainSeal(t.ctx.keys.masterKey), accessLogDays: t.ctx.config.retention.accessLogDays };
}

/** A read of an appointment by `businessId` at `at`, written straight into a chain by the retention and tampering tests. */
export const entry = (businessId: string, at: number): AuditEntry => ({
  id: newId('acc'),
  business_id: businessId,
  at,
  client_id: 'cl_1',
  operation: 'getAppointment',
  action: 'read',
  resource_type: 'appointment',
  resource_id: 'apt_1',
  patient_ref: 'pt_1',
  status: 200,
  request_id: newId('req'),
  source_address: '127.0.0.1',
  filter: null,
  result_count: null,
  with_change: 0,
});

/** The test app's master key, for `cps` run as a process. */
export function masterKeyEnv(t: TestApp): Record<string, string> {
  return { CPS_MASTER_KEY: t.ctx.keys.masterKey.toString('base64') };
}

export interface Seeded {
  client: TestClient;
  clinicId: string;
  doctorId: string;
  patientId: string;
  partnerPatientId: string;
  appointmentId: string;
}

let counter = 0;

export async function call(t: TestApp, token: string, method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({
    method: method as 'GET',
    url,
    headers: { authorization: `Bearer ${token}`, ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

/** A business with a clinic, a doctor and one booked appointment (which makes its patient). */
export async function seed(t: TestApp, client?: TestClient): Promise<Seeded> {
  const owner = client ?? (await createTestClient(t.ctx));
  const n = ++counter;
  const doctor = await call(t, owner.token, 'POST', '/cdr/v1/doctor/', { firstname: 'Asha', lastname: 'Rao', partner_id: `pd-${n}` });
  assert.equal(doctor.statusCode, 201, doctor.body);
  const clinic = await call(t, owner.token, 'POST', '/cdr/v1/clinic/', { name: 'Sunrise', address: '1 MG Road', doctor_ids: [doctor.json().svcid] });
  assert.equal(clinic.statusCode, 201, clinic.body);
  const partnerPatientId = `pp-${n}`;
  const booked = await call(t, owner.token, 'POST', '/dr/v1/appointment', {
    clinic_id: clinic.json().svcid,
    doctor_id: doctor.json().svcid,
    appointment_details: { start_time: 1_900_000_000 + n * 900, end_time: 1_900_000_000 + n * 900 + 900 },
    patient_details: {
      first_name: 'Ravi',
      last_name: 'Kumar',
      mobile: '+919812345678',
      gender: 'M',
      dob: '1990-04-01',
      partner_patient_id: partnerPatientId,
    },
  });
  assert.equal(booked.statusCode, 201, booked.body);
  const appointmentId = booked.json().appointment_id;
  const read = await call(t, owner.token, 'GET', `/dr/v1/appointment/${appointmentId}`);
  return {
    client: owner,
    clinicId: clinic.json().svcid,
    doctorId: doctor.json().svcid,
    patientId: read.json().patient_id,
    partnerPatientId,
    appointmentId,
  };
}

export type Row = Selectable<AccessLogTable>;

/** The log's rows of a business (flushed and chained first), in chain order. */
export async function rows(t: TestApp, businessId: string): Promise<Row[]> {
  await t.ctx.audit.flush();
  const found = await t.ctx.storage.db.selectFrom('access_log').selectAll().where('business_id', '=', businessId).orderBy('seq').execute();
  return found.map((row) => ({ ...row, seq: row.seq === null ? null : Number(row.seq), at: Number(row.at) }) as Row);
}

/** The entry a request made, by its request id. */
export async function entryOf(t: TestApp, requestId: string): Promise<Row | undefined> {
  await t.ctx.audit.flush();
  const row = await t.ctx.storage.db.selectFrom('access_log').selectAll().where('request_id', '=', requestId).executeTakeFirst();
  return row && ({ ...row, seq: row.seq === null ? null : Number(row.seq), at: Number(row.at) } as Row);
}
