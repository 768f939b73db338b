/**
 * No double booking with two real server processes on one PostgreSQL database: 240 bookers, half
 * through each server, race for the places of one slot; exactly its places succeed, with distinct tokens.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { openStorage, type Storage } from '../../../src/db/index.ts';
import { migrateToLatest } from '../../../src/db/migrate.ts';
import { ChainSeal } from '../../../src/access-log/seal.ts';
import { parseMasterKey } from '../../../src/config.ts';
import { BusinessService } from '../../../src/modules/businesses/index.ts';
import { sharedKeys, startServerProcess, type ServerProcess } from '../../process.ts';
import { createTestDatabase, DIALECT, type TestDatabase } from '../../support.ts';
import { MONDAY_0900, WEEKLY } from '../schedules/support.ts';

const CAPACITY = 7;
const BOOKERS = 240;

describe('scheduling across server processes (postgres)', { skip: DIALECT !== 'postgres' && 'needs CPS_TEST_DATABASE_URL' }, () => {
  let database: TestDatabase;
  let storage: Storage;
  let servers: ServerProcess[] = [];
  let token: string;

  before(async () => {
    database = await createTestDatabase();
    storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2 });
    await migrateToLatest(storage.db);
    const keys = sharedKeys();
    const chainSeal = new ChainSeal(parseMasterKey(keys.CPS_MASTER_KEY));
    const created = await new BusinessService({ db: storage.db, chainSeal }).createBusiness('Two processes');
    const env = {
      DATABASE_URL: database.databaseUrl!,
      CPS_DATA_DIR: database.dataDir,
      CPS_WORKERS: '0',
      LOG_LEVEL: 'warn',
      CPS_ENV: 'development',
      ...keys,
    };
    servers = await Promise.all([startServerProcess(env), startServerProcess(env)]);
    const login = await fetch(`${servers[0]!.url}/connect-auth/v1/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: created.client_id, client_secret: created.client_secret }),
    });
    token = ((await login.json()) as { access_token: string }).access_token;
  });

  after(async () => {
    for (const server of servers) {
      if (server.child.exitCode !== null) continue;
      const exited = once(server.child, 'exit');
      server.child.kill('SIGTERM');
      await exited;
    }
    await storage?.destroy();
    await database?.drop();
  });

  async function call(server: ServerProcess, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { auth: token, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: await response.json() };
  }

  it(`${BOOKERS} bookers through two servers: exactly ${CAPACITY} succeed, tokens 1 to ${CAPACITY}`, async () => {
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const doctor = await call(a, 'POST', '/cdr/v1/doctor/', { firstname: 'Asha', lastname: 'Rao' });
    const clinic = await call(b, 'POST', '/cdr/v1/clinic/', { name: 'Two', address: '1 Road', doctor_ids: [doctor.json.svcid] });
    const doctorId = doctor.json.svcid as string;
    const clinicId = clinic.json.svcid as string;
    const schedule = await call(a, 'PUT', `/cdr/v1/doctor/${doctorId}/clinic/${clinicId}/schedule`, { ...WEEKLY, capacity: CAPACITY });
    assert.equal(schedule.status, 200, JSON.stringify(schedule.json));
    const results = await Promise.all(
      Array.from({ length: BOOKERS }, (_, i) =>
        call(i % 2 === 0 ? a : b, 'POST', '/dr/v1/appointment', {
          clinic_id: clinicId,
          doctor_id: doctorId,
          appointment_details: { start_time: MONDAY_0900, end_time: MONDAY_0900 + 900 },
          patient_details: { first_name: `P${i}`, mobile: `+9198${String(i).padStart(8, '0')}`, partner_patient_id: `mp-${i}` },
        }),
      ),
    );
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 201).length, CAPACITY, JSON.stringify(results.find((r) => r.status !== 201 && r.status !== 409)));
    assert.equal(statuses.filter((s) => s === 409).length, BOOKERS - CAPACITY);
    for (const r of results) if (r.status === 409) assert.equal(r.json.error.code, 'SLOT_UNAVAILABLE');
    const rows = await storage.db.selectFrom('appointments').select('token').where('doctor_id', '=', doctorId).execute();
    assert.deepEqual(
      rows.map((row) => Number(row.token)).sort((x, y) => x - y),
      Array.from({ length: CAPACITY }, (_, i) => i + 1),
    );
  });
});
