import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { inTransaction, type Db } from '../../../src/db/index.ts';
import type { CasesTable } from '../../../src/db/schema.ts';
import { PatientService } from '../../../src/modules/patients/service.ts';
import * as repo from '../../../src/modules/cases/repo.ts';
import { toView } from '../../../src/modules/cases/service.ts';
import { createTestApp, createTestClient, DIALECT, testKeys, type TestApp, type TestClient } from '../../support.ts';
import { casesApi, isKeysetOrdered, newCase, untilSecondIsOver, type CaseJson, type PageJson } from './support.ts';

/** Cases written straight to the table, in seconds long past, so paging needs no waiting. */
async function insertCases(db: Db, businessId: string, patientRef: string, rows: Array<{ id: string; second: number }>): Promise<void> {
  await db
    .insertInto('cases')
    .values(
      rows.map(
        (row): CasesTable => ({
          business_id: businessId,
          patient_ref: patientRef,
          id: row.id,
          status: 'A',
          display_name: `Case ${row.id}`,
          type: null,
          hi_type: 'Prescription',
          partner_meta: '{}',
          occurred_at: 1_600_000_000_000,
          created_at: row.second * 1000,
          updated_at: row.second * 1000,
        }),
      ),
    )
    .execute();
}

/** What the server holds for a patient, as the listing would show it. */
async function serverState(db: Db, businessId: string, patientRef: string): Promise<CaseJson[]> {
  const rows = await db.selectFrom('cases').selectAll().where('business_id', '=', businessId).where('patient_ref', '=', patientRef).execute();
  return rows.map((row) => toView(row) as CaseJson).sort((a, b) => (a.id < b.id ? -1 : 1));
}

const T0 = 1_700_000_000;

