/**
 * Statements with parameters run prepared on PostgreSQL, once per connection. A migration that
 * changes a prepared statement's result columns while the process runs costs one "unavailable"
 * answer on that connection; the connection is replaced and the statement prepared afresh.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStorage, type Storage } from '../../src/db/index.ts';
import { isDatabaseUnavailable } from '../../src/db/unavailable.ts';
import { createTestDatabase, DIALECT, type TestDatabase } from '../support.ts';

describe(`prepared statements (${DIALECT})`, () => {
  let database: TestDatabase;
  let storage: Storage;
  before(async () => {
    database = await createTestDatabase();
    // One connection: the statement is prepared on the connection that later sees the change.
    storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 1 });
    await sql`create table probe (a integer)`.execute(storage.db);
    await sql`insert into probe (a) values (1)`.execute(storage.db);
  });
  after(async () => {
    await storage.destroy();
    await database.drop();
  });

  const read = async () => (await sql<Record<string, unknown>>`select * from probe where a = ${1}`.execute(storage.db)).rows;

  it('answer as before when run again and again', async () => {
    for (let i = 0; i < 3; i++) assert.deepEqual(await read(), [{ a: 1 }]);
    if (DIALECT === 'postgres') {
      const prepared = await sql<{
        n: number;
      }>`select count(*)::int as n from pg_prepared_statements where statement like ${'%from probe where a = $1%'}`.execute(storage.db);
      assert.equal(prepared.rows[0]!.n, 1, 'prepared once on the connection');
    }
  });

  it('survive a migration that changes their result columns', async () => {
    await read();
    await sql`alter table probe add column b integer`.execute(storage.db);
    if (DIALECT === 'postgres') {
      await assert.rejects(read(), (error: unknown) => isDatabaseUnavailable(error), 'the stale plan answers as unavailable');
    }
    assert.deepEqual(await read(), [{ a: 1, b: null }]);
  });
});
