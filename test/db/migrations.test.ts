import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { up as alignWebhookDeliveries } from '../../src/db/migrations/0011_webhook_delivery_decisions.ts';
import * as patientDirectory from '../../src/db/migrations/0012_patient_directory.ts';
import * as appointmentEventSequence from '../../src/db/migrations/0022_appointment_event_sequence.ts';
import { nameTokens, tokensToText } from '../../src/db/migrations/0013/names.ts';
import * as documentBytes from '../../src/db/migrations/0039_document_bytes.ts';
import { businessBytes } from '../../src/modules/documents/repo.ts';
import { book, createPractice, request } from '../modules/appointments/support.ts';
import { startReceiver, recordReviewEvent } from '../modules/webhooks/support.ts';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp } from '../support.ts';

describe(`migrations (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { CPS_WEBHOOK_RETRY_SCHEDULE: '0' } });
  });
  after(() => t.close());

  it('0011 gives a delivery written before it the state of its job, as the listing showed it', async () => {
    const client = await createTestClient(t.ctx, { scopes: ['webhook:admin'] });
    const receiver = await startReceiver(() => ({ status: 503 }));
    const created = await t.app.inject({
      method: 'POST',
      url: '/notification/v1/connect/webhook/subscriptions',
      headers: bearer(client.token),
      payload: { endpoint: receiver.url },
    });
    const subscriptionId = created.json().id as string;
    const eventId = await recordReviewEvent(t.ctx.storage, client.businessId);
    await t.ctx.jobs.runDue();
    await receiver.close();
    const db = t.ctx.storage.db;
    const delivery = () =>
      db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('subscription_id', '=', subscriptionId)
        .where('event_id', '=', eventId)
        .executeTakeFirstOrThrow();
    const { job_id: jobId } = await delivery();

    // The job failed without the handler recording it.
    await db.updateTable('webhook_deliveries').set({ status: 'pending', last_error: null, next_attempt_at: 1 }).where('job_id', '=', jobId).execute();
    await alignWebhookDeliveries(db);
    let row = await delivery();
    assert.equal(row.status, 'failed');
    assert.equal(row.next_attempt_at, null);
    assert.equal(row.last_error, 'HTTP 503');

    // A retry the queue scheduled after the handler wrote its own time.
    const dueAt = Date.now() + 60_000;
    await db.updateTable('jobs').set({ status: 'pending', due_at: dueAt }).where('id', '=', jobId!).execute();
    await db.updateTable('webhook_deliveries').set({ status: 'pending', next_attempt_at: 1 }).where('job_id', '=', jobId).execute();
    await alignWebhookDeliveries(db);
    row = await delivery();
    assert.equal(row.status, 'pending');
    assert.equal(row.next_attempt_at, dueAt);
  });

  it('0012 turns patient details into columns and moves records kept under a service id to the partner id', async () => {
    const client = await createTestClient(t.ctx);
    const db = t.ctx.storage.db;
    const old = db as unknown as Kysely<any>;
    await patientDirectory.down(old);
    const now = Date.now();
    const patient = (id: string, partner: string | null, details: unknown) => ({
      id,
      business_id: client.businessId,
      partner_patient_id: partner,
      details: JSON.stringify(details),
      created_at: now,
      updated_at: now,
    });
    await old
      .insertInto('patients')
      .values([
        patient('pt_m1', 'UH-1', {
          first_name: 'Asha',
          mobile: '+919800000001',
          dob: '1980-05-06',
          address: { city: 'Pune', pincode: 411001 },
          partner_patient_id: 'UH-1',
        }),
        patient('pt_m2', null, { first_name: 'Bala', age: 41, gender: 'M' }),
      ])
      .execute();
    const kase = (ref: string, id: string) => ({
      business_id: client.businessId,
      patient_ref: ref,
      id,
      status: 'A',
      display_name: id,
      type: null,
      hi_type: null,
      partner_meta: '{}',
      occurred_at: now,
      created_at: now,
      updated_at: now,
    });
    await db
      .insertInto('cases')
      .values([kase('pt_m1', 'c1'), kase('pt_m1', 'c2'), kase('UH-1', 'c2'), kase('pt_m2', 'c3')])
      .execute();
    await patientDirectory.up(old);

    const rows = await db.selectFrom('patients').selectAll().where('id', 'in', ['pt_m1', 'pt_m2']).orderBy('id').execute();
    assert.equal(rows[0]!.first_name, 'Asha');
    assert.equal(rows[0]!.mobile, '+919800000001');
    assert.equal(rows[0]!.dob, '1980-05-06');
    assert.deepEqual(JSON.parse(rows[0]!.address!), { city: 'Pune', pincode: 411001 });
    assert.equal(rows[1]!.age, 41);
    assert.equal(Number(rows[1]!.age_recorded_at), now);
    assert.equal(rows[1]!.gender, 'M');
    const refs = await db
      .selectFrom('cases')
      .select(['patient_ref', 'id'])
      .where('business_id', '=', client.businessId)
      .orderBy('id')
      .orderBy('patient_ref')
      .execute();
    assert.deepEqual(
      refs.map((r) => `${r.id}@${r.patient_ref}`),
      ['c1@UH-1', 'c2@UH-1', 'c2@pt_m1', 'c3@pt_m2'],
      'moved to the partner id, except a case id already kept there',
    );
    const read = await t.app.inject({ method: 'GET', url: '/mr/api/v1/cases/c1', headers: { ...bearer(client.token), 'x-pt-id': 'pt_m1' } });
    assert.equal(read.statusCode, 200);
  });

  it('0013 indexes a name whose word names a member of every object (Constructor) as any other name', () => {
    assert.equal(tokensToText(nameTokens('Constructor', 'toString Rao')), 'constructor tostring rao');
    assert.equal(tokensToText(nameTokens('Mohd', 'Iqbal')), 'mohammed iqbal');
  });

  it('0022 numbers an appointment’s next event after the events it already has', async () => {
    const practice = await createPractice(t);
    const [changed, untouched] = [await book(t, practice), await book(t, practice)];
    for (const notes of ['one', 'two']) {
      const response = await request(t, practice.client.token, 'PATCH', `/dr/v1/appointment/${changed}`, { notes });
      assert.equal(response.statusCode, 200, response.body);
    }
    const db = t.ctx.storage.db;
    const old = db as unknown as Kysely<any>;
    await appointmentEventSequence.down(old);
    await appointmentEventSequence.up(old);
    const counts = await db.selectFrom('appointments').select(['id', 'event_sequence']).where('id', 'in', [changed, untouched]).execute();
    assert.deepEqual(Object.fromEntries(counts.map((row) => [row.id, Number(row.event_sequence)])), { [changed]: 3, [untouched]: 1 });

    const cancelled = await request(t, practice.client.token, 'PUT', `/dr/v1/appointment/${changed}/cancel`);
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    const numbers = await db
      .selectFrom('events')
      .select(['type', 'sequence', 'payload'])
      .where('ordering_key', '=', `appointment:${changed}`)
      .orderBy('sequence')
      .execute();
    assert.deepEqual(
      numbers.map((row) => [row.type, Number(row.sequence), JSON.parse(row.payload).sequence]),
      [
        ['appointment.created', 1, 1],
        ['appointment.updated', 2, 2],
        ['appointment.updated', 3, 3],
        ['appointment.statuschange', 4, 4],
      ],
    );
  });

  it('0039 counts the files each business already has, then follows every kind of change to them', async () => {
    const [one, two] = [await createTestClient(t.ctx), await createTestClient(t.ctx)];
    const db = t.ctx.storage.db;
    const now = Date.now();
    const file = (businessId: string, documentId: string, state: string, size: number | null, declared: number | null) => ({
      business_id: businessId,
      document_id: documentId,
      idx: 0,
      form_id: `form-${documentId}`,
      state,
      content_type: 'application/pdf',
      size,
      declared_size: declared,
    });
    const documents = [
      [one.businessId, 'doc-stored', 'stored', 1000, null],
      [one.businessId, 'doc-waiting', 'waiting', null, 300],
      [one.businessId, 'doc-removing', 'removing', 5000, null],
      [two.businessId, 'doc-other', 'stored', 70, 90],
    ] as const;
    for (const [businessId, id, state, size, declared] of documents) {
      const document = { business_id: businessId, id, patient_ref: 'pt-0039', status: 'S', source: 'test', created_at: now, updated_at: now };
      await db.insertInto('documents').values(document).execute();
      await db
        .insertInto('document_files')
        .values(file(businessId, id, state, size, declared))
        .execute();
    }
    const counted = async () => [await businessBytes(db, one.businessId), await businessBytes(db, two.businessId)];

    const old = db as unknown as Kysely<any>;
    await documentBytes.down(old);
    await documentBytes.up(old);
    assert.deepEqual(await counted(), [1300, 70], 'stored at their size, waiting at their declared size, removing not at all');

    await db
      .updateTable('document_files')
      .set({ state: 'receiving', size: null, declared_size: 400 })
      .where('document_id', '=', 'doc-waiting')
      .execute();
    assert.deepEqual(await counted(), [1400, 70], 'a form taken up reserves what it declared');
    await db.updateTable('document_files').set({ state: 'stored', size: 350 }).where('document_id', '=', 'doc-waiting').execute();
    assert.deepEqual(await counted(), [1350, 70], 'a stored file counts its size, not its reservation');
    await db.updateTable('document_files').set({ claimed_at: now }).where('business_id', 'in', [one.businessId, two.businessId]).execute();
    assert.deepEqual(await counted(), [1350, 70], 'a change to no counted column changes nothing');
    await db.updateTable('document_files').set({ state: 'removing' }).where('document_id', 'in', ['doc-stored', 'doc-other']).execute();
    assert.deepEqual(await counted(), [350, 0], "one statement across businesses takes each one's files off its own count");
    await db.deleteFrom('document_files').where('document_id', 'in', ['doc-stored', 'doc-removing', 'doc-other']).execute();
    assert.deepEqual(await counted(), [350, 0], 'a removed file counted nothing already');
    await db.deleteFrom('documents').where('business_id', '=', one.businessId).where('id', '=', 'doc-waiting').execute();
    assert.deepEqual(await counted(), [0, 0], "a document's delete takes its stored files with it (the foreign key's cascade)");
    await db.deleteFrom('documents').where('id', 'in', ['doc-stored', 'doc-removing', 'doc-other']).execute();
  });
});
