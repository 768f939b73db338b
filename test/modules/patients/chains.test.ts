/**
 * Merges never chain: a merge into a patient that absorbed others earlier moves them along, so a
 * booking, an erasure or a lookup by any of their ids reaches the one live patient (migration 0024
 * flattens chains stored before). Changes and merges that waited for a patient's lock while it was
 * erased refuse, and an erasure that waited while a merge into its patient committed erases the
 * duplicate too (PostgreSQL: the waits are held open by another transaction).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { up as flattenMerges } from '../../../src/db/migrations/0024_patient_merges_flattened.ts';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { book, createPractice, START, type Practice } from '../appointments/support.ts';
import { call as privacyCall } from '../privacy/support.ts';
import { createDr, partnerId, request } from './support.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe(`patients: merges never chain (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  let practice: Practice;
  const call = (method: string, url: string, payload?: unknown) => request(t, client.token, method, url, payload);
  const merge = (survivor: string, duplicate: string) => call('POST', `/dr/v1/patient/${survivor}/merge`, { duplicate_patient_id: duplicate });
  const row = (id: string) => t.ctx.storage.db.selectFrom('patients').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
    practice = await createPractice(t, { client });
  });
  after(async () => t.close());

  it("A into B, then B into C: A names C, a booking by A's partner id lands on C, and erasing C erases A", async () => {
    const first = partnerId('a');
    const a = await createDr(t, client.token, { partner_patient_id: first, first_name: 'Chainzed', mobile: '+919811122233' });
    const b = await createDr(t, client.token, { partner_patient_id: partnerId('b') });
    const c = await createDr(t, client.token, { partner_patient_id: partnerId('c') });
    assert.equal((await merge(b, a)).statusCode, 200);
    assert.equal((await merge(c, b)).statusCode, 200);
    assert.equal((await row(a)).merged_into, c);
    const booked = await book(t, practice, {
      appointment_details: { start_time: START + 7200, end_time: START + 7800 },
      patient_details: { partner_patient_id: first },
    });
    assert.equal((await call('GET', `/dr/v1/appointment/${booked}`)).json().patient_id, c);
    const erased = await privacyCall(t, client.token, 'POST', `/privacy/v1/patients/${c}/erase`);
    assert.equal(erased.statusCode, 200, erased.body);
    const gone = await row(a);
    assert.deepEqual([gone.first_name, gone.mobile, gone.erased_at !== null], [null, null, true]);
  });

  it('the migration flattens chains stored before', async () => {
    const ids = [];
    for (const name of ['x', 'y', 'z', 'w']) ids.push(await createDr(t, client.token, { partner_patient_id: partnerId(name) }));
    const [x, y, z, w] = ids as [string, string, string, string];
    // x -> y -> z -> w, as merges made them before.
    for (const [from, to] of [
      [x, y],
      [y, z],
      [z, w],
    ]) {
      await t.ctx.storage.db.updateTable('patients').set({ merged_into: to, archived_at: Date.now() }).where('id', '=', from!).execute();
    }
    await flattenMerges(t.ctx.storage.db);
    assert.deepEqual(
      [(await row(x)).merged_into, (await row(y)).merged_into, (await row(z)).merged_into, (await row(w)).merged_into],
      [w, w, w, null],
    );
  });

  describe('changes that waited while the patient was erased (PostgreSQL)', { skip: DIALECT !== 'postgres' }, () => {
    /** Holds `statement`'s row lock in another transaction until the answer is called. */
    async function hold(statement: string): Promise<() => Promise<void>> {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const ready = new Promise<void>((resolve) => (locked = resolve));
      const done = t.ctx.storage.db.transaction().execute(async (trx) => {
        await sql.raw(statement).execute(trx);
        locked();
        await gate;
      });
      await ready;
      return async () => {
        release();
        await done;
      };
    }

    it('an update queued behind an erasure answers 404 and writes nothing back', async () => {
      const id = await createDr(t, client.token, { first_name: 'Erasedname', last_name: 'Gonewell', mobile: '+919833344455' });
      const release = await hold(`select id from patients where id = '${id}' for update`);
      const erasure = privacyCall(t, client.token, 'POST', `/privacy/v1/patients/${id}/erase`);
      await sleep(300);
      const update = call('PATCH', `/dr/v1/patient/${id}`, { first_name: 'Erasedname', mobile: '+919833344466' });
      await sleep(300);
      await release();
      const [erased, updated] = await Promise.all([erasure, update]);
      assert.equal(erased.statusCode, 200, erased.body);
      assert.equal(updated.statusCode, 404, updated.body);
      const stored = await row(id);
      assert.deepEqual([stored.first_name, stored.mobile], [null, null]);
      const keys = await t.ctx.storage.db.selectFrom('patient_search_names').select('patient_id').where('patient_id', '=', id).execute();
      assert.equal(keys.length, 0);
    });

    it('a merge that waited while its survivor was erased answers 404 and moves nothing', async () => {
      const survivor = await createDr(t, client.token, { first_name: 'Survivor' });
      const duplicate = await createDr(t, client.token, { partner_patient_id: partnerId('me'), first_name: 'Dupe', mobile: '+919844455566' });
      const booked = await book(t, practice, {
        appointment_details: { start_time: START + 60_000, end_time: START + 60_600 },
        patient_details: { partner_patient_id: (await row(duplicate)).partner_patient_id },
      });
      const release = await hold(`select id from appointments where id = '${booked}' for update`);
      const merging = merge(survivor, duplicate);
      await sleep(300);
      const erased = await privacyCall(t, client.token, 'POST', `/privacy/v1/patients/${survivor}/erase`);
      assert.equal(erased.statusCode, 200, erased.body);
      await release();
      assert.equal((await merging).statusCode, 404);
      assert.equal((await row(duplicate)).merged_into, null);
    });
    it('an erasure that waited while a merge into its patient committed erases the new duplicate too', async () => {
      const survivor = await createDr(t, client.token, { first_name: 'Keeper' });
      const duplicate = await createDr(t, client.token, { first_name: 'Laterdupe', mobile: '+919855566677' });
      const release = await hold(`select id from patients where id = '${survivor}' for update`);
      const merging = merge(survivor, duplicate);
      await sleep(300);
      const erasure = privacyCall(t, client.token, 'POST', `/privacy/v1/patients/${survivor}/erase`);
      await sleep(300);
      await release();
      const [merged, erased] = await Promise.all([merging, erasure]);
      assert.deepEqual([merged.statusCode, erased.statusCode], [200, 200], `${merged.body} ${erased.body}`);
      const stored = await row(duplicate);
      assert.deepEqual([stored.first_name, stored.mobile, stored.erased_at !== null], [null, null, true]);
    });
    it('a merge racing an appointment update that names the duplicate by its partner id: both succeed, no deadlock', async () => {
      const dropped = partnerId('dl');
      const duplicate = await createDr(t, client.token, { partner_patient_id: dropped }); // created first: sorts first
      const survivor = await createDr(t, client.token, { partner_patient_id: partnerId('sv') });
      const booked = await book(t, practice, {
        appointment_details: { start_time: START + 50_000, end_time: START + 50_600 },
        patient_details: { partner_patient_id: (await row(survivor)).partner_patient_id },
      });
      const release = await hold(`select id from patients where id = '${survivor}' for update`);
      const update = call('PATCH', `/dr/v1/appointment/${booked}`, { patient_details: { partner_patient_id: dropped } });
      await sleep(300);
      const merging = merge(survivor, duplicate);
      await sleep(300);
      await release();
      const [updated, merged] = await Promise.all([update, merging]);
      assert.deepEqual([updated.statusCode, merged.statusCode], [200, 200], `${updated.body} ${merged.body}`);
    });
    it("a booking by a merged patient's partner id waits for a rename of the patient it names: the search finds the new name", async () => {
      const dropped = partnerId('st');
      const survivor = await createDr(t, client.token, { first_name: 'Oldname', last_name: 'Stalewell', mobile: '+919866677788' });
      await createDr(t, client.token, { partner_patient_id: dropped, first_name: 'Oldname' });
      assert.equal((await merge(survivor, dropped)).statusCode, 200);
      const release = await hold(`select id from patients where id = '${survivor}' for update`);
      const rename = call('PATCH', `/dr/v1/patient/${survivor}`, { first_name: 'Newname' });
      await sleep(300);
      const booking = book(t, practice, {
        appointment_details: { start_time: START + 70_000, end_time: START + 70_600 },
        patient_details: { partner_patient_id: dropped, mobile: '+919866677799' },
      });
      await sleep(300);
      await release();
      const [renamed] = await Promise.all([rename, booking]);
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.equal((await row(survivor)).first_name, 'Newname');
      const found = JSON.stringify((await call('GET', '/profiles/v1/patient/search?prefix=Newname%20Stalewell')).json());
      const stale = JSON.stringify((await call('GET', '/profiles/v1/patient/search?prefix=Oldname%20Stalewell')).json());
      assert.deepEqual([found.includes(survivor), stale.includes(survivor)], [true, false]);
    });
  });
});
