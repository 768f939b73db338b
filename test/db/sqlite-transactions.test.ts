/**
 * SQLite transactions take the write lock when they begin, so one that reads before it writes never
 * fails because another process committed in between (a deferred transaction does, at once, whatever
 * the busy timeout).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { inTransaction, openSqlite, type Storage } from '../../src/db/index.ts';

describe('SQLite transactions', () => {
  let dir: string;
  let storage: Storage;
  let other: SQLite.Database;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'cps-sqlite-tx-'));
    const file = path.join(dir, 'cps.sqlite');
    storage = openSqlite(file);
    await sql`create table counters (id text primary key, n integer not null)`.execute(storage.db);
    await sql`insert into counters values ('a', 0)`.execute(storage.db);
    // Another process's connection, which does not wait for a lock.
    other = new SQLite(file);
    other.pragma('busy_timeout = 0');
  });
  after(async () => {
    other.close();
    await storage.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('hold the write lock from their first statement, a read, to their commit', async () => {
    const seen: string[] = [];
    await inTransaction(storage.db, async (trx) => {
      const { rows } = await sql<{ n: number }>`select n from counters where id = 'a'`.execute(trx);
      assert.throws(() => other.prepare(`update counters set n = n + 1 where id = 'a'`).run(), /database is locked/);
      seen.push('refused while open');
      await sql`update counters set n = ${rows[0]!.n + 10} where id = 'a'`.execute(trx);
    });
    other.prepare(`update counters set n = n + 1 where id = 'a'`).run();
    assert.deepEqual(seen, ['refused while open']);
    const { rows } = await sql<{ n: number }>`select n from counters where id = 'a'`.execute(storage.db);
    assert.equal(rows[0]!.n, 11, 'both writes applied, one after the other');
  });
});
