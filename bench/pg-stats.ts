/**
 * What a PostgreSQL load sent, for the benches: pg_stat_statements of one scratch database (reset
 * before the load, read after it), and the pool probe (pg-probe.ts) of each server process. Without
 * the extension preloaded (shared_preload_libraries) the statement figures are left out with a note.
 */
import { existsSync, readFileSync } from 'node:fs';
import type pg from 'pg';
import type { ProbeStats } from './pg-probe.ts';

export const PROBE = ['--import', new URL('./pg-probe.ts', import.meta.url).pathname];

export interface StatementStats {
  query: string;
  calls: number;
  totalMs: number;
  meanMs: number;
}

/** pg_stat_statements of the database `dbName`, read through `client` (any database of the cluster). */
export class StatementCounter {
  readonly client: pg.Client;
  readonly dbName: string;
  available = false;
  constructor(client: pg.Client, dbName: string) {
    this.client = client;
    this.dbName = dbName;
  }

  /** Creates the extension in the client's database when the library is preloaded. */
  async init(): Promise<this> {
    const preload = await this.client.query<{ shared_preload_libraries: string }>('show shared_preload_libraries');
    if (!preload.rows[0]!.shared_preload_libraries.includes('pg_stat_statements')) return this;
    await this.client.query('create extension if not exists pg_stat_statements');
    this.available = true;
    return this;
  }

  async reset(): Promise<void> {
    if (!this.available) return;
    await this.client.query('select pg_stat_statements_reset(0, (select oid from pg_database where datname = $1), 0)', [this.dbName]);
  }

  async read(): Promise<StatementStats[]> {
    if (!this.available) return [];
    const result = await this.client.query<{ query: string; calls: string; total: number; mean: number }>(
      `select query, calls, total_exec_time as total, mean_exec_time as mean from pg_stat_statements
       where dbid = (select oid from pg_database where datname = $1) and query not like '%pg_stat_statements%' order by calls desc`,
      [this.dbName],
    );
    return result.rows.map((row) => ({ query: row.query.replace(/\s+/g, ' '), calls: Number(row.calls), totalMs: row.total, meanMs: row.mean }));
  }
}

/** "7.0 statements per request (BEGIN 1.0, select ... 1.0, ...)": the calls of each statement per unit of work. */
export function perUnit(stats: StatementStats[], units: number, unit: string, top = 8): string {
  if (stats.length === 0) return 'statements: pg_stat_statements not loaded';
  const total = stats.reduce((sum, s) => sum + s.calls, 0);
  const parts = stats.slice(0, top).map((s) => `${(s.calls / units).toFixed(2)}× \`${s.query.slice(0, 90)}\` (mean ${s.meanMs.toFixed(3)} ms)`);
  return `${(total / units).toFixed(2)} statements per ${unit}: ${parts.join('; ')}`;
}

/** The probe file a server process wrote at exit, or null. */
export function readProbe(file: string): ProbeStats | null {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ProbeStats) : null;
}

export function probeNote(stats: Array<ProbeStats | null>, units: number, unit: string): string {
  const present = stats.filter((s) => s !== null);
  if (present.length === 0) return '';
  const sum = (f: (s: ProbeStats) => number) => present.reduce((total, s) => total + f(s), 0);
  const checkouts = sum((s) => s.checkouts);
  return (
    `pool (${present.length} processes, max ${present[0]!.poolMax} each): ${(checkouts / units).toFixed(2)} checkouts and ${(sum((s) => s.roundTrips) / units).toFixed(2)} round trips per ${unit}, ` +
    `${Math.round((sum((s) => s.waited) / Math.max(1, checkouts)) * 100)}% of checkouts found no idle connection, ` +
    `wait p50 ${Math.max(...present.map((s) => s.waitMsP50))} ms, p99 ${Math.max(...present.map((s) => s.waitMsP99))} ms, max ${Math.max(...present.map((s) => s.waitMsMax))} ms, ` +
    `${(sum((s) => s.waitMsTotal) / units).toFixed(2)} ms waited per ${unit}, up to ${Math.max(...present.map((s) => s.maxQueued))} queued`
  );
}
