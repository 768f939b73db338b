/**
 * Preloaded into a server process by the PostgreSQL benches (`node --import bench/pg-probe.ts`),
 * leaving src/ untouched: it counts the pool's checkouts, the time each waited for a connection and
 * the round trips, and writes them as JSON to CPS_BENCH_PROBE_FILE when the process exits.
 * Cost: two clock reads per checkout and a counter per round trip.
 */
import { writeFileSync } from 'node:fs';
import pg from 'pg';

export interface ProbeStats {
  /** pool.connect() calls: one per statement outside a transaction, one per transaction. */
  checkouts: number;
  /** Checkouts that found no idle connection and waited (for a new one or a free one). */
  waited: number;
  /** Over every checkout, idle ones (about 0 ms) included. */
  waitMsTotal: number;
  waitMsP50: number;
  waitMsP99: number;
  waitMsMax: number;
  /** The most requests queued for a connection at once. */
  maxQueued: number;
  /** The pool's size (the largest `max` seen). */
  poolMax: number;
  /**
   * Round trips: queries every client of the process sent, each answered before the next (a
   * transaction's BEGIN and the writes held for the next statement travel with it, src/db/index.ts).
   */
  roundTrips: number;
}

const file = process.env.CPS_BENCH_PROBE_FILE;
if (file) {
  const waits: number[] = [];
  let checkouts = 0;
  let waited = 0;
  let roundTrips = 0;
  let maxQueued = 0;
  let poolMax = 0;
  type Connect = (this: pg.Pool, ...args: unknown[]) => unknown;
  const connect = pg.Pool.prototype.connect as unknown as Connect;
  (pg.Pool.prototype as unknown as { connect: Connect }).connect = function (this: pg.Pool, ...args: unknown[]) {
    if (args.length > 0) return connect.apply(this, args);
    checkouts++;
    poolMax = Math.max(poolMax, (this as unknown as { options: { max: number } }).options.max);
    maxQueued = Math.max(maxQueued, this.waitingCount + 1);
    const idle = this.idleCount > 0;
    const started = performance.now();
    return (connect.call(this) as Promise<pg.PoolClient>).then((client) => {
      waits.push(performance.now() - started);
      if (!idle) waited++;
      return client;
    });
  };
  type Query = (this: pg.Client, ...args: unknown[]) => unknown;
  const query = pg.Client.prototype.query as unknown as Query;
  (pg.Client.prototype as unknown as { query: Query }).query = function (this: pg.Client, ...args: unknown[]) {
    roundTrips++;
    return query.apply(this, args);
  };
  process.on('exit', () => {
    const sorted = waits.sort((a, b) => a - b);
    const at = (q: number) => Math.round((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) * 100) / 100;
    const stats: ProbeStats = {
      checkouts,
      waited,
      waitMsTotal: Math.round(sorted.reduce((sum, w) => sum + w, 0)),
      waitMsP50: at(0.5),
      waitMsP99: at(0.99),
      waitMsMax: at(1),
      maxQueued,
      poolMax,
      roundTrips,
    };
    writeFileSync(file, JSON.stringify(stats));
  });
}
