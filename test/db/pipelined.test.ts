/**
 * On PostgreSQL a transaction's BEGIN, and the writes sent with writeWithNext, go out with the
 * transaction's next statement (or its COMMIT) in one round trip; they keep the transaction's
 * guarantees: read by what follows them, committed with it, undone with it, and an error of theirs
 * fails the transaction. On SQLite writeWithNext runs at once: the same outcomes, no round trips.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { inTransaction, isUniqueViolation, openStorage, writeWithNext, type Db, type Storage } from '../../src/db/index.ts';
import { createTestDatabase, DIALECT, type TestDatabase } from '../support.ts';

describe(`writes sent with the next statement (${DIALECT})`, () => {
  let database: TestDatabase;
  let storage: Storage;
  /** Round trips: every query pg's client sends (each ends with one Sync). */
  let roundTrips = 0;
  const original = pg.Client.prototype.query;

  before(async () => {
    database = await createTestDatabase();
    // One connection: what a failed transaction leaves on it is what the next one meets.
    storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 1 });
    await sql`create table notes (id text primary key, body text not null)`.execute(storage.db);
    (pg.Client.prototype as { query: unknown }).query = function (this: pg.Client, ...args: unknown[]) {
      roundTrips++;
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    };
  });
  after(async () => {
    pg.Client.prototype.query = original;
    await storage.destroy();
    await database.drop();
  });
  beforeEach(async () => {
    await sql`delete from notes`.execute(storage.db);
    roundTrips = 0;
  });

  const insert = (db: Db, id: string) => db.insertInto('notes' as never).values({ id, body: `note ${id}` } as never);
  const ids = async () => (await sql<{ id: string }>`select id from notes order by id`.execute(storage.db)).rows.map((row) => row.id);
  const count = async (db: Db) =>
    (await sql<{ n: number }>`select cast(count(*) as integer) as n from notes where body like ${'note%'}`.execute(db)).rows[0]!.n;

  it('are read by the statements after them and committed with the transaction, the BEGIN riding with the first statement', async () => {
    const seen = await inTransaction(storage.db, async (trx) => {
      await writeWithNext(trx, insert(trx, 'a'));
      const n = await count(trx);
      await writeWithNext(trx, insert(trx, 'b'));
      return n;
    });
    if (DIALECT === 'postgres') assert.equal(roundTrips, 2, 'BEGIN, a and the count in one round trip; b and COMMIT in the other');
    assert.equal(seen, 1, 'the count read the write held before it');
    assert.deepEqual(await ids(), ['a', 'b']);
  });

  it('are undone with their transaction, and a transaction that sent nothing costs no round trip', async () => {
    await assert.rejects(
      inTransaction(storage.db, async (trx) => {
        await count(trx);
        await writeWithNext(trx, insert(trx, 'c'));
        throw new Error('the change is refused');
      }),
      /the change is refused/,
    );
    if (DIALECT === 'postgres') assert.equal(roundTrips, 2, 'the count with BEGIN, then ROLLBACK alone: c was never sent');
    roundTrips = 0;
    await inTransaction(storage.db, async () => {});
    await assert.rejects(
      inTransaction(storage.db, async () => {
        throw new Error('refused before any statement');
      }),
      /refused before any statement/,
    );
    if (DIALECT === 'postgres') assert.equal(roundTrips, 0, 'neither BEGIN nor its end was sent');
    assert.deepEqual(await ids(), []);
  });

  it("fail the transaction when one of them fails, with the database's own error", async () => {
    await insert(storage.db, 'x').execute();
    await assert.rejects(
      inTransaction(storage.db, async (trx) => {
        await insert(trx, 'y').execute();
        await writeWithNext(trx, insert(trx, 'x'));
        await count(trx);
      }),
      (error: unknown) => isUniqueViolation(error),
    );
    assert.deepEqual(await ids(), ['x'], 'y was rolled back with the failed write');
    // A write held until COMMIT fails the COMMIT, and nothing of the transaction stays.
    await assert.rejects(
      inTransaction(storage.db, async (trx) => {
        await insert(trx, 'z').execute();
        await writeWithNext(trx, insert(trx, 'x'));
      }),
      (error: unknown) => isUniqueViolation(error),
    );
    assert.deepEqual(await ids(), ['x']);
  });

  it('leave the connection fit: the statement a failed write carried runs afterwards', async () => {
    await insert(storage.db, 'x').execute();
    // A statement this connection has not prepared yet: the failed write skipped its preparation.
    const fresh = (db: Db) =>
      sql<{ n: number }>`select cast(count(*) as integer) as n from notes where id <> ${'never'} and body <> ${''}`.execute(db);
    await assert.rejects(
      inTransaction(storage.db, async (trx) => {
        await writeWithNext(trx, insert(trx, 'x'));
        await fresh(trx);
      }),
      (error: unknown) => isUniqueViolation(error),
    );
    assert.equal((await inTransaction(storage.db, (trx) => fresh(trx))).rows[0]!.n, 1);
    assert.equal((await fresh(storage.db)).rows[0]!.n, 1);
    // The carrying statement prepared, then failed itself: prepared once, it runs again.
    const other = (db: Db, id: string) => sql`insert into notes (id, body) values (${id}, ${'other'})`.execute(db);
    await assert.rejects(
      inTransaction(storage.db, async (trx) => {
        await writeWithNext(trx, insert(trx, 'p'));
        await other(trx, 'x');
      }),
      (error: unknown) => isUniqueViolation(error),
    );
    await inTransaction(storage.db, async (trx) => {
      await writeWithNext(trx, insert(trx, 'q'));
      await other(trx, 'r');
    });
    assert.deepEqual(await ids(), ['q', 'r', 'x']);
  });

  it('with a value that cannot be sent fail alone: the transaction goes on with what it held, and the statement runs later', async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    // A held write fails at once; what the transaction held before it stays in the transaction.
    await assert.rejects(
      inTransaction(storage.db, async (trx) => {
        await writeWithNext(trx, insert(trx, 'a'));
        await assert.rejects(writeWithNext(trx, trx.insertInto('notes' as never).values({ id: 'c', body: circular } as never)));
        await insert(trx, 'b').execute();
        assert.equal(await count(trx), 2, 'a and b, in the transaction');
        throw new Error('the change is refused');
      }),
      /the change is refused/,
    );
    assert.deepEqual(await ids(), [], 'a and b were rolled back with their transaction');
    // A statement sent at once: once a value can be sent, it runs (it was not left half-prepared).
    const statement = (body: unknown) => sql`insert into notes (id, body) values (${'e'}, ${body})`;
    await assert.rejects(statement(circular).execute(storage.db));
    await statement('note e').execute(storage.db);
    assert.deepEqual(await ids(), ['e']);
  });

  it('may return rows, which nobody reads', async () => {
    await inTransaction(storage.db, async (trx) => {
      await writeWithNext(
        trx,
        trx
          .insertInto('notes' as never)
          .values({ id: 'r', body: 'note r' } as never)
          .returning('id' as never),
      );
    });
    assert.deepEqual(await ids(), ['r']);
  });

  it('get each their statement timeout within the round trip that carries them', { skip: DIALECT !== 'postgres' }, async () => {
    const url = new URL(database.databaseUrl!);
    url.searchParams.set('statement_timeout', '400');
    url.searchParams.set('query_timeout', '500');
    const timed = openStorage({ databaseUrl: url.toString(), dataDir: database.dataDir, poolSize: 1 });
    try {
      // Three held statements of 250 ms each and the one carrying them: one round trip of 750 ms,
      // longer than the read timeout of one statement, no statement longer than its timeout.
      await inTransaction(timed.db, async (trx) => {
        for (let i = 0; i < 3; i++) await writeWithNext(trx, sql`select pg_sleep(0.25)`);
        await insert(trx, 't').execute();
      });
    } finally {
      await timed.destroy();
    }
    assert.deepEqual(await ids(), ['t']);
  });

  it('never reach the next user of a connection given back inside its transaction', { skip: DIALECT !== 'postgres' }, async () => {
    const pool = storage.pgPool!;
    const backend = async (client: pg.PoolClient) => (await client.query('select pg_backend_pid() as pid', [])).rows[0].pid as number;
    // Seen from a connection of its own (the pool's one is the one looked at).
    const observer = new pg.Client({ connectionString: database.databaseUrl! });
    await observer.connect();
    const stateOf = async (pid: number) =>
      (await observer.query('select state from pg_stat_activity where pid = $1', [pid])).rows[0]?.state as string;
    // Nothing sent yet: the held BEGIN and write are dropped, and the connection serves the next user as it is.
    const first = await pool.connect();
    const pid = await backend(first);
    await first.query('begin', []);
    await first.query(`/* cps:held */ insert into notes (id, body) values ($1, $2)`, ['h', 'held']);
    first.release();
    const second = await pool.connect();
    assert.equal(await backend(second), pid, 'the same connection');
    second.release();
    assert.equal(await stateOf(pid), 'idle', 'outside any transaction');
    assert.deepEqual(await ids(), [], 'the held write was never sent');
    // BEGIN sent: the connection is closed rather than lent out with its transaction open.
    const third = await pool.connect();
    await third.query('begin', []);
    await backend(third);
    third.release();
    const fourth = await pool.connect();
    const other = await backend(fourth);
    fourth.release();
    assert.notEqual(other, pid, 'a new connection');
    assert.equal(await stateOf(other), 'idle');
    await observer.end();
  });

  it('run at once outside a transaction', async () => {
    await writeWithNext(storage.db, insert(storage.db, 'w'));
    assert.deepEqual(await ids(), ['w']);
  });
});
