import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { encrypt } from '../../../src/security/encryption.ts';
import { bearer, DIALECT } from '../../support.ts';
import { INVALID_TOKEN, UNREGISTERED, unavailable } from './fakes.ts';
import { createPushTest, type PushTest } from './support.ts';

describe(`push delivery over FCM HTTP v1 (${DIALECT})`, () => {
  let t: PushTest;
  let seq = 0;
  const token = (did: string) => `fcm-${did}-0123456789abcdefghijklmnopqrstuvwxyz`;
  const addDevice = (did: string, patient: string) =>
    t.post('/notification/add-device', { devicePayload: { did, 'fcm-id': token(did), 'app-version': '1' } }, undefined, { 'x-pt-id': patient });
  /** Registers the devices for a fresh patient, sends to them and runs the jobs. */
  async function sendTo(dids: string[], data?: Record<string, string>) {
    const patient = `pt-${++seq}`;
    for (const did of dids) await addDevice(did, patient);
    const sent = await t.post('/notification/send', { patient_id: patient, title: 'Hello', body: 'Your report is ready', ...(data ? { data } : {}) });
    assert.equal(sent.statusCode, 202, sent.body);
    const id = sent.json().notification_id as string;
    await t.deliver();
    return { id, report: async () => (await t.get(`/notification/send/${id}`)).json() };
  }
  const requestsFor = (did: string) => t.fcm.requests.filter((r) => r.message.token === token(did));

  before(async () => {
    t = await createPushTest();
    assert.equal((await t.post('/notification/push-creds', { sa_key: t.saKey() })).statusCode, 200);
  });
  after(async () => t.close());

  describe('happy', () => {
    it('sends to every device; a dead token drops its device; one access token serves all', async () => {
      t.fcm.byToken.set(token('gone'), [UNREGISTERED]);
      t.fcm.byToken.set(token('bogus'), [INVALID_TOKEN]);
      const { report } = await sendTo(['ok', 'gone', 'bogus'], { kind: 'report' });
      const body = await report();
      assert.equal(body.status, 'partial');
      assert.deepEqual(body.devices, [
        { did: 'bogus', status: 'dropped', error: 'INVALID_ARGUMENT' },
        { did: 'gone', status: 'dropped', error: 'UNREGISTERED' },
        { did: 'ok', status: 'sent', error: null },
      ]);
      const devices = await t.ctx.storage.db.selectFrom('push_devices').select('did').where('business_id', '=', t.client.businessId).execute();
      assert.deepEqual(
        devices.map((d) => d.did),
        ['ok'],
        'dropped devices are removed',
      );

      const request = requestsFor('ok')[0]!;
      assert.equal(request.project, 'demo-project');
      assert.deepEqual(request.message, {
        token: token('ok'),
        notification: { title: 'Hello', body: 'Your report is ready' },
        data: { kind: 'report' },
      });
      assert.equal(t.oauth.rejected.length, 0);
      assert.equal(t.oauth.verified.length, 1, 'the assertion verified once; the token reused for all three');
      assert.equal(t.oauth.verified[0]!.payload.iss, 'fcm-sender@demo-project.iam.gserviceaccount.com');
      assert.equal(t.oauth.verified[0]!.header.kid, 'kid-0123456789abcdef');
    });

    it('a 503 is retried and then delivered', async () => {
      t.fcm.byToken.set(token('flaky'), [unavailable('0'), { status: 200, body: { name: 'projects/demo-project/messages/9' } }]);
      const { report } = await sendTo(['flaky']);
      assert.deepEqual(await report(), {
        notification_id: (await report()).notification_id,
        status: 'sent',
        devices: [{ did: 'flaky', status: 'sent', error: null }],
      });
      assert.equal(requestsFor('flaky').length, 2);
    });

    it('answers Retry-After: the delivery waits at least that long', async () => {
      t.fcm.byToken.set(token('busy'), [unavailable('120')]);
      const before = Date.now();
      const { id, report } = await sendTo(['busy']);
      assert.deepEqual((await report()).devices, [{ did: 'busy', status: 'pending', error: 'FCM 503 UNAVAILABLE' }]);
      const job = await t.ctx.storage.db
        .selectFrom('jobs')
        .select(['status', 'due_at'])
        .where('kind', '=', 'push.deliver')
        .where('payload', 'like', `%${id}%`)
        .executeTakeFirstOrThrow();
      assert.equal(job.status, 'pending');
      assert.ok(job.due_at >= before + 120_000, 'due no sooner than Retry-After');
    });

    it('gives up after the retry schedule: failed with the last error', async () => {
      t.fcm.byToken.set(token('down'), [unavailable()]);
      const { report } = await sendTo(['down']);
      assert.deepEqual((await report()).devices, [{ did: 'down', status: 'failed', error: 'FCM 503 UNAVAILABLE' }]);
      assert.equal(requestsFor('down').length, 3, 'CPS_PUSH_RETRY_SCHEDULE=0,0: three attempts');
    });

    it('a sent delivery is not sent again when its job runs again', async () => {
      const { id } = await sendTo(['once']);
      await t.ctx.storage.db.updateTable('jobs').set({ status: 'pending', due_at: Date.now() }).where('payload', 'like', `%${id}%`).execute();
      await t.deliver();
      assert.equal(requestsFor('once').length, 1);
    });

    it('counts outcomes in /metrics', async () => {
      const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
      assert.match(metrics.body, /cps_push_deliveries_total\{outcome="sent"\} \d+/);
      assert.match(metrics.body, /cps_push_deliveries_total\{outcome="dropped"\} 2/);
    });
  });

  describe('errors', () => {
    it('a device removed before delivery is dropped; missing or unreadable credentials fail', async () => {
      const patient = `pt-${++seq}`;
      await addDevice('leaving', patient);
      await addDevice('staying', patient);
      const sent = await t.post('/notification/send', { patient_id: patient, title: 'T', body: 'B' });
      await t.app.inject({ method: 'DELETE', url: '/notification/delete-device', headers: { ...bearer(t.client.token), 'device-id': 'leaving' } });
      // Sealed under another master key, as after CPS_MASTER_KEY changed.
      const row = await t.ctx.storage.db
        .selectFrom('push_credentials')
        .selectAll()
        .where('business_id', '=', t.client.businessId)
        .executeTakeFirstOrThrow();
      await t.ctx.storage.db
        .updateTable('push_credentials')
        .set({ sealed: encrypt(randomBytes(32), 'x', t.client.businessId) })
        .where('business_id', '=', t.client.businessId)
        .execute();
      await t.deliver();
      assert.deepEqual((await t.get(`/notification/send/${sent.json().notification_id}`)).json().devices, [
        { did: 'leaving', status: 'dropped', error: 'device removed' },
        { did: 'staying', status: 'failed', error: 'stored push credentials cannot be decrypted; save them again' },
      ]);
      await t.ctx.storage.db.updateTable('push_credentials').set({ sealed: row.sealed }).where('business_id', '=', t.client.businessId).execute();

      const again = await t.post('/notification/send', { device_ids: ['staying'], title: 'T', body: 'B' });
      await t.app.inject({ method: 'DELETE', url: '/notification/push-creds', headers: bearer(t.client.token) });
      await t.deliver();
      assert.deepEqual((await t.get(`/notification/send/${again.json().notification_id}`)).json().devices, [
        { did: 'staying', status: 'failed', error: 'push credentials are not configured' },
      ]);
      assert.equal((await t.post('/notification/push-creds', { sa_key: t.saKey() })).statusCode, 200);
    });
  });

  describe('security', () => {
    it('logs hold neither the private key, nor device tokens, nor access tokens', async () => {
      const text = t.logs.join('');
      assert.ok(text.includes('push dropped'), 'delivery outcomes are logged');
      for (const line of t.key.pem.split('\n').filter((l) => l.length > 20 && !l.startsWith('-----'))) assert.ok(!text.includes(line.slice(0, 24)));
      for (const did of ['ok', 'gone', 'flaky', 'busy', 'down']) assert.ok(!text.includes(token(did)), `token of ${did} logged`);
      assert.ok(!text.includes('ya29.fake'), 'access token logged');
    });
  });
});

