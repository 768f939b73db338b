/** A patient's rights: an export that contains everything, an erasure that leaves nothing findable, both idempotent and isolated. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifyChain } from '../../../src/access-log/verify.ts';
import { chainCheck } from '../../access-log/support.ts';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { Ajv } from 'ajv';
import { EVENTS } from '../../../src/events.ts';
import { startReceiver, type Receiver } from '../webhooks/support.ts';
import { call, exportReady, findPerson, linkPath, person, seedPerson, subscribe } from './support.ts';

const validErasure = new Ajv({ strict: false, allErrors: true }).compile(EVENTS['patient.erased'] as object);

describe(`privacy: export and erasure (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  let receiver: Receiver;

  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
    receiver = await startReceiver();
    await subscribe(t, client.token, `${receiver.url}/hook`);
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  it('exports everything the business holds about the patient, then erases it so that no table holds the name or number', async () => {
    const who = person();
    const { patientId, appointmentIds, practice } = await seedPerson(t, client, who);
    assert.ok((await findPerson(t, who)).length > 10, 'the seed put the person in many places');

    // The export: asked for by the partner's id, the same export while it is pending.
    const before = await t.ctx.storage.db
      .selectFrom('idempotency_keys')
      .select('idempotency_key')
      .where('business_id', '=', client.businessId)
      .execute();
    assert.ok(before.some((row) => row.idempotency_key === `book-${who.partnerId}-0`));
    const asked = await call(t, client.token, 'POST', `/privacy/v1/patients/${who.partnerId}/export?partner_id=1`);
    assert.equal(asked.statusCode, 202, asked.body);
    const pending = asked.json();
    assert.equal(pending.status, 'pending');
    assert.equal(pending.patient_id, patientId);
    assert.equal(pending.download_url, null);
    const again = await call(t, client.token, 'POST', `/privacy/v1/patients/${patientId}/export`);
    assert.equal(again.statusCode, 202);
    assert.equal(again.json().export_id, pending.export_id, 'a second request answers the pending export');
    await t.ctx.audit.flush();
    await t.ctx.jobs.runDue();
    const status = await call(t, client.token, 'GET', `/privacy/v1/exports/${pending.export_id}`);
    assert.equal(status.statusCode, 200, status.body);
    assert.equal(status.json().status, 'ready');
    assert.match(status.json().download_url, /^http:\/\/cps\.test\/privacy\/v1\/exports\/[^/]+\/download\?token=[\w-]+$/);
    const readyAgain = await call(t, client.token, 'POST', `/privacy/v1/patients/${patientId}/export`);
    assert.equal(readyAgain.json().export_id, pending.export_id, 'and the ready one until it expires');

    // At rest the document is encrypted.
    const stored = await t.ctx.storage.db.selectFrom('privacy_exports').selectAll().where('id', '=', pending.export_id).executeTakeFirstOrThrow();
    assert.ok(stored.document && !stored.document.includes(who.first));

    const downloaded = await call(t, client.token, 'GET', linkPath(status.json().download_url));
    assert.equal(downloaded.statusCode, 200, downloaded.body);
    assert.match(String(downloaded.headers['content-disposition']), /attachment/);
    const doc = downloaded.json();
    assert.equal(doc.format, 'opencps.patient-export.v1');
    assert.equal(doc.patient.id, patientId);
    assert.equal(doc.patient.first_name, who.first);
    assert.equal(doc.patient.last_name, who.last);
    assert.equal(doc.patient.mobile, who.mobile);
    assert.equal(doc.patient.partner_patient_id, who.partnerId);
    assert.match(doc.patient.email, /@example\.com$/);
    assert.deepEqual(
      doc.appointments.map((a: { id: string }) => a.id),
      appointmentIds,
    );
    assert.equal(doc.appointments[0].patient_details.first_name, who.first);
    assert.match(doc.appointments[0].notes, new RegExp(who.last));
    assert.equal(doc.appointments[0].status, 'CM');
    assert.equal(doc.reviews.length, 1);
    assert.equal(doc.reviews[0].comment, `${who.first} says thank you`);
    const cases = Object.fromEntries(doc.cases.map((c: { id: string }) => [c.id, c]));
    assert.equal(cases['c-1'].item.display_name, `${who.last} X-ray c-1`);
    assert.equal(cases['c-2'].status, 'D', 'tombstones too');
    assert.deepEqual(
      doc.push_devices.map((d: { did: string }) => d.did),
      [`dev-${who.partnerId}`],
    );
    assert.equal(doc.push_notifications[0].title, `Hello ${who.first}`);
    const eventTypes = new Set(doc.events.map((e: { type: string }) => e.type));
    for (const type of ['appointment.created', 'appointment.statuschange', 'external_review.request', 'case.created', 'case.deleted']) {
      assert.ok(eventTypes.has(type), `events include ${type}: ${[...eventTypes].join(', ')}`);
    }
    const operations = doc.access_log.map((e: { operation: string }) => e.operation);
    for (const operation of [
      'POST /dr/v1/appointment',
      'PATCH /dr/v1/patient/:patient_id',
      'POST /mr/api/v1/cases',
      'POST /notification/add-device',
      'GET /profiles/v1/patient/search',
      'GET /profiles/v1/patient/by-mobile/',
      'POST /privacy/v1/patients/:patient_id/export',
    ]) {
      assert.ok(operations.includes(operation), `the access log's entries include ${operation}`);
    }
    const search = doc.access_log.find((e: { operation: string }) => e.operation === 'GET /profiles/v1/patient/by-mobile/');
    assert.match(search.filter.mob, /^hmac:/, 'searches with their filters, contact details as digests');

    // The erasure: by the partner's id.
    const erased = await call(t, client.token, 'POST', `/privacy/v1/patients/${who.partnerId}/erase?partner_id=1`);
    assert.equal(erased.statusCode, 200, erased.body);
    assert.equal(erased.json().patient_id, patientId);
    assert.equal(erased.json().status, 'erased');
    for (const path of [`${who.partnerId}/erase?partner_id=1`, `${who.partnerId}/erase`, `${patientId}/erase`]) {
      const repeated = await call(t, client.token, 'POST', `/privacy/v1/patients/${path}`);
      assert.equal(repeated.statusCode, 200, repeated.body);
      assert.deepEqual(repeated.json(), erased.json(), `erasing again (${path}) answers the same`);
    }
    await t.ctx.jobs.runDue();
    await t.ctx.audit.flush();

    // The answers stored for Idempotency-Keys that named the patient or its appointments are gone (they are encrypted, so the scan cannot tell).
    const keys = await t.ctx.storage.db
      .selectFrom('idempotency_keys')
      .select('idempotency_key')
      .where('business_id', '=', client.businessId)
      .execute();
    assert.ok(!keys.some((row) => row.idempotency_key.startsWith(`book-${who.partnerId}`)), JSON.stringify(keys));

    // Nothing findable anywhere, in any table.
    assert.deepEqual(await findPerson(t, who), []);

    // The patient answers as unknown; the appointments keep times and statuses without the person.
    assert.equal((await call(t, client.token, 'GET', `/dr/v1/patient/${patientId}`)).statusCode, 404);
    assert.equal((await call(t, client.token, 'GET', `/profiles/v1/patient/${who.partnerId}/username/`)).json().length ?? 0, 0);
    assert.equal((await call(t, client.token, 'POST', `/privacy/v1/patients/${patientId}/export`)).statusCode, 404);
    const kept = await call(t, client.token, 'GET', `/dr/v1/appointment/${appointmentIds[0]}`);
    assert.equal(kept.statusCode, 200, kept.body);
    assert.equal(kept.json().status, 'CM');
    assert.equal(kept.json().patient_id, patientId);
    const rows = await t.ctx.storage.db.selectFrom('appointments').selectAll().where('id', 'in', appointmentIds).orderBy('start_time').execute();
    assert.equal(rows.length, 2);
    assert.ok(rows.every((row) => Number(row.start_time) > 0 && row.patient_details === '{}' && row.notes === null));
    const counts = async (table: 'cases' | 'push_devices' | 'push_notifications' | 'privacy_exports') =>
      (await t.ctx.storage.db.selectFrom(table).select('business_id').where('business_id', '=', client.businessId).execute()).length;
    assert.equal(await counts('cases'), 0, 'cases and tombstones deleted');
    assert.equal(await counts('push_devices'), 0);
    assert.equal(await counts('push_notifications'), 0);
    assert.equal(await counts('privacy_exports'), 0, 'the export went with it');
    const review = await t.ctx.storage.db
      .selectFrom('reviews')
      .selectAll()
      .where('appointment_id', '=', appointmentIds[0]!)
      .executeTakeFirstOrThrow();
    assert.equal(review.rating, 5);
    assert.equal(review.comment, null);

    // patient.erased went to the partner, valid and without personal data.
    const delivered = receiver.received.map((d) => JSON.parse(d.body) as Record<string, any>).filter((body) => body.event === 'patient.erased');
    assert.equal(delivered.length, 1, 'one event for the erasure, none for the repeats');
    assert.ok(validErasure(delivered[0]), JSON.stringify(validErasure.errors));
    assert.deepEqual(delivered[0]!.data, { patient_id: patientId, partner_patient_id: who.partnerId, merged_patient_ids: [] });

    // The access log proves it: who, when, which patient, the answer; the chain still holds.
    const entries = await t.ctx.storage.db
      .selectFrom('access_log')
      .selectAll()
      .where('business_id', '=', client.businessId)
      .where('action', '=', 'erase')
      .orderBy('seq')
      .execute();
    assert.equal(entries.length, 4);
    assert.equal(entries[0]!.patient_ref, patientId);
    assert.equal(entries[0]!.status, 200);
    assert.equal(entries[0]!.client_id, client.clientId);
    assert.equal(entries[0]!.with_change, 1);
    const chain = await verifyChain(t.ctx.storage.db, chainCheck(t), client.businessId);
    assert.ok(chain.ok, JSON.stringify(chain));

    // A booking with the partner's id afterwards is a new patient, not the erased one.
    const rebooked = await call(t, client.token, 'POST', '/dr/v1/appointment', {
      clinic_id: practice.clinicId,
      doctor_id: practice.doctorId,
      appointment_details: { start_time: 1_990_000_000, end_time: 1_990_000_900 },
      patient_details: { first_name: 'New', partner_patient_id: who.partnerId },
    });
    assert.equal(rebooked.statusCode, 201, rebooked.body);
    const newcomer = (await call(t, client.token, 'GET', `/dr/v1/appointment/${rebooked.json().appointment_id}`)).json().patient_id;
    assert.notEqual(newcomer, patientId);
    // Patient details sent to an erased patient's appointment make another patient; the erased row stays empty.
    const patched = await call(t, client.token, 'PATCH', `/dr/v1/appointment/${appointmentIds[1]}`, { patient_details: { first_name: 'Back' } });
    assert.equal(patched.statusCode, 200, patched.body);
    const moved = await t.ctx.storage.db
      .selectFrom('appointments')
      .select(['patient_id', 'patient_details'])
      .where('id', '=', appointmentIds[1]!)
      .executeTakeFirstOrThrow();
    assert.notEqual(moved.patient_id, patientId);
    assert.equal(JSON.parse(moved.patient_details).first_name, 'Back');
    const stub = await t.ctx.storage.db.selectFrom('patients').selectAll().where('id', '=', patientId).executeTakeFirstOrThrow();
    assert.equal(stub.first_name, null);
    assert.ok(stub.erased_at !== null);
  });

  it("a merged duplicate's id names the survivor: the export holds both, the erasure takes both", async () => {
    const who = person();
    const { patientId } = await seedPerson(t, client, who);
    const duplicate = await call(t, client.token, 'POST', '/dr/v1/patient', {
      first_name: who.first,
      last_name: who.last,
      mobile: who.mobile,
      gender: 'M',
      dob: '1984-02-03',
      partner_patient_id: `${who.partnerId}-dup`,
    });
    assert.equal(duplicate.statusCode, 201, duplicate.body);
    const duplicateId = duplicate.json().patient_id;
    const merged = await call(t, client.token, 'POST', `/dr/v1/patient/${patientId}/merge`, { duplicate_patient_id: duplicateId });
    assert.equal(merged.statusCode, 200, merged.body);

    const ready = await exportReady(t, client.token, `${who.partnerId}-dup?partner_id=1`);
    const doc = (await call(t, client.token, 'GET', linkPath(ready.download_url))).json();
    assert.equal(doc.patient.id, patientId);
    assert.deepEqual(
      doc.merged_patients.map((p: { id: string }) => p.id),
      [duplicateId],
    );

    const erased = await call(t, client.token, 'POST', `/privacy/v1/patients/${duplicateId}/erase`);
    assert.equal(erased.statusCode, 200, erased.body);
    assert.equal(erased.json().patient_id, patientId);
    await t.ctx.jobs.runDue();
    await t.ctx.audit.flush();
    assert.deepEqual(await findPerson(t, who), []);
    const event = receiver.received
      .map((d) => JSON.parse(d.body))
      .find((body) => body.event === 'patient.erased' && body.data.patient_id === patientId);
    assert.deepEqual(event?.data.merged_patient_ids, [duplicateId]);
  });
});

describe(`privacy: security and expiry (${DIALECT})`, () => {
  let t: TestApp;
  let owner: TestClient;
  let other: TestClient;
  let patientId: string;
  let partnerId: string;

  before(async () => {
    t = await createTestApp();
    owner = await createTestClient(t.ctx);
    other = await createTestClient(t.ctx);
    const who = person();
    partnerId = who.partnerId;
    ({ patientId } = await seedPerson(t, owner, who));
  });
  after(async () => t.close());

  it("another business's patient answers as unknown, and its export and link are unusable", async () => {
    const ready = await exportReady(t, owner.token, patientId);
    for (const path of [`${patientId}/export`, `${partnerId}/export?partner_id=1`, `${patientId}/erase`, `${partnerId}/erase?partner_id=1`]) {
      const response = await call(t, other.token, 'POST', `/privacy/v1/patients/${path}`);
      assert.equal(response.statusCode, 404, `${path}: ${response.body}`);
      assert.equal(response.json().error.code, 'PATIENTS_NOT_FOUND');
    }
    assert.equal((await call(t, other.token, 'GET', `/privacy/v1/exports/${ready.export_id}`)).statusCode, 404);
    const stolen = await call(t, other.token, 'GET', linkPath(ready.download_url));
    assert.equal(stolen.statusCode, 404, 'a link is of no use to another business');
    assert.equal((await call(t, owner.token, 'GET', `/privacy/v1/exports/${ready.export_id}/download?token=forged`)).statusCode, 404);
    assert.equal((await call(t, owner.token, 'GET', linkPath(ready.download_url))).statusCode, 200);
    assert.equal((await call(t, owner.token, 'POST', '/privacy/v1/patients/pt-nobody/erase')).statusCode, 404);
  });

  it('401 without a token, 403 without the scope: privacy:export for exports, privacy:erase for erasure', async () => {
    const paths: Array<[string, string]> = [
      ['POST', `/privacy/v1/patients/${patientId}/export`],
      ['GET', '/privacy/v1/exports/exp-x'],
      ['GET', '/privacy/v1/exports/exp-x/download?token=x'],
      ['POST', `/privacy/v1/patients/${patientId}/erase`],
    ];
    for (const [method, url] of paths) {
      const response = await t.app.inject({ method: method as 'GET', url });
      assert.equal(response.statusCode, 401, url);
      assert.equal(response.json().error.code, 'UNAUTHORIZED');
    }
    const reader = await createTestClient(t.ctx, { businessId: owner.businessId, scopes: ['patient:read', 'patient:write', 'audit:read'] });
    for (const [method, url] of paths) assert.equal((await call(t, reader.token, method, url)).statusCode, 403, url);
    const exporter = await createTestClient(t.ctx, { businessId: owner.businessId, scopes: ['privacy:export'] });
    assert.equal((await call(t, exporter.token, 'POST', `/privacy/v1/patients/${patientId}/export`)).statusCode, 202);
    assert.equal((await call(t, exporter.token, 'POST', `/privacy/v1/patients/${patientId}/erase`)).statusCode, 403);
  });

  it('two exports asked for at once are one; two erasures at once erase once and answer the same', async () => {
    const who = person();
    const seeded = await seedPerson(t, owner, who);
    const exports = await Promise.all([0, 1, 2].map(() => call(t, owner.token, 'POST', `/privacy/v1/patients/${seeded.patientId}/export`)));
    assert.deepEqual(
      exports.map((r) => r.statusCode),
      [202, 202, 202],
    );
    assert.equal(new Set(exports.map((r) => r.json().export_id)).size, 1, exports.map((r) => r.body).join('\n'));
    const erasures = await Promise.all([0, 1, 2].map(() => call(t, owner.token, 'POST', `/privacy/v1/patients/${who.partnerId}/erase?partner_id=1`)));
    assert.deepEqual(
      erasures.map((r) => r.statusCode),
      [200, 200, 200],
      erasures.map((r) => r.body).join('\n'),
    );
    assert.equal(new Set(erasures.map((r) => r.body)).size, 1);
    const events = await t.ctx.storage.db
      .selectFrom('events')
      .select('payload')
      .where('business_id', '=', owner.businessId)
      .where('type', '=', 'patient.erased')
      .execute();
    assert.equal(events.filter((e) => e.payload.includes(seeded.patientId)).length, 1);
    await t.ctx.jobs.runDue();
    assert.deepEqual(await findPerson(t, who), []);
  });

  it('a link expires: the status says so, the download answers 410, and retention deletes the export', async () => {
    const ready = await exportReady(t, owner.token, patientId);
    await t.ctx.storage.db
      .updateTable('privacy_exports')
      .set({ expires_at: Date.now() - 1000 })
      .where('id', '=', ready.export_id)
      .execute();
    const status = await call(t, owner.token, 'GET', `/privacy/v1/exports/${ready.export_id}`);
    assert.equal(status.json().status, 'expired');
    assert.equal(status.json().download_url, null);
    const gone = await call(t, owner.token, 'GET', linkPath(ready.download_url));
    assert.equal(gone.statusCode, 410, gone.body);
    assert.equal(gone.json().error.code, 'EXPORT_EXPIRED');
    const fresh = await call(t, owner.token, 'POST', `/privacy/v1/patients/${patientId}/export`);
    assert.notEqual(fresh.json().export_id, ready.export_id, 'an expired export is not answered again');

    assert.equal((await t.modules.retention.service.run()).pruned.privacy_exports, 1);
    assert.equal((await t.modules.retention.service.run()).pruned.privacy_exports, 0);
    const left = await t.ctx.storage.db.selectFrom('privacy_exports').select('id').where('business_id', '=', owner.businessId).execute();
    assert.deepEqual(
      left.map((row) => row.id),
      [fresh.json().export_id],
    );
  });
});