describe(`cases sync (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  const expected: Array<{ id: string; second: number }> = [];
  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
    // 130 cases in three seconds (pages of 50 end inside runs of equal updated_at), ids in random order.
    for (let i = 0; i < 130; i++) expected.push({ id: `k-${randomBytes(4).toString('hex')}-${i}`, second: T0 + (i % 3) });
    await insertCases(t.ctx.storage.db, client.businessId, 'pager', expected);
    await insertCases(t.ctx.storage.db, client.businessId, 'other-patient', [{ id: 'x', second: T0 }]);
  });
  after(async () => t.close());

  describe('happy', () => {
    it('pages 50 at a time in (updated_at, id) order across equal timestamps, next_token null on the last page', async () => {
      const { cases, pages } = await casesApi(t.app, client.token, 'pager').all();
      assert.deepEqual(
        pages.map((page) => page.cases.length),
        [50, 50, 30],
      );
      assert.deepEqual(
        pages.map((page) => typeof page.next_token),
        ['string', 'string', 'object'],
      );
      assert.equal(pages[2]!.next_token, null);
      assert.ok(isKeysetOrdered(cases), 'strictly ascending (updated_at, id), so no duplicates');
      const want = [...expected].sort((a, b) => a.second - b.second || (a.id < b.id ? -1 : 1));
      assert.deepEqual(
        cases.map((c) => [c.updated_at, c.id]),
        want.map((c) => [c.second, c.id]),
      );
      assert.ok(pages[0]!.cases.at(-1)!.updated_at === pages[1]!.cases[0]!.updated_at, 'a page boundary falls inside one second');
    });

    it('filters with u_at__gt (strictly greater) and keeps the filter across pages', async () => {
      const api = casesApi(t.app, client.token, 'pager');
      const { cases, pages } = await api.all({ u_at__gt: T0 });
      assert.equal(cases.length, expected.filter((c) => c.second > T0).length);
      assert.ok(cases.every((c) => c.updated_at > T0));
      assert.ok(isKeysetOrdered(cases));
      assert.equal(pages.length, 2);
      // The token alone continues the filtered walk; repeating the same u_at__gt is fine too.
      const second = (await api.list({ offset: pages[0]!.next_token! })).json() as PageJson;
      assert.deepEqual(second, pages[1]);
      assert.deepEqual((await api.list({ u_at__gt: T0 + 2 })).json(), { cases: [], next_token: null });
      assert.equal((await api.list({ u_at__gt: T0 - 1 })).json().cases.length, 50);
      assert.equal((await api.list({ offset: '' })).json().cases[0].updated_at, T0, 'an empty offset is the first page');
    });

    it('never lists a second that can still receive writes, so u_at__gt = the last second seen misses nothing', async () => {
      const api = casesApi(t.app, client.token, `same-second-${DIALECT}`);
      assert.equal((await api.create(newCase('before'))).statusCode, 201);
      await untilSecondIsOver();
      // Start early in a second so that the steps below usually share it.
      const start = Date.now();
      assert.equal((await api.create(newCase('early'))).statusCode, 201);
      const first = (await api.all()).cases;
      assert.equal((await api.create(newCase('late'))).statusCode, 201);
      assert.equal((await api.update('before', { display_name: 'changed' })).statusCode, 204);
      const sameSecond = Math.floor(Date.now() / 1000) === Math.floor(start / 1000);
      const written = (await api.get('early')).json().updated_at as number;
      if (sameSecond) {
        assert.deepEqual(
          first.map((c) => c.id),
          ['before'],
          'the writes of the current second are not listed yet',
        );
      }
      assert.ok(first.every((c) => c.updated_at < written));
      const maxSeen = Math.max(...first.map((c) => c.updated_at));
      await untilSecondIsOver();
      const incremental = (await api.all({ u_at__gt: maxSeen })).cases;
      assert.deepEqual(incremental.map((c) => c.id).sort(), ['before', 'early', 'late']);
      assert.equal(incremental.find((c) => c.id === 'before')!.item!.display_name, 'changed');
    });
  });

  describe('security', () => {
    it('rejects forged, altered and truncated tokens with 400 in the cases body', async () => {
      const api = casesApi(t.app, client.token, 'pager');
      const token = ((await api.list()).json() as PageJson).next_token!;
      const middle = Math.floor(token.length / 2);
      const altered = token.slice(0, middle) + (token[middle] === 'A' ? 'B' : 'A') + token.slice(middle + 1);
      for (const forged of [
        'abc',
        'not a token!',
        altered,
        token.slice(0, -4),
        `${token}AAAA`,
        Buffer.from('{"updatedAt":0,"id":""}').toString('base64url'),
      ]) {
        const response = await api.list({ offset: forged });
        assert.equal(response.statusCode, 400, forged);
        assert.deepEqual(Object.keys(response.json()).sort(), ['code', 'error']);
        assert.equal(response.json().code, 'INVALID_REQUEST');
        assert.match(response.json().error, /offset/);
      }
    });

    it('binds a token to its patient, business, filter and key', async () => {
      const api = casesApi(t.app, client.token, 'pager');
      const token = ((await api.list()).json() as PageJson).next_token!;
      const filtered = ((await api.list({ u_at__gt: T0 - 5 })).json() as PageJson).next_token!;
      assert.equal((await api.list({ offset: token })).statusCode, 200);
      assert.equal((await casesApi(t.app, client.token, 'other-patient').list({ offset: token })).statusCode, 400, 'other patient');
      const sameBusiness = await createTestClient(t.ctx, { businessId: client.businessId, scopes: ['cases:read'] });
      assert.equal((await casesApi(t.app, sameBusiness.token, 'pager').list({ offset: token })).statusCode, 200, 'another client of the business');
      const otherBusiness = await createTestClient(t.ctx);
      assert.equal((await casesApi(t.app, otherBusiness.token, 'pager').list({ offset: token })).statusCode, 400, 'other business');
      assert.equal((await api.list({ offset: token, u_at__gt: T0 })).statusCode, 400, 'a filter the token was not made for');
      assert.equal((await api.list({ offset: filtered, u_at__gt: T0 })).statusCode, 400, 'a changed filter');
      assert.equal((await api.list({ offset: filtered, u_at__gt: T0 - 5 })).statusCode, 200, 'the same filter');

      const keys = await testKeys();
      const otherKey = await createTestApp({ keys: { ...keys, masterKey: randomBytes(32) } });
      try {
        const stranger = await createTestClient(otherKey.ctx);
        const strangerToken = (await casesApi(otherKey.app, stranger.token, 'pager').list()).json().next_token;
        assert.equal(strangerToken, null);
        await insertCases(otherKey.ctx.storage.db, stranger.businessId, 'pager', expected.slice(0, 60));
        const foreign = (await casesApi(otherKey.app, stranger.token, 'pager').list()).json().next_token as string;
        assert.equal((await api.list({ offset: foreign })).statusCode, 400, 'a token sealed under another master key');
      } finally {
        await otherKey.close();
      }
    });
  });

  describe('concurrency', () => {
    it('a listing waits for a write of the patient in flight, so a commit that ends late is not skipped', async () => {
      const patient = `slow-writer-${DIALECT}`;
      const api = casesApi(t.app, client.token, patient);
      const { db, dialect } = t.ctx.storage;
      await untilSecondIsOver();
      assert.equal((await api.create(newCase('fast'))).statusCode, 201);
      let listing: Promise<{ cases: CaseJson[] }> | null = null;
      // A write that takes its updated_at in the same second as 'fast' and commits only in the next one.
      await inTransaction(db, async (trx) => {
        await new PatientService({ db, compartment: t.ctx.compartment }).lockRecords(trx, client.businessId, patient, 'write');
        const updatedAt = await repo.stampWrite(trx, dialect, client.businessId, patient);
        await repo.insertCase(trx, {
          business_id: client.businessId,
          patient_ref: patient,
          id: 'slow',
          status: 'A',
          display_name: 'Slow',
          type: null,
          hi_type: null,
          partner_meta: '{}',
          occurred_at: 0,
          created_at: updatedAt,
          updated_at: updatedAt,
        });
        await untilSecondIsOver();
        listing = api.all();
        await sleep(300);
      });
      const first = (await listing!).cases;
      const maxSeen = Math.max(...first.map((c) => c.updated_at));
      await untilSecondIsOver();
      const next = (await api.all({ u_at__gt: maxSeen })).cases;
      assert.deepEqual([...first, ...next].map((c) => c.id).sort(), ['fast', 'slow']);
    });

    it('a client syncing with u_at__gt while writers run ends with exactly the server state', async () => {
      const patients = ['p-one', 'p-two'];
      const ids = Array.from({ length: 12 }, (_, i) => `case-${i}`);
      // Writers run until enough writes took effect and the client synced among them, however slow the machine.
      const writesWanted = 24;
      const syncsWanted = 7;
      let effective = 0;
      let syncs = 0;
      const running = () => effective < writesWanted || syncs < syncsWanted;
      const writer = async (patient: string) => {
        const api = casesApi(t.app, client.token, patient);
        while (running()) {
          const id = ids[Math.floor(Math.random() * ids.length)]!;
          const roll = Math.random();
          const response =
            roll < 0.45
              ? await api.create(newCase(id))
              : roll < 0.85
                ? await api.update(id, { display_name: `v${Math.random()}`, partner_meta: { n: roll } })
                : await api.remove(id);
          assert.ok([201, 204, 404, 409].includes(response.statusCode), response.body);
          if (response.statusCode < 300) effective++;
        }
      };
      const local = new Map<string, Map<string, CaseJson>>(patients.map((p) => [p, new Map()]));
      const maxSeen = new Map<string, number>();
      const syncOnce = async (patient: string) => {
        const seen = maxSeen.get(patient);
        const { cases } = await casesApi(t.app, client.token, patient).all(seen === undefined ? {} : { u_at__gt: seen });
        for (const c of cases) {
          local.get(patient)!.set(c.id, c);
          maxSeen.set(patient, Math.max(maxSeen.get(patient) ?? 0, c.updated_at));
        }
        syncs++;
      };
      const syncer = async () => {
        while (running()) {
          for (const patient of patients) await syncOnce(patient);
          await sleep(20);
        }
      };
      await Promise.all([writer('p-one'), writer('p-one'), writer('p-two'), writer('p-two'), syncer()]);

      await untilSecondIsOver();
      for (const patient of patients) await syncOnce(patient);
      for (const patient of patients) {
        const mine = [...local.get(patient)!.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
        assert.deepEqual(mine, await serverState(t.ctx.storage.db, client.businessId, patient), patient);
      }
    });
  });
});
