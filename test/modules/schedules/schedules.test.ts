/** Schedule CRUD under /cdr/v1/doctor/{doctor_id}/clinic/{clinic_id}/schedule: the clinics family. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp } from '../../support.ts';
import { createPractice, events, request, type Practice } from '../appointments/support.ts';
import { assertEventBody } from '../webhooks/event-schemas.ts';
import { schedulePath, setSchedule, WEEKLY } from './support.ts';

describe(`schedules: CRUD (${DIALECT})`, () => {
  let t: TestApp;
  let p: Practice;
  before(async () => {
    t = await createTestApp();
    p = await createPractice(t);
  });
  after(async () => t.close());

  const call = (method: string, url: string, payload?: unknown, token = p.client.token) => request(t, token, method, url, payload);

  it('records schedule.updated (created, then replaced) and schedule.deleted, in the change’s transaction', async () => {
    const q = await createPractice(t);
    const first = await setSchedule(t, q);
    await setSchedule(t, q, { ...WEEKLY, capacity: 5 });
    assert.equal((await request(t, q.client.token, 'DELETE', schedulePath(q))).statusCode, 200);
    const updated = await events(t, q.client.businessId, 'schedule.updated');
    assert.deepEqual(
      updated.map((e) => [e.payload.data.action, e.payload.data.schedule.capacity]),
      [
        ['created', 3],
        ['replaced', 5],
      ],
    );
    const deleted = await events(t, q.client.businessId, 'schedule.deleted');
    assert.deepEqual(
      deleted.map((e) => e.payload.data),
      [{ schedule_id: first.schedule_id, doctor_id: q.doctorId, clinic_id: q.clinicId }],
    );
    for (const e of [...updated, ...deleted]) {
      assertEventBody(e.payload);
      assert.equal(e.payload.client_id, q.client.clientId);
    }
    // A refused change records nothing.
    const refused = await request(t, q.client.token, 'PUT', schedulePath(q), { ...WEEKLY, slot_minutes: 0 });
    assert.equal(refused.statusCode, 400);
    assert.equal((await events(t, q.client.businessId, 'schedule.updated')).length, 2);
  });

  it('sets, reads, replaces and deletes a schedule, by service ids and by partner ids', async () => {
    assert.equal((await call('GET', schedulePath(p))).statusCode, 404);
    const created = await setSchedule(t, p, {
      ...WEEKLY,
      buffer_minutes: 5,
      exceptions: [{ type: 'leave', start_date: '2030-01-08', end_date: '2030-01-10', note: 'conference' }],
    });
    assert.equal(created.doctor_id, p.doctorId);
    assert.equal(created.clinic_id, p.clinicId);
    assert.equal(created.capacity, 3);
    assert.equal(created.buffer_minutes, 5);
    assert.deepEqual(created.exceptions, [{ type: 'leave', start_date: '2030-01-08', end_date: '2030-01-10', note: 'conference' }]);
    const read = await call('GET', schedulePath(p, true));
    assert.equal(read.statusCode, 200, read.body);
    assert.deepEqual(read.json(), { status: 'success', schedule: created });

    const replaced = await call('PUT', schedulePath(p, true), { slot_minutes: 10, sessions: [{ days: ['SUN'], start: '18:00', end: '20:00' }] });
    assert.equal(replaced.statusCode, 200, replaced.body);
    const schedule = replaced.json().schedule;
    assert.equal(schedule.schedule_id, created.schedule_id, 'one schedule per doctor and clinic');
    assert.equal(schedule.capacity, 1, 'defaults: one place per slot');
    assert.equal(schedule.buffer_minutes, 0);
    assert.equal(schedule.timezone, 'Asia/Kolkata', 'CPS_TIMEZONE when none is named');
    assert.deepEqual(schedule.exceptions, []);

    const deleted = await call('DELETE', schedulePath(p));
    assert.deepEqual([deleted.statusCode, deleted.json()], [200, { status: 'success', message: 'Schedule Deleted Successfully' }]);
    assert.deepEqual((await call('GET', schedulePath(p))).json(), { status: 'error', message: 'Schedule not found' });
    assert.equal((await call('DELETE', schedulePath(p))).statusCode, 404);
  });

  it('answers every problem at once, each under its field', async () => {
    const response = await call('PUT', schedulePath(p), {
      timezone: 'Mars/Olympus',
      slot_minutes: 30,
      capacity: 0,
      sessions: [
        { days: ['MON'], start: '09:00', end: '09:20' },
        { days: ['TUE'], start: '25:00', end: '10:00' },
        { days: ['WED'], start: '09:00', end: '12:00' },
        { days: ['WED'], start: '11:00', end: '13:00' },
        { days: ['FUNDAY'], start: '09:00', end: '10:00' },
      ],
      exceptions: [
        { type: 'extra', start_date: '2030-02-30', end_date: '2030-01-01' },
        { type: 'leave', start_date: '2030-01-02', end_date: '2030-01-01', start_time: '10:00' },
        { type: 'vacation', start_date: '2030-01-01', end_date: '2030-01-01' },
      ],
      colour: 'blue',
    });
    assert.equal(response.statusCode, 400);
    const body = response.json();
    for (const field of [
      'timezone',
      'capacity',
      'sessions.0.end',
      'sessions.1.start',
      'sessions.3',
      'sessions.4.days.0',
      'exceptions.0.start_date',
      'exceptions.0',
      'exceptions.1.end_date',
      'exceptions.1',
      'exceptions.2.type',
      'message',
    ]) {
      assert.ok(Array.isArray(body[field]) && body[field].length > 0, `${field} in ${JSON.stringify(body)}`);
    }
    const missing = await call('PUT', schedulePath(p), {});
    assert.deepEqual(missing.json(), { slot_minutes: ['This field is required.'], sessions: ['This field is required.'] });
  });

  it('refuses a schedule past the sessions or slots of one date (the 55 KB schedule of issue 38), and stores the most allowed', async () => {
    const everyDay = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];
    const clock = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
    const sessions = Array.from({ length: 24 }, (_, hour) => ({ days: everyDay, start: clock(hour * 60), end: clock(hour * 60 + 60) }));
    const extras = (count: number) =>
      Array.from({ length: count }, () => ({
        type: 'extra',
        start_date: '2030-01-01',
        end_date: '2030-12-31',
        start_time: '00:00',
        end_time: '24:00',
      }));
    const leaves = Array.from({ length: 250 }, (_, i) => ({
      type: 'leave',
      start_date: '2030-01-01',
      end_date: '2030-12-31',
      start_time: clock((i * 5) % 1440),
      end_time: clock(((i * 5) % 1440) + 1),
    }));
    const before = await call('GET', schedulePath(p));
    const hostile = await call('PUT', schedulePath(p), { slot_minutes: 5, sessions, exceptions: [...extras(250), ...leaves] });
    assert.equal(hostile.statusCode, 400);
    assert.deepEqual(hostile.json(), {
      exceptions: ['On 2030-01-01 the schedule would have 274 sessions and extra sessions: at most 50 on one date.'],
    });
    const offGrid = await call('PUT', schedulePath(p), {
      slot_minutes: 5,
      sessions: [{ days: ['MON'], start: '00:00', end: '24:00' }],
      exceptions: [{ type: 'extra', start_date: '2030-01-07', end_date: '2030-01-07', start_time: '00:02', end_time: '01:00' }],
    });
    assert.deepEqual(offGrid.json(), {
      exceptions: ['On 2030-01-07 the schedule would offer 299 slots: at most 288 on one date (5-minute slots from 00:00 to 24:00).'],
    });
    assert.deepEqual((await call('GET', schedulePath(p))).json(), before.json(), 'nothing stored');
    const most = { slot_minutes: 5, sessions, exceptions: [...extras(26), ...leaves, ...leaves.slice(0, 224)] };
    const stored = await call('PUT', schedulePath(p), most);
    assert.equal(stored.statusCode, 200, stored.body);
    assert.equal(stored.json().schedule.exceptions.length, 500);
  });

  it('answers unknown ids as not found and an unassigned pair as a 400', async () => {
    const other = await createPractice(t, { client: p.client });
    assert.deepEqual((await call('GET', `/cdr/v1/doctor/nope/clinic/${p.clinicId}/schedule`)).json(), {
      status: 'error',
      message: 'Doctor not found',
    });
    assert.deepEqual((await call('GET', `/cdr/v1/doctor/${p.doctorId}/clinic/nope/schedule`)).json(), {
      status: 'error',
      message: 'Clinic not found',
    });
    const unassigned = await call('PUT', `/cdr/v1/doctor/${p.doctorId}/clinic/${other.clinicId}/schedule`, WEEKLY);
    assert.deepEqual([unassigned.statusCode, unassigned.json()], [400, { message: ['The doctor is not assigned to this clinic.'] }]);
    assert.equal((await call('GET', `/cdr/v1/doctor/${p.doctorId}/clinic/${other.clinicId}/schedule`)).statusCode, 404);
  });

  it('needs a token, clinic:write for writes, and keeps businesses apart', async () => {
    await setSchedule(t, p);
    const none = await t.app.inject({ method: 'GET', url: schedulePath(p) });
    assert.equal(none.statusCode, 401);
    assert.ok(Array.isArray(none.json().message), 'clinics family');
    const reader = await createTestClient(t.ctx, { businessId: p.client.businessId, scopes: ['appointment:write'] });
    assert.equal((await call('GET', schedulePath(p), undefined, reader.token)).statusCode, 200);
    for (const method of ['PUT', 'DELETE']) {
      const forbidden = await call(method, schedulePath(p), method === 'PUT' ? WEEKLY : undefined, reader.token);
      assert.equal(forbidden.statusCode, 403, `${method}: ${forbidden.body}`);
    }
    const stranger = await createTestClient(t.ctx);
    for (const [method, body] of [
      ['GET', undefined],
      ['PUT', WEEKLY],
      ['DELETE', undefined],
    ] as const) {
      for (const partner of [false, true]) {
        const response = await call(method, schedulePath(p, partner), body, stranger.token);
        assert.deepEqual([response.statusCode, response.json()], [404, { status: 'error', message: 'Doctor not found' }], `${method} ${partner}`);
      }
    }
    assert.equal((await call('GET', schedulePath(p))).statusCode, 200, 'untouched');
  });

  it('two writers racing for one pair end with one schedule', async () => {
    const q = await createPractice(t, { client: p.client });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => call('PUT', schedulePath(q), { ...WEEKLY, capacity: i + 1 })));
    for (const response of results) assert.equal(response.statusCode, 200, response.body);
    const ids = new Set(results.map((r) => r.json().schedule.schedule_id));
    assert.equal(ids.size, 1);
    const rows = await t.ctx.storage.db.selectFrom('schedules').selectAll().where('doctor_id', '=', q.doctorId).execute();
    assert.equal(rows.length, 1);
  });
});
