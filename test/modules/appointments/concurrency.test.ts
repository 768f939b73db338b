import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, DIALECT, type TestApp } from '../../support.ts';
import { book, bookingBody, createPractice, events, request, START, type Practice } from './support.ts';
import { PatientService } from '../../../src/modules/patients/service.ts';

/**
 * Requests on one appointment run in parallel (on PostgreSQL truly concurrently, over a pool of
 * connections): no write may be lost and no rule skipped.
 */
describe(`appointments: concurrency (${DIALECT})`, () => {
  let t: TestApp;
  let p: Practice;
  before(async () => {
    t = await createTestApp();
    p = await createPractice(t);
  });
  after(async () => t.close());

  const call = (method: string, url: string, payload?: unknown) => request(t, p.client.token, method, url, payload);

  it('parallel PATCHes of different patient fields and completes: every write kept, one review event', async () => {
    for (let round = 0; round < 3; round++) {
      const id = await book(t, p, { patient_details: { first_name: 'Start' } });
      const fields: Array<[string, unknown]> = [
        ['designation', 'Dr'],
        ['first_name', 'Kiran'],
        ['middle_name', 'S'],
        ['last_name', 'Patil'],
        ['gender', 'F'],
        ['address', { city: 'Nagpur' }],
        ['mobile', '+919900000000'],
        ['age', 41],
      ];
      const patches = fields.map(([field, value]) => call('PATCH', `/dr/v1/appointment/${id}`, { patient_details: { [field]: value } }));
      const tokenPatches = Array.from({ length: 4 }, (_, i) =>
        call('PATCH', `/dr/v1/appointment/${id}`, { token: i + 1, start_time: START + 60 * (i + 1), end_time: START + 60 * (i + 1) + 900 }),
      );
      const completes = Array.from({ length: 4 }, () => call('POST', `/dr/v1/appointment/${id}/complete`));
      const [patchResults, tokenResults, completeResults] = await Promise.all([
        Promise.all(patches),
        Promise.all(tokenPatches),
        Promise.all(completes),
      ]);

      for (const response of [...patchResults, ...completeResults]) assert.equal(response.statusCode, 200, response.body);
      const final = (await call('GET', `/dr/v1/appointment/${id}`)).json();
      assert.equal(final.status, 'CM');
      assert.deepEqual(
        final.patient_details,
        {
          first_name: 'Kiran',
          designation: 'Dr',
          middle_name: 'S',
          last_name: 'Patil',
          gender: 'F',
          address: { city: 'Nagpur' },
          mobile: '+919900000000',
          age: 41,
        },
        'no patient field written in parallel was lost',
      );

      // A reschedule either ran before the first completion (200, status BK) or was refused after it.
      const applied = tokenResults.filter((r) => r.statusCode === 200);
      for (const response of tokenResults) {
        if (response.statusCode === 200) assert.equal(response.json().status, 'BK');
        else assert.match(response.json().error.message, /completed appointment cannot be rescheduled/);
      }
      if (applied.length > 0) {
        assert.ok(
          applied.some((r) => r.json().token === final.token && r.json().start_time === final.start_time),
          'the last reschedule is the one kept',
        );
      } else {
        assert.equal(final.start_time, START);
      }
      const recorded = (await events(t, p.client.businessId)).filter((e) => e.payload.data.appointment_id === id);
      assert.equal(recorded.length, 1, 'exactly one review request for the first completion');
    }
  });

  it('parallel PATCHes that move the patient and status changes: every answer is the record as written, none lost', async () => {
    for (let round = 0; round < 3; round++) {
      const id = await book(t, p, { patient_details: { first_name: 'Start', partner_patient_id: `mv-${round}-start` } });
      // Partner ids repeat, so appointments move back and forth between patients that exist.
      const moves = Array.from({ length: 8 }, (_, i) =>
        call('PATCH', `/dr/v1/appointment/${id}`, {
          token: i + 1,
          patient_details: { first_name: `N${i}`, partner_patient_id: `mv-${round}-${i % 3}` },
        }),
      );
      const others = [
        call('PATCH', `/dr/v1/appointment/${id}`, { notes: 'kept' }),
        call('POST', `/dr/v1/appointment/${id}/change-status`, { status: 'NS' }),
        call('POST', `/dr/v1/appointment/${id}/complete`),
      ];
      const [moved, changed] = await Promise.all([Promise.all(moves), Promise.all(others)]);
      for (const response of [...moved, ...changed]) assert.equal(response.statusCode, 200, response.body);

      const answers = [...moved, ...changed].map((r) => r.json());
      moved.forEach((response, i) => {
        assert.equal(response.json().partner_patient_id, `mv-${round}-${i % 3}`);
        assert.equal(response.json().patient_details.first_name, `N${i}`);
      });
      const partnerOf = new Map<string, string>();
      for (const answer of answers) {
        const known = partnerOf.get(answer.patient_id);
        assert.ok(known === undefined || known === answer.partner_patient_id, 'one partner id per patient in every answer');
        partnerOf.set(answer.patient_id, answer.partner_patient_id);
      }
      const final = (await call('GET', `/dr/v1/appointment/${id}`)).json();
      assert.ok(['NS', 'CM'].includes(final.status), final.status);
      assert.equal(final.notes, 'kept');
      const last = moved.map((r) => r.json()).find((answer) => answer.token === final.token)!;
      assert.equal(final.partner_patient_id, last.partner_patient_id, 'the last move is the one kept');
      assert.equal(final.patient_id, last.patient_id);
      assert.deepEqual(final.patient_details, last.patient_details);
    }
  });

  it('parallel bookings: one partner_appointment_id wins, one patient per partner_patient_id', async () => {
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call(
          'POST',
          '/dr/v1/appointment',
          bookingBody(p, {
            partner_appointment_id: 'pa-race',
            patient_details: { first_name: `P${i}`, partner_patient_id: 'pp-race-1' },
          }),
        ),
      ),
    );
    assert.deepEqual(responses.map((r) => r.statusCode).sort(), [201, 409, 409, 409, 409, 409]);
    for (const response of responses.filter((r) => r.statusCode === 409)) assert.equal(response.json().error.code, 'APPOINTMENT_EXISTS');

    const ids = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        book(t, p, { patient_details: { [`${i % 2 ? 'first' : 'last'}_name`]: `N${i}`, partner_patient_id: 'pp-race-2' } }),
      ),
    );
    const records = await Promise.all(ids.map(async (id) => (await call('GET', `/dr/v1/appointment/${id}`)).json()));
    assert.equal(new Set(records.map((r) => r.patient_id)).size, 1);
  });

  it('two updates claiming one new partner_patient_id at once: each answers 200 or 409 CONFLICT, one patient holds the id', async () => {
    const practice = await createPractice(t);
    // Two appointments of two patients booked without partner ids.
    const ids = [
      await book(t, practice, { patient_details: { first_name: 'Asha', mobile: '+919811111111' } }),
      await book(t, practice, { patient_details: { first_name: 'Bela', mobile: '+919822222222' } }),
    ];
    // The window widened: the first to claim the id waits, before its commit, for the other to claim it
    // too, or 500 ms (the other waiting for the first's claim, as it must on PostgreSQL).
    const forUpdate = PatientService.prototype.forUpdate;
    let claimed = 0;
    let bothClaimed!: () => void;
    const together = new Promise<void>((resolve) => (bothClaimed = resolve));
    const timer = setTimeout(bothClaimed, 500);
    PatientService.prototype.forUpdate = async function (this: PatientService, ...args: Parameters<typeof forUpdate>) {
      const choice = await forUpdate.apply(this, args);
      if (++claimed >= 2) bothClaimed();
      await together;
      return choice;
    } as typeof forUpdate;
    let responses: Awaited<ReturnType<typeof request>>[];
    try {
      responses = await Promise.all(
        ids.map((id) =>
          request(t, practice.client.token, 'PATCH', `/dr/v1/appointment/${id}`, { patient_details: { partner_patient_id: 'pp-claimed' } }),
        ),
      );
    } finally {
      clearTimeout(timer);
      PatientService.prototype.forUpdate = forUpdate;
    }
    const codes = responses.map((r) => r.statusCode).sort();
    for (const response of responses) assert.ok([200, 409].includes(response.statusCode), response.body);
    // SQLite runs one writer at a time: the second finds the id taken and moves to its patient.
    assert.deepEqual(codes, DIALECT === 'postgres' ? [200, 409] : [200, 200]);
    const lost = responses.find((r) => r.statusCode === 409);
    if (lost) assert.equal(lost.json().error.code, 'CONFLICT');
    const holders = await t.ctx.storage.db
      .selectFrom('patients')
      .select('id')
      .where('business_id', '=', practice.client.businessId)
      .where('partner_patient_id', '=', 'pp-claimed')
      .execute();
    assert.equal(holders.length, 1);
    for (const [index, response] of responses.entries()) {
      const record = (await request(t, practice.client.token, 'GET', `/dr/v1/appointment/${ids[index]}`)).json();
      if (response.statusCode === 200) assert.deepEqual([record.patient_id, record.partner_patient_id], [holders[0]!.id, 'pp-claimed']);
      else assert.equal(record.partner_patient_id, undefined, 'the loser changed nothing');
    }
  });

  it('parallel cancel, no-show and review requests leave a consistent record and count every review request', async () => {
    const practice = await createPractice(t);
    const id = await book(t, practice);
    const results = await Promise.all([
      ...Array.from({ length: 3 }, () => request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/review-request`)),
      request(t, practice.client.token, 'PUT', `/dr/v1/appointment/${id}/cancel`),
      ...Array.from({ length: 3 }, () => request(t, practice.client.token, 'POST', `/dr/v1/appointment/${id}/review-request`)),
    ]);
    const accepted = results.filter((r) => r.statusCode === 202).map((r) => r.json().event_id);
    const refused = results.filter((r) => r.statusCode === 400);
    assert.equal(accepted.length + refused.length, 6);
    const recorded = await events(t, practice.client.businessId);
    assert.deepEqual(recorded.map((e) => e.id).sort(), accepted.sort(), 'an event for each accepted request, none for refused ones');
    assert.equal((await request(t, practice.client.token, 'GET', `/dr/v1/appointment/${id}`)).json().status, 'CN');
  });
});
