/**
 * Storage: one Kysely instance over embedded SQLite (better-sqlite3) or PostgreSQL (pg), chosen by
 * DATABASE_URL. Column conventions that hold on both dialects: times are epoch milliseconds in
 * BIGINT columns, booleans are INTEGER 0/1, JSON is TEXT.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { userInfo } from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  PostgresDialect,
  SqliteDialect,
  sql,
  type Compilable,
  type RawBuilder,
  type SqliteDatabase,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import { createPrivateFile, makePrivateDir } from '../security/data-dir.ts';
import { isPostgres } from './dialect.ts';
import type { Database } from './schema.ts';
import { isStalePlan } from './unavailable.ts';
import { startWalCheckpointer, WAL_BACKSTOP_PAGES } from './wal-checkpointer.ts';

export type DialectName = 'sqlite' | 'postgres';

export interface Storage {
  db: Kysely<Database>;
  dialect: DialectName;
  /** The PostgreSQL pool, for LISTEN/NOTIFY; null on SQLite. */
  pgPool: pg.Pool | null;
  /** The SQLite file, or the PostgreSQL URL with its password hidden. */
  location: string;
  destroy(): Promise<void>;
}

export type Db = Kysely<Database> | Transaction<Database>;

export interface StorageOptions {
  databaseUrl: string | null;
  dataDir: string;
  /** PostgreSQL pool size. */
  poolSize?: number;
  /**
   * PostgreSQL: the server cancels a statement that runs longer (absent or 0: no limit). The server
   * sets it; maintenance commands (migrate, import) run without.
   */
  statementTimeoutMs?: number;
  /** SQLite: checkpoint the write-ahead log from a worker thread, not on the event loop (the server does; wal-checkpointer.ts). */
  checkpointInBackground?: boolean;
}

const INT8_OID = 20;
const NUMERIC_OID = 1700;

export function openStorage(options: StorageOptions): Storage {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options.poolSize ?? 10, options.statementTimeoutMs ?? 0)
    : openSqlite(path.join(options.dataDir, 'cps.sqlite'), options.checkpointInBackground ?? false);
}

export function openSqlite(file: string, checkpointInBackground = false): Storage {
  // A 0700 directory and a 0600 file before SQLite opens it: SQLite gives the -wal, -shm and
  // -journal files it creates later the database file's mode.
  if (file !== ':memory:') {
    makePrivateDir(path.dirname(file));
    createPrivateFile(file);
  }
  const database = new SQLite(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  // Deleted rows are overwritten with zeros, in their pages and in pages freed: an erased patient's
  // data does not stay in the file's bytes (docs/4-operations.md "Export and erasure").
  database.pragma('secure_delete = ON');
  const checkpointer = checkpointInBackground && file !== ':memory:' ? startWalCheckpointer(file) : null;
  if (checkpointer) database.pragma(`wal_autocheckpoint = ${WAL_BACKSTOP_PAGES}`);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: kyselyConnection(database) }) });
  const destroy = async () => {
    await checkpointer?.stop();
    await db.destroy();
  };
  return { db, dialect: 'sqlite', pgPool: null, location: file, destroy };
}

/**
 * SQLite: folds the write-ahead log into the database and truncates it, so that the log holds no
 * copy of pages from before a deletion (an erasure). Best effort: another process reading an older
 * snapshot keeps the log whole (SQLITE_BUSY after the busy timeout), and the log's frames are then
 * overwritten once it restarts. Nothing on PostgreSQL.
 */
