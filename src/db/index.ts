/**
 * Storage: one Kysely instance over embedded SQLite (better-sqlite3) or PostgreSQL (pg), chosen by
 * DATABASE_URL. Column conventions that hold on both dialects: times are epoch milliseconds in
 * BIGINT columns, booleans are INTEGER 0/1, JSON is TEXT.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { userInfo } from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase, type Transaction } from 'kysely';
import pg from 'pg';
import { createPrivateFile, makePrivateDir } from '../security/data-dir.ts';
import type { Database } from './schema.ts';
import { isStalePlan } from './unavailable.ts';

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
}

const INT8_OID = 20;
const NUMERIC_OID = 1700;

export function openStorage(options: StorageOptions): Storage {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options.poolSize ?? 10, options.statementTimeoutMs ?? 0)
    : openSqlite(path.join(options.dataDir, 'cps.sqlite'));
}

export function openSqlite(file: string): Storage {
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
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: kyselyConnection(database) }) });
  return { db, dialect: 'sqlite', pgPool: null, location: file, destroy: () => db.destroy() };
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

/**
 * A pool client that prepares the statements it runs with parameters, once per connection, so
 * PostgreSQL parses and plans each once instead of on every execution (named statements of the
 * extended protocol). It closes its connection when a query's read timeout fires (the server may
 * still be running that query, and the next one would wait behind it) or when a prepared statement
 * outlived a schema change: the pool discards a closed client, and its successor prepares afresh.
 */
class PoolClient extends pg.Client {
  readonly #prepared = new Set<string>();

  override query(...args: any[]): any {
    const [text, values] = args;
    let named = false;
    if (args.length === 2 && typeof text === 'string' && Array.isArray(values)) {
      const name = statementName(text);
      if (this.#prepared.has(name) || this.#prepared.size < PREPARED_PER_CONNECTION) {
        this.#prepared.add(name);
        args = [{ name, text, values }];
        named = true;
      }
    }
    const result = (super.query as (...a: any[]) => any)(...args);
    if (result instanceof Promise) {
      result.catch((error: unknown) => {
        if ((error as Error)?.message === 'Query read timeout' || (named && isStalePlan(error))) this.end().catch(() => {});
      });
    }
    return result;
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
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const url = new URL(databaseUrl);
  if (url.password) url.password = '***';
  return { db, dialect: 'postgres', pgPool: pool, location: url.toString(), destroy: () => db.destroy() };
}

/**
 * What a request asks of the transactions it runs (the audit entry of a change, src/audit/): written
 * first in each, so it commits exactly when the change does, and before the change takes its locks:
 * the rows a change locks stay locked for one round trip less. Set around a handler by the HTTP layer.
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

export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
