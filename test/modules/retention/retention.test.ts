/**
 * Retention leaves exactly what it should: for each rule, rows just older than their period go and rows
 * just younger, or still needed (a pending delivery, an unfinished job, a live refresh token), stay;
 * more rows than one batch go in several; metrics and the report count them; the run is queued once per
 * interval however often it is asked for.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Writable } from 'node:stream';
import { ChainSeal } from '../../../src/access-log/seal.ts';
import { appendChained } from '../../../src/access-log/store.ts';
import { EVENT_DISPATCH } from '../../../src/jobs/outbox.ts';
import { createLogger } from '../../../src/logger.ts';
import { RETENTION_JOB } from '../../../src/modules/retention/index.ts';
import { entry } from '../../access-log/support.ts';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { count, DAY, db, insertDelivery, insertEvent, insertJob, insertNotification, insertSubscription, MARGIN } from './support.ts';

const BATCH = 10;

describe(`retention (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  const logged: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged.push(String(chunk));
      done();
    },
  });
  before(async () => {
    t = await createTestApp({ env: { CPS_RETENTION_BATCH: String(BATCH) }, logger: createLogger('error', sink) });
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  const retention = () => t.modules.retention.service;
  const ids = async (table: 'jobs' | 'events' | 'webhook_deliveries' | 'push_notifications' | 'refresh_tokens', wanted: string[]) =>
    (
      await db(t)
        .selectFrom(table)
        .select('id')
        .where('id', 'in', wanted.length > 0 ? wanted : ['none'])
        .execute()
    )
      .map((row) => row.id)
      .sort();

  it('jobs: succeeded ones after CPS_RETENTION_JOBS_DAYS, failed ones after CPS_RETENTION_FAILED_JOBS_DAYS, unfinished ones never', async () => {
    const now = Date.now();
    const { jobsDays, failedJobsDays } = t.ctx.config.retention;
    const oldSucceeded = now - jobsDays * DAY - MARGIN;
    const old = await Promise.all(
      Array.from({ length: BATCH * 2 + 3 }, (_, i) =>
        insertJob(t, { status: 'succeeded', finished_at: oldSucceeded - i, created_at: oldSucceeded - DAY }),
      ),
    );
    const oldFailed = await insertJob(t, { status: 'failed', finished_at: now - failedJobsDays * DAY - MARGIN });
    const kept = [
      await insertJob(t, { status: 'succeeded', finished_at: now - jobsDays * DAY + MARGIN }),
      // Older than the succeeded jobs' period, younger than the failed ones'.
      await insertJob(t, { status: 'failed', finished_at: now - failedJobsDays * DAY + MARGIN }),
      await insertJob(t, { status: 'pending', created_at: now - 400 * DAY, due_at: now - 400 * DAY }),
      await insertJob(t, { status: 'running', created_at: now - 400 * DAY, started_at: now - 400 * DAY }),
    ];
    const report = await retention().run(undefined, now);
    assert.equal(report.pruned['jobs.succeeded'], BATCH * 2 + 3);
    assert.equal(report.pruned['jobs.failed'], 1);
    assert.deepEqual(await ids('jobs', [...old, oldFailed, ...kept]), [...kept].sort());
  });

  it('events and their delivery rows: once every delivery is settled and old; never with a pending delivery or an unfinished dispatch', async () => {
    const now = Date.now();
    const days = t.ctx.config.retention.eventsDays;
    const old = now - days * DAY - MARGIN;
    const young = now - days * DAY + MARGIN;
    const b = client.businessId;
    const sub = await insertSubscription(t, b);
    const sub2 = await insertSubscription(t, b);
    const at = (eventId: string, subscriptionId = sub) => ({ businessId: b, subscriptionId, eventId });

    const settled = await insertEvent(t, b, old);
    const settledDeliveries = [await insertDelivery(t, at(settled), 'succeeded', old), await insertDelivery(t, at(settled, sub2), 'failed', old)];
    const waiting = await insertEvent(t, b, old);
    const waitingDone = await insertDelivery(t, at(waiting), 'succeeded', old);
    const waitingPending = await insertDelivery(t, at(waiting, sub2), 'pending', old);
    const undispatched = await insertEvent(t, b, old);
    await insertJob(t, { kind: EVENT_DISPATCH, dedupe_key: undispatched, status: 'pending', due_at: old, created_at: old });
    const dispatching = await insertEvent(t, b, old);
    await insertJob(t, { kind: EVENT_DISPATCH, dedupe_key: dispatching, status: 'running', started_at: now, due_at: old, created_at: old });
    const dispatched = await insertEvent(t, b, old);
    await insertJob(t, { kind: EVENT_DISPATCH, dedupe_key: dispatched, status: 'succeeded', finished_at: now, created_at: old });
    const recent = await insertEvent(t, b, young);
    const recentDelivery = await insertDelivery(t, at(recent), 'succeeded', young);
    // An old event whose delivery was retried by hand lately: both stay.
    const retried = await insertEvent(t, b, old);
    const retriedDelivery = await insertDelivery(t, at(retried), 'succeeded', young);

    const report = await retention().run(undefined, now);
    assert.equal(report.pruned.webhook_deliveries, 3);
    assert.equal(report.pruned.events, 2);
    assert.deepEqual(
      await ids('events', [settled, waiting, undispatched, dispatching, dispatched, recent, retried]),
      [waiting, undispatched, dispatching, recent, retried].sort(),
    );
    assert.deepEqual(
      await ids('webhook_deliveries', [...settledDeliveries, waitingDone, waitingPending, recentDelivery, retriedDelivery]),
      [waitingPending, recentDelivery, retriedDelivery].sort(),
    );

    // Once the pending delivery settles and is old, the event and it go too.
    await db(t).updateTable('webhook_deliveries').set({ status: 'failed' }).where('id', '=', waitingPending).execute();
    const later = await retention().run(undefined, now);
    assert.equal(later.pruned.webhook_deliveries, 1);
    assert.equal(later.pruned.events, 1);
    assert.deepEqual(await ids('events', [waiting]), []);
  });

  it("the last event of an ordering key stays, so that the key's next event is numbered after it", async () => {
    const now = Date.now();
    const old = now - t.ctx.config.retention.eventsDays * DAY - MARGIN;
    const b = client.businessId;
    const key = 'appointment:apt_kept';
    const first = await insertEvent(t, b, old - 2, { key, sequence: 1 });
    const second = await insertEvent(t, b, old - 1, { key, sequence: 2 });
    const last = await insertEvent(t, b, old, { key, sequence: 3 });
    const report = await retention().run(undefined, now);
    assert.equal(report.pruned.events, 2);
    assert.deepEqual(await ids('events', [first, second, last]), [last]);
    const appointment = await db(t)
      .selectFrom('events')
      .select((eb) => eb.fn.max('sequence').as('last'))
      .where('business_id', '=', b)
      .where('ordering_key', '=', key)
      .executeTakeFirstOrThrow();
    assert.equal(Number(appointment.last), 3);
  });

  it('push notifications and their deliveries: once every delivery is settled and old', async () => {
    const now = Date.now();
    const days = t.ctx.config.retention.pushDays;
    const old = now - days * DAY - MARGIN;
    const young = now - days * DAY + MARGIN;
    const b = client.businessId;
    const done = await insertNotification(t, b, old, [
      { status: 'sent', updatedAt: old },
      { status: 'failed', updatedAt: old },
      { status: 'dropped', updatedAt: old },
    ]);
    const waiting = await insertNotification(t, b, old, [
      { status: 'sent', updatedAt: old },
      { status: 'pending', updatedAt: old },
    ]);
    const recent = await insertNotification(t, b, young, [{ status: 'sent', updatedAt: young }]);
    const report = await retention().run(undefined, now);
    assert.equal(report.pruned.push_deliveries, 4);
    assert.equal(report.pruned.push_notifications, 1);
    assert.deepEqual(await ids('push_notifications', [done, waiting, recent]), [waiting, recent].sort());
    const left = await db(t)
      .selectFrom('push_deliveries')
      .select(['notification_id', 'status'])
      .where('notification_id', 'in', [done, waiting, recent])
      .execute();
    assert.deepEqual(left.map((row) => `${row.notification_id}:${row.status}`).sort(), [`${waiting}:pending`, `${recent}:sent`].sort());
  });

  it('refresh tokens: expired or revoked longer ago than the period; live and spent-but-unexpired ones stay', async () => {
    const now = Date.now();
    const days = t.ctx.config.retention.refreshTokensDays;
    const old = now - days * DAY - MARGIN;
    const young = now - days * DAY + MARGIN;
    const token = async (fields: { expires_at: number; used_at?: number; revoked_at?: number }, family = 'rtf_live') => {
      const id = `rt_${Math.random().toString(36).slice(2)}`;
      await db(t)
        .insertInto('refresh_tokens')
        .values({
          id,
          token_hash: id,
          family_id: family,
          client_id: client.clientId,
          business_id: client.businessId,
          created_at: now - 60 * DAY,
          used_at: null,
          revoked_at: null,
          ...fields,
        })
        .execute();
      return id;
    };
    const gone = [await token({ expires_at: old }), await token({ expires_at: now + DAY, revoked_at: old }, 'rtf_revoked')];
    const kept = [
      await token({ expires_at: now + DAY }),
      // Spent: presented again before it expires, it must still revoke its family.
      await token({ expires_at: now + DAY, used_at: old }),
      await token({ expires_at: young }),
      await token({ expires_at: now + DAY, revoked_at: young }, 'rtf_revoked'),
    ];
    const report = await retention().run(undefined, now);
    assert.equal(report.pruned['refresh_tokens.expired'], 1);
    assert.equal(report.pruned['refresh_tokens.revoked'], 1);
    assert.deepEqual(await ids('refresh_tokens', [...gone, ...kept]), [...kept].sort());
  });

  it('idempotency keys, case and document tombstones, schedule tokens and stale job locks: each after its own period', async () => {
    const now = Date.now();
    const r = t.ctx.config.retention;
    const b = client.businessId;
    const before = (days: number) => now - days * DAY - MARGIN;
    const within = (days: number) => now - days * DAY + MARGIN;
    const key = (name: string, expiresAt: number) => ({
      business_id: b,
      idempotency_key: name,
      fingerprint: 'f',
      claim: null,
      claimed_until: null,
      status: 201,
      content_type: 'application/json',
      body: 'sealed',
      created_at: expiresAt - DAY,
      expires_at: expiresAt,
    });
    await db(t)
      .insertInto('idempotency_keys')
      .values([key('expired', before(r.idempotencyKeysDays)), key('live', now + MARGIN)])
      .execute();
    const item = (id: string, status: 'A' | 'D', updatedAt: number) => ({
      business_id: b,
      patient_ref: 'pt-1',
      id,
      status,
      display_name: status === 'A' ? 'Blood test' : null,
      type: null,
      hi_type: null,
      partner_meta: null,
      occurred_at: null,
      created_at: updatedAt,
      updated_at: updatedAt,
    });
    await db(t)
      .insertInto('cases')
      .values([
        item('old-tombstone', 'D', before(r.caseTombstonesDays)),
        item('young-tombstone', 'D', within(r.caseTombstonesDays)),
        item('old-active', 'A', before(r.caseTombstonesDays) - 100 * DAY),
      ])
      .execute();
    const doc = (id: string, status: 'A' | 'D', updatedAt: number) => ({
      business_id: b,
      id,
      patient_ref: 'pt-1',
      status,
      source: 'form',
      dt: null,
      document_date: null,
      tags: '[]',
      title: null,
      cases: '[]',
      task: null,
      created_at: updatedAt,
      updated_at: updatedAt,
      upload_until: null,
    });
    await db(t)
      .insertInto('documents')
      .values([
        doc('doc-old-tombstone', 'D', before(r.documentTombstonesDays)),
        doc('doc-old-tombstone-unswept', 'D', before(r.documentTombstonesDays)),
        doc('doc-young-tombstone', 'D', within(r.documentTombstonesDays)),
        doc('doc-old-active', 'A', before(r.documentTombstonesDays) - 100 * DAY),
      ])
      .execute();
    // Its file's bytes not yet removed by the sweep: the tombstone waits for them.
    await db(t)
      .insertInto('document_files')
      .values({
        business_id: b,
        document_id: 'doc-old-tombstone-unswept',
        idx: 0,
        form_id: 'f',
        state: 'removing',
        content_type: 'application/pdf',
        declared_size: 10,
        size: 10,
        file_name: null,
        store: null,
        storage_key: null,
        claimed_at: null,
        stored_at: null,
      })
      .execute();
    const session = (start: number) => ({ business_id: b, clinic_id: 'cl', doctor_id: 'dr', session_start: start, last_token: 3 });
    await db(t)
      .insertInto('schedule_tokens')
      .values([session(before(r.scheduleTokensDays)), session(within(r.scheduleTokensDays)), session(now + DAY)])
      .execute();
    await db(t)
      .insertInto('job_locks')
      .values([
        { name: 'stale', owner: 'gone', expires_at: before(1) },
        { name: 'fresh', owner: 'here', expires_at: within(1) },
      ])
      .execute();

    const report = await retention().run(undefined, now);
    assert.equal(report.pruned.idempotency_keys, 1);
    assert.equal(report.pruned['cases.tombstones'], 1);
    assert.equal(report.pruned['documents.tombstones'], 1);
    const documents = await db(t).selectFrom('documents').select('id').where('business_id', '=', b).orderBy('id').execute();
    assert.deepEqual(
      documents.map((row) => row.id),
      ['doc-old-active', 'doc-old-tombstone-unswept', 'doc-young-tombstone'],
    );
    assert.equal(report.pruned.schedule_tokens, 1);
    assert.equal(report.pruned.job_locks, 1);
    const keys = await db(t).selectFrom('idempotency_keys').select('idempotency_key').where('business_id', '=', b).execute();
    assert.deepEqual(
      keys.map((row) => row.idempotency_key),
      ['live'],
    );
    const cases = await db(t).selectFrom('cases').select('id').where('business_id', '=', b).orderBy('id').execute();
    assert.deepEqual(
      cases.map((row) => row.id),
      ['old-active', 'young-tombstone'],
    );
    const sessions = await db(t)
      .selectFrom('schedule_tokens')
      .select('session_start')
      .where('business_id', '=', b)
      .orderBy('session_start')
      .execute();
    assert.deepEqual(
      sessions.map((row) => Number(row.session_start)),
      [within(r.scheduleTokensDays), now + DAY],
    );
    const locks = await db(t).selectFrom('job_locks').select('name').execute();
    assert.deepEqual(
      locks.map((row) => row.name),
      ['fresh'],
    );
  });

  it("a webhook delivery's attempts: each once it finished longer ago than CPS_RETENTION_EVENTS_DAYS", async () => {
    const now = Date.now();
    const days = t.ctx.config.retention.eventsDays;
    const old = now - days * DAY - MARGIN;
    const young = now - days * DAY + MARGIN;
    const b = client.businessId;
    const delivery = await insertDelivery(
      t,
      { businessId: b, subscriptionId: await insertSubscription(t, b), eventId: await insertEvent(t, b, young) },
      'failed',
      young,
    );
    const attempt = (n: number, finishedAt: number) => ({
      delivery_id: delivery,
      attempt: n,
      business_id: b,
      started_at: finishedAt - 1000,
      finished_at: finishedAt,
      duration_ms: 1000,
      status_code: 503,
      error: 'HTTP 503',
    });
    await db(t)
      .insertInto('webhook_delivery_attempts')
      .values([attempt(1, old - 1), attempt(2, old), attempt(3, young)])
      .execute();
    const report = await retention().run(undefined, now);
    assert.equal(report.pruned.webhook_delivery_attempts, 2);
    const left = await db(t).selectFrom('webhook_delivery_attempts').select('attempt').where('delivery_id', '=', delivery).execute();
    assert.deepEqual(
      left.map((row) => row.attempt),
      [3],
    );
  });

  it("a patient's export once its link expired, whatever its period; one still downloadable stays", async () => {
    const now = Date.now();
    const b = client.businessId;
    const exported = (id: string, expiresAt: number) => ({
      id,
      business_id: b,
      patient_id: 'pt_1',
      client_id: client.clientId,
      status: 'ready' as const,
      document: 'sealed',
      created_at: expiresAt - DAY,
      ready_at: expiresAt - DAY,
      expires_at: expiresAt,
      downloaded_at: null,
    });
    await db(t)
      .insertInto('privacy_exports')
      .values([exported('pex_expired', now - MARGIN), exported('pex_live', now + MARGIN)])
      .execute();
    const report = await retention().run(undefined, now);
    assert.equal(report.pruned.privacy_exports, 1);
    const left = await db(t).selectFrom('privacy_exports').select('id').where('business_id', '=', b).execute();
    assert.deepEqual(
      left.map((row) => row.id),
      ['pex_live'],
    );
  });

  it('access log entries older than CPS_RETENTION_ACCESS_LOG_DAYS go up to a broken link, which stays and is logged', async () => {
    const now = Date.now();
    const cutoff = now - t.ctx.config.retention.accessLogDays * DAY;
    const seal = new ChainSeal(t.ctx.keys.masterKey);
    const { businessId } = await createTestClient(t.ctx);
    await appendChained(db(t), seal, businessId, [
      ...Array.from({ length: 5 }, (_, i) => entry(businessId, cutoff - MARGIN - 5 + i)),
      entry(businessId, cutoff + MARGIN),
    ]);
    const whole = (await createTestClient(t.ctx)).businessId;
    await appendChained(db(t), seal, whole, [entry(whole, cutoff - MARGIN), entry(whole, cutoff + MARGIN), entry(whole, cutoff + MARGIN + 1)]);
    await db(t).updateTable('access_log').set({ client_id: 'someone-else' }).where('business_id', '=', businessId).where('seq', '=', 4).execute();
    logged.length = 0;
    const report = await retention().run(undefined, now);
    assert.equal(report.pruned.access_log, 4);
    const seqs = async (business: string) =>
      (await db(t).selectFrom('access_log').select('seq').where('business_id', '=', business).orderBy('seq').execute()).map((row) => Number(row.seq));
    assert.deepEqual(await seqs(businessId), [4, 5, 6]);
    assert.deepEqual(await seqs(whole), [2, 3]);
    const errors = logged.map((line) => JSON.parse(line)).filter((line) => line.business_id === businessId);
    assert.deepEqual(
      errors.map((line) => [line.seq, line.msg]),
      [[4, 'retention: the access log chain is broken here; not pruned past it']],
    );
  });

  it('a run with nothing old deletes nothing, counts rows per table in cps_retention_pruned_rows_total and stops when aborted', async () => {
    const report = await retention().run();
    assert.equal(report.total, 0);
    assert.ok(Object.values(report.pruned).every((n) => n === 0));
    const metric = await t.ctx.metrics.getSingleMetric('cps_retention_pruned_rows_total')!.get();
    const byRule = Object.fromEntries(metric.values.map((v) => [v.labels.rule, v.value]));
    // What the tests above pruned.
    assert.equal(byRule['jobs.succeeded'], BATCH * 2 + 3);
    assert.equal(byRule.events, 5);
    assert.equal(byRule.push_deliveries, 4);
    assert.equal(metric.values.find((v) => v.labels.rule === 'events')?.labels.table, 'events');
    assert.equal(metric.values.find((v) => v.labels.rule === 'access_log')?.labels.table, 'access_log');

    const aborted = new AbortController();
    aborted.abort(new Error('stop'));
    await assert.rejects(retention().run(aborted.signal), /stop/);
  });

  it('the run is queued once per interval, however many processes start; the job runs the rules', async () => {
    await Promise.all([t.modules.retention.start!(), t.modules.retention.start!()]);
    const jobs = await db(t).selectFrom('jobs').selectAll().where('kind', '=', RETENTION_JOB).execute();
    assert.equal(jobs.length, 1);
    const every = t.ctx.config.retention.intervalMinutes * 60_000;
    assert.equal(Number(jobs[0]!.due_at) % every, 0);
    assert.ok(Number(jobs[0]!.due_at) > Date.now() && Number(jobs[0]!.due_at) <= Date.now() + every);

    const stale = await insertJob(t, { status: 'succeeded', finished_at: Date.now() - t.ctx.config.retention.jobsDays * DAY - MARGIN });
    await db(t).updateTable('jobs').set({ due_at: Date.now() }).where('kind', '=', RETENTION_JOB).execute();
    await t.ctx.jobs.runDue();
    const ran = await db(t).selectFrom('jobs').select('status').where('kind', '=', RETENTION_JOB).execute();
    assert.deepEqual(
      ran.map((row) => row.status),
      ['succeeded'],
    );
    assert.deepEqual(await ids('jobs', [stale]), []);
    assert.ok((await count(t, 'jobs')) >= 1);
  });
});