export async function truncateWriteAheadLog(db: Kysely<Database>, dialect: DialectName): Promise<boolean> {
  if (dialect !== 'sqlite') return true;
  const [result] = (await sql<{ busy: number }>`pragma wal_checkpoint(TRUNCATE)`.execute(db)).rows;
  return result?.busy === 0;
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * The connection as Kysely gets it: statements cached, transactions immediate.
 *
 * Kysely prepares every query afresh, and compiling SQL was the largest cost of a simple read on
 * SQLite; statements are kept by their text (bounded, least recently used evicted). Reusing one is
 * safe: Kysely runs one query at a time on the single connection.
 *
 * Transactions begin IMMEDIATE, taking the write lock first: a deferred one that reads and then
 * writes fails at once with "database is locked" when another process (a second server, the cps
 * command) committed in between, since the busy timeout does not apply to that case; an immediate
 * one waits for its turn instead.
 */
function kyselyConnection(database: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => void database.close(),
    prepare(text: string) {
      const sqlText = text === 'begin' ? 'begin immediate' : text;
      let statement = cache.get(sqlText);
      if (statement) {
        cache.delete(sqlText);
      } else {
        statement = database.prepare(sqlText);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      cache.set(sqlText, statement);
      return statement as unknown as ReturnType<SqliteDatabase['prepare']>;
    },
  };
}

/** PostgreSQL: the server process's statement timeout (see StorageOptions.statementTimeoutMs). */
export const SERVER_STATEMENT_TIMEOUT_MS = 30_000;

/** PostgreSQL: the longest wait for a connection, opening a new one or waiting for a free one in the pool. */
export const PG_CONNECT_TIMEOUT_MS = 5000;

/**
 * Added to the statement timeout to give the client's own read timeout: a server that stopped
 * answering without closing the connection (a failover can leave the socket open) is given up.
 */
const PG_READ_TIMEOUT_MARGIN_MS = 5000;

/** Distinct statements a PostgreSQL connection keeps prepared; others run unnamed (parsed each time). */
const PREPARED_PER_CONNECTION = 200;

const statementNames = new Map<string, string>();

/** A name per statement text, the same in every connection (texts are few: Kysely builds them from code). */
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `cps_${createHash('sha1').update(text).digest('base64url')}`;
    if (statementNames.size >= 10 * PREPARED_PER_CONNECTION) statementNames.clear();
    statementNames.set(text, name);
  }
  return name;
}

/** Kysely's statement opening a transaction (PostgresDriver.beginTransaction without settings). */
const BEGIN = 'begin';
/** Marks a statement sent with `writeWithNext`: the connection holds it for the transaction's next one. */
const HELD = '/* cps:held */ ';

interface HeldStatement {
  text: string;
  values: unknown[];
}

/** What a statement nobody waited for answers at once (Kysely reads `command`, `rowCount` and `rows`). */
const heldResult = (command: string | null) => ({ command, rowCount: null, rows: [], fields: [] });

/** The parts of pg's connection and Query a pipelined query uses (pg does not type them). */
interface ProtocolConnection {
  stream: { cork?(): void; uncork?(): void };
  submittedNamedStatements: Record<string, string>;
  parse(config: { text: string; name: string; types: unknown[] }): void;
  bind(config: { portal: string; statement: string; values: unknown[] }): void;
  execute(config: { portal: string; rows: number }): void;
}
interface ProtocolQuery {
  name?: string;
  callback?: (error: Error | null, result?: unknown) => void;
  submit(connection: ProtocolConnection): Error | null;
  /** pg's read timeout for this query, when it is given one (see PoolClient). */
  query_timeout?: number;
  handleCommandComplete(message: unknown, connection: ProtocolConnection): void;
  handleEmptyQuery(connection: ProtocolConnection): void;
  handleDataRow(message: unknown): void;
  handleError(error: Error, connection: ProtocolConnection): void;
}
const BaseQuery = pg.Query as unknown as new (config: object) => ProtocolQuery;
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: (value: unknown) => unknown };

/**
 * A statement sent in one write with held ones before it (each parsed unnamed, bound and executed,
 * no Sync between them), so they all cost one round trip. PostgreSQL runs them in order and skips
 * the rest after an error up to the one Sync, whose error is this statement's: a held statement's
 * error fails the statement that carried it, and so its transaction.
 */
class PipelinedQuery extends BaseQuery {
  readonly #before: HeldStatement[];
  #completed = 0;
  /** This statement's prepared name, hidden from pg while the held statements are answered. */
  #name: string | undefined;

  constructor(config: object, before: HeldStatement[]) {
    super(config);
    this.#before = before;
  }

  override submit(connection: ProtocolConnection): Error | null {
    connection.stream.cork?.();
    try {
      // The values were converted as the statements were held (PoolClient), so nothing here can throw
      // between the first message and the Sync.
      for (const { text, values } of this.#before) {
        connection.parse({ text, name: '', types: [] });
        connection.bind({ portal: '', statement: '', values });
        connection.execute({ portal: '', rows: 0 });
      }
      return super.submit(connection);
    } finally {
      connection.stream.uncork?.();
      // pg takes the active query's name as prepared at every ParseComplete: the held statements'
      // come first, and would mark this one prepared even when an error among them skipped its Parse.
      this.#name = this.name;
      this.name = undefined;
    }
  }

