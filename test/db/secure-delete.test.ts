/**
 * SQLite keeps no bytes of erased data: not in the database file's free pages, not in its write-ahead
 * log, not in a backup taken after the erasure (PostgreSQL: pages are reused by VACUUM, see docs/4-operations.md).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { backupDatabase } from '../../src/backup.ts';
import { truncateWriteAheadLog } from '../../src/db/index.ts';
import { call, person, seedPerson } from '../modules/privacy/support.ts';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../support.ts';

describe('erased data leaves the SQLite files (sqlite)', { skip: DIALECT !== 'sqlite' && 'the SQLite files only' }, () => {
  let t: TestApp;
  let client: TestClient;
  before(async () => {
    t = await createTestApp();
    client = await createTestClient(t.ctx);
  });
  after(() => t.close());

  const database = () => path.join(t.database.dataDir, 'cps.sqlite');
  /** Which of the needles the file's raw bytes hold. */
  function found(file: string, needles: string[]): string[] {
    if (!existsSync(file)) return [];
    const bytes = readFileSync(file);
    return needles.filter((needle) => bytes.includes(Buffer.from(needle)));
  }

  it('after an erasure, neither the database file nor its write-ahead log nor a backup holds the mobile number or a case title', async () => {
    const who = person();
    const { patientId } = await seedPerson(t, client, who);
    const needles = [who.local, `${who.last} X-ray c-1`];
    await t.ctx.audit.flush();
    // Everything on disk in the database file first, as after any checkpoint.
    assert.equal(await truncateWriteAheadLog(t.ctx.storage.db, 'sqlite'), true);
    assert.deepEqual(found(database(), needles), needles, 'the seed is in the file');

    const erased = await call(t, client.token, 'POST', `/privacy/v1/patients/${patientId}/erase`);
    assert.equal(erased.statusCode, 200, erased.body);
    await t.ctx.audit.flush();

    assert.deepEqual(found(database(), needles), [], 'the database file');
    assert.deepEqual(found(`${database()}-wal`, needles), [], 'the write-ahead log');
    const copy = path.join(t.database.dataDir, 'after-erasure.sqlite');
    await backupDatabase(t.ctx.config, copy, false);
    assert.deepEqual(found(copy, needles), [], 'a backup taken after the erasure');
  });

  it('copies no free page into a backup, also one freed before secure delete was on', async () => {
    const needle = `free-page-needle-${Date.now()}`;
    // A connection of an older release: deletes leave their bytes in the page freed.
    const older = new SQLite(database());
    older.pragma('secure_delete = OFF');
    older.exec('create table scratch (x text)');
    older.prepare('insert into scratch (x) values (?)').run(needle.repeat(400));
    older.exec('drop table scratch');
    older.pragma('wal_checkpoint(TRUNCATE)');
    older.close();
    assert.deepEqual(found(database(), [needle]), [needle], 'the live file still has it in a free page');
    const copy = path.join(t.database.dataDir, 'free-pages.sqlite');
    await backupDatabase(t.ctx.config, copy, false);
    assert.deepEqual(found(copy, [needle]), []);
  });
});
