/**
 * Database faults under a real `cps serve` process on PostgreSQL: its backends terminated under
 * load, and an outage (a TCP proxy between the server and PostgreSQL resets every connection and
 * refuses new ones, then forwards again). The process survives, answers 503 in the family bodies
 * meanwhile, and then serves, runs jobs, hears notifications and follows the catalogue again
 * without a restart. PostgreSQL only: what they exercise (connections, pools, LISTEN) is PostgreSQL's.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { inTransaction, openStorage, type Storage } from '../../src/db/index.ts';
import { recordEvent } from '../../src/jobs/outbox.ts';
import { CatalogueImporter } from '../../src/modules/search/ingest/importer.ts';
import { ADMIN_TOKEN, createTestDatabase, PG_URL, type TestDatabase } from '../support.ts';
import { sharedKeys, startServerProcess, type ServerProcess } from '../process.ts';
import { reviewEvent, startReceiver, type Receiver } from '../modules/webhooks/support.ts';
import { waitFor } from './support.ts';
import { startTcpProxy, type TcpProxy } from './proxy.ts';

const MESSAGE = 'The service is temporarily unavailable; retry shortly.';
/** Whatever the server answers, it answers: a request that hangs fails the test instead. */
const HANG_GUARD_MS = 30_000;

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function call(url: string, method: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
  const response = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(HANG_GUARD_MS),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

function ok(answer: Answer, what: string): any {
  assert.ok(answer.status >= 200 && answer.status < 300, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** A business with a doctor (who has a review link), a clinic, a webhook subscription and a token. */
interface Practice {
  businessId: string;
  clientId: string;
  clientSecret: string;
  token: string;
  doctorId: string;
  clinicId: string;
}

async function setUpPractice(url: string, endpoint: string): Promise<Practice> {
  const business = ok(
    await call(`${url}/admin/v1/businesses`, 'POST', { authorization: `Bearer ${ADMIN_TOKEN}` }, { name: 'Outage Clinic' }),
    'business',
  );
  const login = ok(
    await call(`${url}/connect-auth/v1/account/login`, 'POST', {}, { client_id: business.client_id, client_secret: business.client_secret }),
    'login',
  );
  const token = login.access_token as string;
  const doctor = ok(
    await call(
      `${url}/cdr/v1/doctor`,
      'POST',
      { auth: token },
      { firstname: 'Asha', lastname: 'Rao', partner_id: 'pd-1', review_link: 'https://r.example/doctor' },
    ),
    'doctor',
  );
  const clinic = ok(
    await call(
      `${url}/cdr/v1/clinic`,
      'POST',
      { auth: token },
      { name: 'Sunrise Clinic', address: '1 MG Road', partner_id: 'pc-1', doctor_ids: [doctor.svcid] },
    ),
    'clinic',
  );
  ok(await call(`${url}/notification/v1/connect/webhook/subscriptions`, 'POST', { authorization: `Bearer ${token}` }, { endpoint }), 'subscription');
  return {
    businessId: business.business_id,
    clientId: business.client_id,
    clientSecret: business.client_secret,
    token,
    doctorId: doctor.svcid,
    clinicId: clinic.svcid,
  };
}

let slot = 0;
function booking(practice: Practice): Record<string, unknown> {
  const start = 1_900_000_000 + 900 * slot++;
  return {
    clinic_id: practice.clinicId,
    doctor_id: practice.doctorId,
    appointment_details: { start_time: start, end_time: start + 900 },
    patient_details: { first_name: 'Ravi', last_name: 'Kumar', mobile: '+919812345678', gender: 'M', dob: '1990-04-01' },
  };
}

const book = (url: string, practice: Practice) => call(`${url}/dr/v1/appointment`, 'POST', { auth: practice.token }, booking(practice));
const readAppointment = (url: string, practice: Practice, id: string) => call(`${url}/dr/v1/appointment/${id}`, 'GET', { auth: practice.token });

function assertUnavailable(answer: Answer, body: unknown, what: string): void {
  assert.equal(answer.status, 503, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
  assert.deepEqual(answer.body, body, what);
  assert.equal(answer.headers.get('retry-after'), '5', what);
  assert.equal(answer.headers.get('cache-control'), 'no-store', what);
  assert.ok(answer.headers.get('x-request-id'), what);
}

function logLines(server: ServerProcess): Array<Record<string, any>> {
  return server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

function alive(server: ServerProcess): boolean {
  return server.child.exitCode === null && server.child.signalCode === null;
}

async function stopGracefully(server: ServerProcess): Promise<number | null> {
  server.child.kill('SIGTERM');
  return server.exited;
}

describe('database faults in a running server (postgres)', { skip: !PG_URL && 'needs PostgreSQL (npm run test:pg)' }, () => {
  let database: TestDatabase;
  let storage: Storage;
  let receiver: Receiver;
  let env: Record<string, string>;
  before(async () => {
    database = await createTestDatabase();
    // The test's own connections, direct to PostgreSQL (never through the proxy).
    storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2 });
    receiver = await startReceiver();
    env = {
      CPS_DATA_DIR: database.dataDir,
      DATABASE_URL: database.databaseUrl!,
      CPS_WORKERS: '1',
      CPS_ADMIN_TOKEN: ADMIN_TOKEN,
      CPS_WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1',
      ...sharedKeys(),
      LOG_LEVEL: 'info',
    };
  });
  after(async () => {
    await receiver.close();
    await storage.destroy();
    await database.drop();
  });

  const delivered = (eventId: string) => receiver.received.some((delivery) => delivery.headers['webhook-id'] === eventId);

  it('survives its backends terminated under load: 503 or success meanwhile, then serves and delivers', async () => {
    const server = await startServerProcess(env);
    try {
      const practice = await setUpPractice(server.url, receiver.url);
      const answers: Answer[] = [];
      let stopping = false;
      // Eight clients booking and reading back as fast as they can.
      // A request that gets no answer at all (the server died) is recorded as status 0.
      const send = (request: () => Promise<Answer>) =>
        request().catch((error: unknown): Answer => ({ status: 0, headers: new Headers(), body: String(error) }));
      const clients = Array.from({ length: 8 }, async () => {
        while (!stopping && alive(server)) {
          const booked = await send(() => book(server.url, practice));
          answers.push(booked);
          if (booked.status === 201) answers.push(await send(() => readAppointment(server.url, practice, booked.body.appointment_id)));
        }
      });
      const answered = (count: number) => waitFor(() => answers.length >= count || !alive(server), `${count} answers`, 20);
      await answered(40);
      const admin = new pg.Client({ connectionString: database.databaseUrl! });
      await admin.connect();
      let terminated = 0;
      try {
        for (let round = 0; round < 5; round++) {
          const { rows } = await admin.query(
            'select pg_terminate_backend(pid) as done from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
          );
          terminated += rows.filter((row) => row.done).length;
          await answered(answers.length + 20);
        }
      } finally {
        await admin.end();
      }
      stopping = true;
      await Promise.all(clients);

      assert.ok(terminated >= 5, `backends terminated: ${terminated}`);
      assert.ok(alive(server), `the server is still running:\n${server.output().slice(-3000)}`);
      const statuses = new Map<number, number>();
      for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      for (const answer of answers) {
        if (answer.status === 503) assertUnavailable(answer, { error: { code: 'SERVICE_UNAVAILABLE', message: MESSAGE } }, 'during');
        else
          assert.ok(
            answer.status === 200 || answer.status === 201,
            `during: ${answer.status} ${JSON.stringify(answer.body)} (all: ${[...statuses]})`,
          );
      }

      // Afterwards every request succeeds, and a delivery queued now reaches the receiver.
      for (let i = 0; i < 20; i++) {
        const id = ok(await book(server.url, practice), 'booking after').appointment_id as string;
        assert.equal(ok(await readAppointment(server.url, practice, id), 'read after').appointment_id, id);
      }
      const appointmentId = ok(await book(server.url, practice), 'booking for the review').appointment_id as string;
      const { event_id: eventId } = ok(
        await call(`${server.url}/dr/v1/appointment/${appointmentId}/review-request`, 'POST', { auth: practice.token }),
        'review request',
      );
      await waitFor(() => delivered(eventId), 'the delivery queued after the faults');

      const lines = logLines(server);
      assert.deepEqual(
        lines.filter((line) => line.level >= 50),
        [],
        'nothing logged at level error',
      );
      for (const line of lines.filter((l) => l.msg === 'database unavailable; answered 503')) assert.equal(line.err, undefined, 'no stack');
      assert.equal(await stopGracefully(server), 0, `shuts down cleanly afterwards:\n${server.output().slice(-3000)}`);
    } finally {
      if (alive(server)) server.child.kill('SIGKILL');
    }
  });

  describe('an outage: every connection reset, new ones refused, then back', () => {
    let proxy: TcpProxy;
    let server: ServerProcess;
    let practice: Practice;
    let kept: { id: string; body: any };
    // The password must never reach the log; PostgreSQL here trusts loopback and never asks for it.
    const PASSWORD = `pw-${randomBytes(6).toString('hex')}`;

    before(async () => {
      const target = new URL(database.databaseUrl!);
      proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
      const proxied = new URL(proxy.urlFor(database.databaseUrl!));
      proxied.password = PASSWORD;
      server = await startServerProcess({ ...env, DATABASE_URL: proxied.toString() });
      practice = await setUpPractice(server.url, `${receiver.url}/outage`);
      // A write acknowledged before the fault.
      const booked = ok(await book(server.url, practice), 'booking before');
      kept = { id: booked.appointment_id, body: ok(await readAppointment(server.url, practice, booked.appointment_id), 'read before') };
    });
    after(async () => {
      if (alive(server)) server.child.kill('SIGKILL');
      await proxy.close();
    });

    it('answers 503 in each family body and /ready 503 during it; serves, runs jobs, listens and follows the catalogue after', async () => {
      const since = logLines(server).length;
      await proxy.cut();
      let duringEventId: string;
      let restoredAt = 0;
      try {
        const auth = { auth: practice.token };
        assertUnavailable(
          await readAppointment(server.url, practice, kept.id),
          { error: { code: 'SERVICE_UNAVAILABLE', message: MESSAGE } },
          'appointments',
        );
        assertUnavailable(await call(`${server.url}/cdr/v1/doctor`, 'GET', auth), { message: [MESSAGE] }, 'clinics');
        assertUnavailable(
          await call(`${server.url}/mr/api/v1/cases`, 'GET', { authorization: `Bearer ${practice.token}`, 'x-pt-id': 'pt-1' }),
          { error: MESSAGE, code: 'SERVICE_UNAVAILABLE' },
          'cases',
        );
        assertUnavailable(
          await call(
            `${server.url}/connect-auth/v1/account/login`,
            'POST',
            {},
            { client_id: practice.clientId, client_secret: practice.clientSecret },
          ),
          { code: 503, error: MESSAGE },
          'auth',
        );
        assertUnavailable(
          await call(`${server.url}/notification/push-creds`, 'GET', { authorization: `Bearer ${practice.token}` }),
          { message: MESSAGE, error_code: 503 },
          'notifications',
        );
        const ready = await call(`${server.url}/ready`, 'GET');
        assert.equal(ready.status, 503);
        assert.equal(ready.body.checks.database, false);
        // A change committed elsewhere meanwhile: its delivery is a job this server runs after.
        duringEventId = await inTransaction(storage.db, (trx) =>
          recordEvent(trx, { businessId: practice.businessId, type: 'external_review.request', payload: reviewEvent(practice.businessId, 901) }),
        );
        // The background loops have met the outage (the catalogue polls every 2 s).
        const seen = (message: string) =>
          logLines(server)
            .slice(since)
            .some((line) => line.msg === message);
        await waitFor(
          () =>
            seen('job notifications lost; polling until they reconnect') &&
            seen('polling for jobs failed; retrying with backoff') &&
            seen('catalogue refresh failed; will retry'),
          'the background loops meet the outage',
        );
        assert.ok(alive(server), 'the server is still running');
      } finally {
        restoredAt = Date.now();
        await proxy.restore();
      }

      await waitFor(async () => (await call(`${server.url}/ready`, 'GET')).status === 200, '/ready 200 after the outage', 100);
      // The write acknowledged before the outage is there, unchanged.
      assert.deepEqual(ok(await readAppointment(server.url, practice, kept.id), 'read after'), kept.body);
      ok(await book(server.url, practice), 'booking after');
      // The job queued during the outage runs.
      await waitFor(() => delivered(duringEventId), 'the delivery queued during the outage');

      // LISTEN is back: the server's listener connection is in PostgreSQL again, and says so.
      await waitFor(
        () =>
          logLines(server)
            .slice(since)
            .some((line) => line.msg === 'job notifications reconnected'),
        'LISTEN reconnected',
      );
      const listening = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and query = 'LISTEN cps_jobs' and backend_start >= to_timestamp(${restoredAt / 1000})`.execute(storage.db);
      assert.equal(listening.rows[0]!.n, 1, "one LISTEN connection opened since the outage, the server's");
      const appointmentId = ok(await book(server.url, practice), 'booking for the review').appointment_id as string;
      const { event_id: afterEventId } = ok(
        await call(`${server.url}/dr/v1/appointment/${appointmentId}/review-request`, 'POST', { auth: practice.token }),
        'review request',
      );
      await waitFor(() => delivered(afterEventId), 'the delivery queued after the outage');

      // The catalogue poll follows again: a drug imported now becomes searchable.
      await new CatalogueImporter({ db: storage.db }).importDrugs(
        [
          {
            name: 'Outagezole 10 Tablet',
            manufacturer_name: 'Outage Labs',
            composition: [{ salt: 'Outagezole', strength: '10mg' }],
            discontinued: false,
          },
        ],
        'test',
      );
      await waitFor(
        async () => {
          const found = await call(`${server.url}/medical-db/v1/drugs-and-labs?q=outagezole`, 'GET', { authorization: `Bearer ${practice.token}` });
          return found.status === 200 && found.body.drugs?.[0]?.name === 'Outagezole 10 Tablet';
        },
        'the drug imported after the outage is searchable',
        200,
      );

      // The recovery lines are written by timers that may fire after the requests above already succeeded.
      for (const message of ['catalogue refresh works again', 'polling for jobs works again']) {
        await waitFor(
          () =>
            logLines(server)
              .slice(since)
              .some((line) => line.msg === message),
          `the log line "${message}"`,
          100,
          30_000,
        ).catch(() => undefined);
      }
      const lines = logLines(server).slice(since);
      assert.deepEqual(
        lines.filter((line) => line.level >= 50),
        [],
        'nothing logged at level error',
      );
      const warnings = lines.filter((line) => line.msg === 'database unavailable; answered 503');
      assert.ok(warnings.length >= 5, 'each 503 logged');
      for (const warning of warnings) {
        assert.equal(warning.level, 40);
        assert.equal(warning.err, undefined, 'no stack');
      }
      for (const message of ['catalogue refresh works again', 'polling for jobs works again']) {
        assert.ok(
          lines.some((line) => line.msg === message),
          `${message}:\n${lines
            .filter((line) => line.level >= 40)
            .map((line) => JSON.stringify(line))
            .join('\n')}`,
        );
      }
      assert.ok(!server.output().includes(PASSWORD), 'the database password is never logged');
      assert.equal(await stopGracefully(server), 0, `shuts down cleanly afterwards:\n${server.output().slice(-3000)}`);
    });
  });
});