  override handleCommandComplete(message: unknown, connection: ProtocolConnection): void {
    // The held statements' completions come first; only this statement's makes the result.
    if (this.#answeringHeld()) this.#heldCompleted();
    else super.handleCommandComplete(message, connection);
  }

  override handleEmptyQuery(connection: ProtocolConnection): void {
    if (this.#answeringHeld()) this.#heldCompleted();
    else super.handleEmptyQuery(connection);
  }

  override handleDataRow(message: unknown): void {
    // A held statement's rows (RETURNING, a function's answer) have no description: nobody reads them.
    if (!this.#answeringHeld()) super.handleDataRow(message);
  }

  #answeringHeld(): boolean {
    return this.#completed < this.#before.length;
  }

  #heldCompleted(): void {
    if (++this.#completed === this.#before.length) this.name = this.#name;
  }

  override handleError(error: Error, connection: ProtocolConnection): void {
    // A held statement failed: this one was skipped, its Parse too.
    if (this.#name !== undefined && this.name === undefined) delete connection.submittedNamedStatements[this.#name];
    super.handleError(error, connection);
  }
}

/**
 * A pool client that prepares the statements it runs with parameters, once per connection, so
 * PostgreSQL parses and plans each once instead of on every execution (named statements of the
 * extended protocol). It closes its connection when a query's read timeout fires (the server may
 * still be running that query, and the next one would wait behind it) or when a prepared statement
 * outlived a schema change: the pool discards a closed client, and its successor prepares afresh.
 *
 * Inside a transaction it holds the BEGIN, and the writes sent with `writeWithNext`, and sends them in
 * one write with the next statement (or the COMMIT): a transaction's first statement costs no round
 * trip of its own, nor does a write whose outcome nobody waits for. A transaction that ends before
 * sending anything sends nothing.
 */
class PoolClient extends pg.Client {
  readonly #prepared = new Set<string>();
  #inTransaction = false;
  /** Statements of the open transaction not sent yet. */
  #held: HeldStatement[] = [];

  override query(...args: any[]): any {
    const [text, values] = args;
    if (args.length !== 2 || typeof text !== 'string' || !Array.isArray(values))
      return this.#watch((super.query as (...a: any[]) => any)(...args), false);
    // Converted before anything is held or sent: a value that cannot be sent fails its own statement
    // and leaves the transaction's held statements, and a named statement's bookkeeping, as they were.
    let converted: unknown[];
    try {
      converted = values.map((value) => prepareValue(value));
    } catch (error) {
      return Promise.reject(error);
    }
    if (text === BEGIN) {
      this.#inTransaction = true;
      this.#held = [{ text, values: converted }];
      return Promise.resolve(heldResult('BEGIN'));
    }
    if (text.startsWith(HELD) && this.#inTransaction) {
      this.#held.push({ text: text.slice(HELD.length), values: converted });
      return Promise.resolve(heldResult(null));
    }
    const held = this.#held;
    this.#held = [];
    if (text === 'commit' || text === 'rollback') {
      this.#inTransaction = false;
      // A transaction that sent nothing (its BEGIN still held) has nothing to end.
      const begun = held[0]?.text !== BEGIN;
      if (!begun && (text === 'rollback' || held.length === 1)) return Promise.resolve(heldResult(text.toUpperCase()));
      // A rollback drops what it would undo.
      if (text === 'rollback') held.length = 0;
    }
    let config: { name?: string; text: string; values: unknown[]; queryMode?: 'extended' } = { text, values: converted };
    const name = statementName(text);
    const named = this.#prepared.has(name) || this.#prepared.size < PREPARED_PER_CONNECTION;
    if (named) {
      this.#prepared.add(name);
      config = { name, text, values: converted };
    }
    let result: Promise<unknown>;
    if (held.length === 0) {
      result = (super.query as (...a: any[]) => Promise<unknown>)(config);
    } else {
      // Extended protocol throughout: a simple Query message would end the held statements' block.
      const query = new PipelinedQuery({ ...config, queryMode: 'extended' }, held);
      // The read timeout allows each statement of the round trip its statement timeout (a URL's
      // parameters arrive as strings).
      const timeouts = (this as unknown as { connectionParameters: { query_timeout?: unknown; statement_timeout?: unknown } }).connectionParameters;
      const [readTimeout, statementTimeout] = [Number(timeouts.query_timeout), Number(timeouts.statement_timeout)];
      if (readTimeout > 0 && statementTimeout > 0) query.query_timeout = readTimeout + held.length * statementTimeout;
      result = new Promise((resolve, reject) => {
        query.callback = (error, answer) => (error ? reject(error) : resolve(answer));
      });
      (super.query as (q: unknown) => unknown)(query);
    }
    return this.#watch(result, named);
  }

  /** Closes the connection after a read timeout, or a prepared statement's stale plan (see above). */
  #watch<T>(result: T, named: boolean): T {
    if (result instanceof Promise) {
      result.catch((error: unknown) => {
        if ((error as Error)?.message === 'Query read timeout' || (named && isStalePlan(error))) this.end().catch(() => {});
      });
    }
    return result;
  }

  /**
   * As the pool takes the client back: forgets a transaction that did not end (Kysely always ends
   * one), so no held statement reaches the next user; answers whether PostgreSQL has it open.
   */
  releasedOpen(): boolean {
    const open = this.#inTransaction && this.#held[0]?.text !== BEGIN;
    this.#inTransaction = false;
    this.#held = [];
    return open;
  }
}

export function openPostgres(databaseUrl: string, poolSize: number, statementTimeoutMs = 0): Storage {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    // libpq's default when the URL names no user; pg would read $USER, which services often lack.
    ...(new URL(databaseUrl).username ? {} : { user: userInfo().username }),
    max: poolSize,
    Client: PoolClient,
    // Without a bound, a request waits forever for an unreachable server or a pool that never frees.
    connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS,
    keepAlive: true,
    // Parameters in DATABASE_URL (?statement_timeout=...&query_timeout=...) take precedence over these.
    ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs, query_timeout: statementTimeoutMs + PG_READ_TIMEOUT_MARGIN_MS } : {}),
    // BIGINT (epoch milliseconds, counts) and NUMERIC (prices) arrive as strings unless parsed.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
        if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
        return pg.types.getTypeParser(oid, format);
      }) as typeof pg.types.getTypeParser,
    },
  });
  // No connection loss may end the process. The pool listens on its idle clients and re-emits
  // their errors here (it has already discarded the client); a client checked out of the pool has
  // no listener of the pool's, so each gets one for its whole life. The error reaches whoever uses
  // that client through its next query, which fails (see unavailable.ts).
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  // A client given back inside a transaction is closed, so the pool drops it instead of lending it out.
  pool.on('release', (_error, client) => {
    if (client instanceof PoolClient && client.releasedOpen()) client.end().catch(() => {});
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const url = new URL(databaseUrl);
  if (url.password) url.password = '***';
  return { db, dialect: 'postgres', pgPool: pool, location: url.toString(), destroy: () => db.destroy() };
}

/**
 * What a request asks of the transactions it runs (the audit entry of a change, src/access-log/): written
 * first in each, so it commits exactly when the change does, before the change takes its locks, and
 * with its first statement (writeWithNext). Set around a handler by the HTTP layer.
 */
export interface TransactionObserver {
  begun(trx: Transaction<Database>): Promise<void>;
  committed(): void;
}

const observers = new AsyncLocalStorage<TransactionObserver>();

/** Runs `work` with `observer` consulted by every inTransaction it reaches. */
export function observeTransactions<T>(observer: TransactionObserver, work: () => T): T {
  return observers.run(observer, work);
}

/** Runs `work`, and what it starts, with no observer: background work a request's callbacks set going. */
export function withoutTransactionObserver<T>(work: () => T): T {
  return observers.exit(work);
}

/** Runs `work` in one transaction: everything it writes commits together, or nothing does. */
export function inTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  const observer = observers.getStore();
  if (observer === undefined) return db.transaction().execute(work);
  return db
    .transaction()
    .execute(async (trx) => {
      await observer.begun(trx);
      return work(trx);
    })
    .then((result) => {
      observer.committed();
      return result;
    });
}

