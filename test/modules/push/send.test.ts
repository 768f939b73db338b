import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { overallStatus } from '../../../src/modules/push/service.ts';
import { createTestClient, DIALECT } from '../../support.ts';
import { createPushTest, type PushTest } from './support.ts';

describe(`push send bookkeeping (${DIALECT})`, () => {
  let t: PushTest;
  const addDevice = (did: string, patient?: string, token = t.client.token) =>
    t.post(
      '/notification/add-device',
      { devicePayload: { did, 'fcm-id': `tok-${did}`, 'app-version': '1' } },
      token,
      patient ? { 'x-pt-id': patient } : {},
    );

  before(async () => {
    t = await createPushTest();
    await t.post('/notification/push-creds', { sa_key: t.saKey() });
    await addDevice('p1-a', 'pt-1');
    await addDevice('p1-b', 'pt-1');
    await addDevice('p2-a', 'pt-2');
  });
  after(async () => t.close());

  describe('limits', () => {
    it('a send to a patient with more than 20 devices (joined by a merge) reaches the 20 most recently registered', async () => {
      const now = Date.now();
      const rows = Array.from({ length: 25 }, (_, i) => ({
        id: `dev_merged_${i}`,
        business_id: t.client.businessId,
        did: `merged-${String(i).padStart(2, '0')}`,
        fcm_token: `tok-merged-${i}`,
        app_version: '1',
        patient_ref: 'pt-merged',
        created_at: now - 100_000 + i,
        updated_at: now - 100_000 + i,
      }));
      await t.ctx.storage.db.insertInto('push_devices').values(rows).execute();
      const sent = await t.post('/notification/send', { patient_id: 'pt-merged', title: 'T', body: 'B' });
      assert.equal(sent.statusCode, 202, sent.body);
      const report = (await t.get(`/notification/send/${sent.json().notification_id}`)).json();
      assert.deepEqual(
        report.devices.map((d: { did: string }) => d.did),
        rows.slice(5).map((r) => r.did),
      );
    });
  });

  describe('happy', () => {
    it("202 for a patient's devices; the report lists each device pending", async () => {
      const sent = await t.post('/notification/send', {
        patient_id: 'pt-1',
        title: 'Reminder',
        body: 'Your appointment is tomorrow',
        data: { appointment_id: 'ap_1' },
      });
      assert.equal(sent.statusCode, 202, sent.body);
      const { notification_id } = sent.json();
      assert.equal(typeof notification_id, 'string');
      const report = await t.get(`/notification/send/${notification_id}`);
      assert.equal(report.statusCode, 200);
      assert.deepEqual(report.json(), {
        notification_id,
        status: 'pending',
        devices: [
          { did: 'p1-a', status: 'pending', error: null },
          { did: 'p1-b', status: 'pending', error: null },
        ],
      });
      const jobs = await t.ctx.storage.db.selectFrom('jobs').select(['kind', 'business_id']).where('kind', '=', 'push.deliver').execute();
      assert.ok(jobs.length >= 2, 'one delivery job per device, stored with the notification');
    });

    it('202 for listed devices, duplicates once', async () => {
      const sent = await t.post('/notification/send', { device_ids: ['p2-a', 'p1-a', 'p2-a'], title: 'T', body: 'B' });
      assert.equal(sent.statusCode, 202);
      const report = (await t.get(`/notification/send/${sent.json().notification_id}/`)).json();
      assert.deepEqual(
        report.devices.map((d: { did: string }) => d.did),
        ['p1-a', 'p2-a'],
      );
    });

    it('the overall status follows the devices', () => {
      assert.equal(overallStatus(['sent', 'pending']), 'pending');
      assert.equal(overallStatus(['sent', 'sent']), 'sent');
      assert.equal(overallStatus(['sent', 'dropped']), 'partial');
      assert.equal(overallStatus(['failed', 'dropped']), 'failed');
    });
  });

  describe('errors', () => {
    it('400: neither or both targets, empty title, non-string data, reserved data keys, too large', async () => {
      const cases: Array<[unknown, RegExp]> = [
        [{ title: 'T', body: 'B' }, /exactly one of patient_id or device_ids/],
        [{ patient_id: 'pt-1', device_ids: ['p1-a'], title: 'T', body: 'B' }, /exactly one of patient_id or device_ids/],
        [{ patient_id: 'pt-1', title: '', body: 'B' }, /title/],
        [{ patient_id: 'pt-1', body: 'B' }, /title: This field is required/],
        [{ patient_id: 'pt-1', title: 'T', body: 'B', data: { n: 5 } }, /data\.n: must be a string/],
        [{ patient_id: 'pt-1', title: 'T', body: 'B', data: { from: 'x' } }, /reserved key/],
        [{ patient_id: 'pt-1', title: 'T', body: 'B', data: { big: 'x'.repeat(5000) } }, /exceed/],
        [{ device_ids: [], title: 'T', body: 'B' }, /device_ids/],
      ];
      for (const [body, message] of cases) {
        const response = await t.post('/notification/send', body);
        assert.equal(response.statusCode, 400, JSON.stringify(body));
        assert.equal(response.json().error_code, 400);
        assert.match(response.json().message, message);
      }
    });

    it('404: unknown devices, a patient without devices, an unknown notification', async () => {
      const unknown = await t.post('/notification/send', { device_ids: ['p1-a', 'ghost'], title: 'T', body: 'B' });
      assert.equal(unknown.statusCode, 404);
      assert.deepEqual(unknown.json(), { message: 'Unknown device: ghost', error_code: 404 });
      assert.equal((await t.post('/notification/send', { patient_id: 'nobody', title: 'T', body: 'B' })).statusCode, 404);
      const missing = await t.get('/notification/send/ntf_unknown');
      assert.deepEqual(missing.json(), { message: 'Unknown notification: ntf_unknown', error_code: 404 });
    });

    it('400 when the business has no push credentials', async () => {
      const other = await createTestClient(t.ctx);
      await addDevice('x', 'pt-x', other.token);
      const response = await t.post('/notification/send', { patient_id: 'pt-x', title: 'T', body: 'B' }, other.token);
      assert.equal(response.statusCode, 400);
      assert.match(response.json().message, /credentials are not configured/);
    });

    it('401 and 403', async () => {
      assert.equal((await t.app.inject({ method: 'POST', url: '/notification/send', payload: {} })).statusCode, 401);
      assert.equal((await t.app.inject({ method: 'GET', url: '/notification/send/x' })).statusCode, 401);
      const other = await createTestClient(t.ctx, { scopes: ['webhook:admin'], businessId: t.client.businessId });
      assert.equal((await t.post('/notification/send', {}, other.token)).json().error_code, 403);
      assert.equal((await t.get('/notification/send/x', other.token)).json().error_code, 403);
    });
  });

  describe('security', () => {
    it("another business's devices, patients and notifications answer as unknown", async () => {
      const mine = (await t.post('/notification/send', { patient_id: 'pt-2', title: 'T', body: 'B' })).json().notification_id;
      const other = await createTestClient(t.ctx);
      await t.post('/notification/push-creds', { sa_key: t.saKey() }, other.token);
      assert.deepEqual((await t.get(`/notification/send/${mine}`, other.token)).json(), {
        message: `Unknown notification: ${mine}`,
        error_code: 404,
      });
      assert.deepEqual((await t.post('/notification/send', { device_ids: ['p2-a'], title: 'T', body: 'B' }, other.token)).json(), {
        message: 'Unknown device: p2-a',
        error_code: 404,
      });
      assert.equal((await t.post('/notification/send', { patient_id: 'pt-2', title: 'T', body: 'B' }, other.token)).statusCode, 404);
    });
  });
});
