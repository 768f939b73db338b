import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestClient, DIALECT } from '../../support.ts';
import { createPushTest, type PushTest } from './support.ts';

function device(did: string, token = `fcm-token-${did}-0123456789abcdefghijklmnopqrstuvwxyz`, extra: Record<string, string> = {}) {
  return { devicePayload: { did, 'fcm-id': token, 'app-version': '1.2.3', 'app-platform': 'android', lang: 'en', ...extra } };
}

describe(`push devices (${DIALECT})`, () => {
  let t: PushTest;
  const del = (did: string, token = t.client.token) =>
    t.app.inject({ method: 'DELETE', url: '/notification/delete-device', headers: { ...bearer(token), 'device-id': did } });
  const row = (did: string, businessId = t.client.businessId) =>
    t.ctx.storage.db.selectFrom('push_devices').selectAll().where('business_id', '=', businessId).where('did', '=', did).executeTakeFirst();

  before(async () => {
    t = await createPushTest();
  });
  after(async () => t.close());

  describe('happy', () => {
    it('adds a device, tied to a patient by X-Pt-Id, and upserts by did', async () => {
      const added = await t.post('/notification/add-device', device('d-1'), undefined, { 'x-pt-id': 'pt-77' });
      assert.equal(added.statusCode, 200);
      assert.deepEqual(added.json(), { success: true });
      const stored = await row('d-1');
      assert.equal(stored?.patient_ref, 'pt-77');
      assert.equal(stored?.app_platform, 'android');

      const again = await t.post('/notification/add-device', device('d-1', 'fcm-token-new', { 'os-version': '14' }), undefined, {
        'x-pt-id': 'pt-78',
      });
      assert.equal(again.statusCode, 200);
      const updated = await row('d-1');
      assert.equal(updated?.fcm_token, 'fcm-token-new');
      assert.equal(updated?.patient_ref, 'pt-78');
      assert.equal(updated?.os_version, '14');
      assert.equal(updated?.id, stored?.id, 'same device row');
      const count = await t.ctx.storage.db
        .selectFrom('push_devices')
        .select('did')
        .where('business_id', '=', t.client.businessId)
        .where('did', '=', 'd-1')
        .execute();
      assert.equal(count.length, 1);

      // Registering again without X-Pt-Id unties it (the device may have changed hands).
      await t.post('/notification/add-device', device('d-1'));
      assert.equal((await row('d-1'))?.patient_ref, null);
    });

    it('deletes a device', async () => {
      await t.post('/notification/add-device', device('d-2'));
      const removed = await del('d-2');
      assert.equal(removed.statusCode, 200);
      assert.deepEqual(removed.json(), { success: true });
      assert.equal(await row('d-2'), undefined);
    });
  });

  describe('limits', () => {
    it('a patient keeps their 20 most recently registered devices', async () => {
      const dids = Array.from({ length: 22 }, (_, i) => `cap-${String(i).padStart(2, '0')}`);
      for (const did of dids) {
        assert.equal((await t.post('/notification/add-device', device(did), undefined, { 'x-pt-id': 'pt-many' })).statusCode, 200);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      // The first one registers again: it is recent now, and the next oldest goes instead.
      await t.post('/notification/add-device', device('cap-00'), undefined, { 'x-pt-id': 'pt-many' });
      const kept = await t.ctx.storage.db
        .selectFrom('push_devices')
        .select('did')
        .where('business_id', '=', t.client.businessId)
        .where('did', 'like', 'cap-%')
        .orderBy('did')
        .execute();
      assert.deepEqual(
        kept.map((r) => r.did),
        ['cap-00', ...dids.slice(3)],
      );
    });
  });

  describe('errors', () => {
    it('400 for a missing or malformed devicePayload, naming the fields', async () => {
      const missing = await t.post('/notification/add-device', { devicePayload: { did: 'x' } });
      assert.equal(missing.statusCode, 400);
      assert.match(missing.json().message, /devicePayload\.fcm-id: This field is required\./);
      assert.match(missing.json().message, /devicePayload\.app-version/);
      const typed = await t.post('/notification/add-device', { devicePayload: { did: 5, 'fcm-id': 't', 'app-version': '1' } });
      assert.equal(typed.statusCode, 400);
      assert.match(typed.json().message, /devicePayload\.did: must be a string/);
      assert.equal((await t.post('/notification/add-device', {})).json().error_code, 400);
    });

    it('delete: 400 without the device-id header, 404 for an unknown device', async () => {
      const noHeader = await t.app.inject({ method: 'DELETE', url: '/notification/delete-device', headers: bearer(t.client.token) });
      assert.equal(noHeader.statusCode, 400);
      assert.match(noHeader.json().message, /device-id/);
      const unknown = await del('nope');
      assert.equal(unknown.statusCode, 404);
      assert.deepEqual(unknown.json(), { message: 'Unknown device: nope', error_code: 404 });
    });

    it('401 and 403 before validation', async () => {
      assert.equal((await t.app.inject({ method: 'POST', url: '/notification/add-device', payload: {} })).json().error_code, 401);
      const other = await createTestClient(t.ctx, { scopes: ['cases:read'], businessId: t.client.businessId });
      assert.equal((await t.post('/notification/add-device', {}, other.token)).statusCode, 403);
      assert.equal((await del('x', other.token)).statusCode, 403);
    });
  });

  describe('security', () => {
    it("another business's device answers as unknown and is untouched", async () => {
      await t.post('/notification/add-device', device('shared-did'), undefined, { 'x-pt-id': 'pt-a' });
      const other = await createTestClient(t.ctx);
      const response = await del('shared-did', other.token);
      assert.equal(response.statusCode, 404);
      assert.deepEqual(response.json(), { message: 'Unknown device: shared-did', error_code: 404 });
      // The same did in another business is another device.
      await t.post('/notification/add-device', device('shared-did', 'other-token'), other.token);
      assert.equal((await row('shared-did'))?.fcm_token, device('shared-did').devicePayload['fcm-id']);
      assert.equal((await row('shared-did', other.businessId))?.fcm_token, 'other-token');
    });

    it('device tokens and patient ids stay out of the logs', async () => {
      const token = 'fcm-secret-token-zyxwvutsrqponmlkjihgfedcba';
      await t.post('/notification/add-device', device('d-log', token), undefined, { 'x-pt-id': 'pt-secret-99' });
      const text = t.logs.join('');
      assert.ok(!text.includes(token));
      assert.ok(!text.includes('pt-secret-99'));
    });
  });
});