describe(`push delivery with the workers running (${DIALECT})`, () => {
  it('a send is delivered in the background, without anyone driving the queue', async () => {
    const t = await createPushTest();
    try {
      await t.post('/notification/push-creds', { sa_key: t.saKey() });
      await t.post('/notification/add-device', { devicePayload: { did: 'bg', 'fcm-id': 'fcm-bg-token', 'app-version': '1' } }, undefined, {
        'x-pt-id': 'pt-bg',
      });
      await t.ctx.jobs.start();
      const id = (await t.post('/notification/send', { patient_id: 'pt-bg', title: 'T', body: 'B' })).json().notification_id;
      let status = 'pending';
      while (status === 'pending') {
        await new Promise((resolve) => setTimeout(resolve, 20));
        status = (await t.get(`/notification/send/${id}`)).json().status;
      }
      assert.equal(status, 'sent');
      assert.equal(t.fcm.requests.length, 1);
    } finally {
      await t.close();
    }
  });
});

describe(`push delivery through a database error (${DIALECT})`, () => {
  it('a failure to read the credentials is retried, not taken for unreadable credentials and failed for good', async () => {
    const t = await createPushTest({ CPS_PUSH_RETRY_SCHEDULE: '3600' });
    const db = t.ctx.storage.db;
    try {
      await t.post('/notification/push-creds', { sa_key: t.saKey() });
      await t.post('/notification/add-device', { devicePayload: { did: 'dbe', 'fcm-id': 'fcm-dbe-token', 'app-version': '1' } }, undefined, {
        'x-pt-id': 'pt-dbe',
      });
      const id = (await t.post('/notification/send', { patient_id: 'pt-dbe', title: 'T', body: 'B' })).json().notification_id;
      // The one statement that reads the credentials fails (a stand-in for a dropped connection or a
      // statement timeout); the statements before and after it work.
      await sql`alter table push_credentials rename to push_credentials_away`.execute(db);
      try {
        await t.deliver();
      } finally {
        await sql`alter table push_credentials_away rename to push_credentials`.execute(db);
      }
      const report = (await t.get(`/notification/send/${id}`)).json();
      assert.deepEqual(report.devices, [{ did: 'dbe', status: 'pending', error: null }], 'the delivery waits for its retry');
      await db.updateTable('jobs').set({ due_at: Date.now() }).where('kind', '=', 'push.deliver').where('status', '=', 'pending').execute();
      await t.deliver();
      assert.equal((await t.get(`/notification/send/${id}`)).json().status, 'sent');
    } finally {
      await t.close();
    }
  });
});
