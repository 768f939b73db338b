/**
 * The sync guarantee of contract 6 with two real server processes on one PostgreSQL database:
 * writers hit both while a client syncs with u_at__gt through both (pages of one walk alternate
 * between the servers), and the client must end with exactly the server's state.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStorage, type Storage } from '../../../src/db/index.ts';
import { migrateToLatest } from '../../../src/db/migrate.ts';
import { ChainSeal } from '../../../src/access-log/seal.ts';
import { parseMasterKey } from '../../../src/config.ts';
import { BusinessService } from '../../../src/modules/businesses/index.ts';
import { toView } from '../../../src/modules/cases/service.ts';
import { createTestDatabase, DIALECT, type TestDatabase } from '../../support.ts';
import { sharedKeys, startServerProcess } from '../../process.ts';
import { newCase, untilSecondIsOver, type CaseJson, type PageJson } from './support.ts';

interface Server {
  url: string;
  child: ChildProcess;
}

async function stopServer(server: Server): Promise<void> {
  if (server.child.exitCode !== null) return;
  const exited = once(server.child, 'exit');
  server.child.kill('SIGTERM');
  await exited;
}

describe('cases sync across server processes (postgres)', { skip: DIALECT !== 'postgres' && 'needs CPS_TEST_DATABASE_URL' }, () => {
  let database: TestDatabase;
  let storage: Storage;
  let servers: Server[] = [];
  let businessId: string;
  let token: string;

  before(async () => {
    database = await createTestDatabase();
    storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2 });
    await migrateToLatest(storage.db);
    const keys = sharedKeys();
    const chainSeal = new ChainSeal(parseMasterKey(keys.CPS_MASTER_KEY));
    const created = await new BusinessService({ db: storage.db, chainSeal }).createBusiness('Multi-process');
    businessId = created.business_id;
    const env = {
      DATABASE_URL: database.databaseUrl!,
      CPS_DATA_DIR: database.dataDir,
      CPS_WORKERS: '0',
      LOG_LEVEL: 'warn',
      CPS_ENV: 'development',
      // Both processes share the keys, as a deployment would: tokens and page tokens work on either.
      ...keys,
    };
    servers = await Promise.all([startServerProcess(env), startServerProcess(env)]);
    const login = await fetch(`${servers[0]!.url}/connect-auth/v1/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: created.client_id, client_secret: created.client_secret }),
    });
    assert.equal(login.status, 200);
    token = ((await login.json()) as { access_token: string }).access_token;
  });

  after(async () => {
    await Promise.all(servers.map(stopServer));
    await storage?.destroy();
    await database?.drop();
  });

  async function call(server: Server, patient: string, method: string, suffix = '', body?: unknown): Promise<{ status: number; json: unknown }> {
    const response = await fetch(`${server.url}/mr/api/v1/cases${suffix}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'x-pt-id': patient, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : null };
  }

  it('a client syncing with u_at__gt through both servers ends with exactly the server state', async () => {
    const patients = ['pt-a', 'pt-b'];
    const ids = Array.from({ length: 15 }, (_, i) => `case-${i}`);
    const deadline = Date.now() + 3000;
    let effective = 0;

    const writer = async (server: Server, patient: string) => {
      while (Date.now() < deadline) {
        const id = ids[Math.floor(Math.random() * ids.length)]!;
        const roll = Math.random();
        const { status } =
          roll < 0.45
            ? await call(server, patient, 'POST', '', newCase(id))
            : roll < 0.85
              ? await call(server, patient, 'PATCH', `/${id}`, { display_name: `v${Math.random()}`, partner_meta: { roll } })
              : await call(server, patient, 'DELETE', `/${id}`);
        assert.ok([201, 204, 404, 409].includes(status), `unexpected ${status}`);
        if (status < 300) effective++;
      }
    };

    const local = new Map<string, Map<string, CaseJson>>(patients.map((p) => [p, new Map()]));
    const maxSeen = new Map<string, number>();
    let turn = 0;
    let syncs = 0;
    const syncOnce = async (patient: string) => {
      const seen = maxSeen.get(patient);
      let offset: string | null = null;
      do {
        const query = new URLSearchParams();
        if (seen !== undefined) query.set('u_at__gt', String(seen));
        if (offset) query.set('offset', offset);
        // Alternate servers page by page: a walk started on one continues on the other.
        const { status, json } = await call(servers[turn++ % 2]!, patient, 'GET', query.size ? `?${query}` : '');
        assert.equal(status, 200, JSON.stringify(json));
        const page = json as PageJson;
        for (const c of page.cases) {
          local.get(patient)!.set(c.id, c);
          maxSeen.set(patient, Math.max(maxSeen.get(patient) ?? 0, c.updated_at));
        }
        offset = page.next_token;
      } while (offset !== null);
      syncs++;
    };
    const syncer = async () => {
      while (Date.now() < deadline) {
        for (const patient of patients) await syncOnce(patient);
        await sleep(10);
      }
    };

    await Promise.all([
      ...servers.flatMap((server) => patients.map((patient) => writer(server, patient))),
      ...servers.map((server) => writer(server, patients[0]!)),
      syncer(),
    ]);

    await untilSecondIsOver();
    for (const patient of patients) await syncOnce(patient);

    for (const patient of patients) {
      const rows = await storage.db
        .selectFrom('cases')
        .selectAll()
        .where('business_id', '=', businessId)
        .where('patient_ref', '=', patient)
        .execute();
      const server = rows.map((row) => toView(row) as CaseJson).sort((a, b) => (a.id < b.id ? -1 : 1));
      const mine = [...local.get(patient)!.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
      assert.deepEqual(mine, server, patient);
      assert.ok(server.some((c) => c.status === 'D') || server.length === ids.length, 'deletes took part');
    }
    assert.ok(effective > 30, `enough writes took effect (${effective})`);
    assert.ok(syncs > 6, `the client synced while writes ran (${syncs})`);
  });
});