/** Whether PostgreSQL rolled the transaction back to break a deadlock (40P01) or a serialization failure (40001). */
export function isRolledBackConflict(error: unknown): boolean {
  const code = (error as { code?: string })?.code;
  return code === '40P01' || code === '40001';
}

/**
 * inTransaction, run again (at most `attempts` times in all) when PostgreSQL rolled it back to break
 * a deadlock: nothing of it committed, so running it again is safe. For changes that lock several
 * patients, whose lock order other changes (a booking by a merged patient's partner id) cannot share.
 */
export async function inRetriedTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await inTransaction(db, work);
    } catch (error) {
      if (attempt >= attempts || !isRolledBackConflict(error)) throw error;
    }
  }
}

/**
 * Runs a write in `db`'s transaction whose outcome its caller does not wait for: on PostgreSQL it goes
 * out with the transaction's next statement, or its COMMIT, in the same round trip, and an error it
 * meets fails that statement instead (see PoolClient). On SQLite, and outside a transaction, it runs
 * at once.
 */
export async function writeWithNext(db: Db, query: Compilable | RawBuilder<unknown>): Promise<void> {
  // A raw statement compiles against its executor; a query builder's compile ignores the argument.
  const compiled = (query as { compile(db: Db): CompiledQuery }).compile(db);
  if (!db.isTransaction || !isPostgres(db)) await db.executeQuery(compiled);
  else await db.executeQuery(CompiledQuery.raw(HELD + compiled.sql, [...compiled.parameters]));
}

export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
