/**
 * The access log of one process (docs/4-operations.md "Audit log"). A change's entry is written in the change's
 * own transaction (http.ts asks inTransaction to); what its answer adds (status, ids) and every
 * read's entry go to the write-ahead file, fsynced before the answer is sent, and from there to the
 * database in batches (every flushMs, or flushEntries entries), off the request's path. Entries are
 * then chained per business (store.ts). A process killed after answering leaves its records in the
 * write-ahead file; the next process to start on that data directory writes them (start).
 */
import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { withoutTransactionObserver, type Db } from '../db/index.ts';
import type { Database } from '../db/schema.ts';
import type { AuditCompletion, AuditEntry } from './entry.ts';
import { ChainSeal } from './seal.ts';
import { appendChained, businessesOf, businessesToChain, chainBusiness, completeEntries, insertEntries, insertWithChange } from './store.ts';
import { WriteAheadFile, type Segment } from './wal.ts';

export type WalRecord = { e: AuditEntry } | { c: AuditCompletion };

export interface AuditLogOptions {
  db: Kysely<Database>;
  dataDir: string;
  /** Off (CPS_AUDIT=off) only to measure what the log costs: nothing is recorded. */
  enabled: boolean;
  flushMs: number;
  flushEntries: number;
  /**
   * 'write': an answer waits until its entry is written to the write-ahead file (in the kernel: safe
   * from the process being killed; fdatasync follows with each batch). 'fsync': until it is on disk
   * (safe from a power loss too, at the disk's fsync latency per answer).
   */
  sync: 'write' | 'fsync';
  /** The master key: filter values are kept as digests under a key derived from it. */
  masterKey: Buffer;
  logger: Logger;
}

type Done = (error: Error | null) => void;

/** An entry written with its change is chained without its answer once this old (the process stopped in between). */
export const UNANSWERED_GRACE_MS = 60_000;
/** Entries chained per business per transaction. */
const CHAIN_BATCH = 2000;
/** Even with nothing written here, entries other processes left unchained are looked for this often. */
const CHAIN_SWEEP_MS = 10_000;

export class AuditLog {
  readonly enabled: boolean;
  readonly #options: AuditLogOptions;
  readonly #wal: WriteAheadFile<WalRecord>;
  readonly #digestKey: Buffer;
  readonly #idPrefix = `al_${randomBytes(8).toString('hex')}`;
  #counter = 0;
  #entries: Array<{ entry: AuditEntry; segment: Segment | null }> = [];
  #completions: Array<{ completion: AuditCompletion; segment: Segment | null }> = [];
  #timer: NodeJS.Timeout | null = null;
  #flushChain: Promise<void> = Promise.resolve();
  #flushQueued = false;
  #chainDue = false;
  #lastChain = 0;
  /** Seals chains' ends: a new business's chain is opened with it (BusinessService). */
  readonly chainSeal: ChainSeal;

  constructor(options: AuditLogOptions) {
    this.#options = options;
    this.enabled = options.enabled;
    this.#wal = new WriteAheadFile<WalRecord>(path.join(options.dataDir, 'audit'), options.sync === 'fsync', (records, segment) =>
      this.#durable(records, segment),
    );
    this.#digestKey = Buffer.from(hkdfSync('sha256', options.masterKey, Buffer.alloc(0), 'audit-filter', 32));
    this.chainSeal = new ChainSeal(options.masterKey);
  }

  /** Entry ids: a random prefix per process and a counter. */
  newId(): string {
    return `${this.#idPrefix}${(this.#counter++).toString(36).padStart(8, '0')}`;
  }

  /** A filter value the log may not hold (a name, a mobile): equal values give equal digests. */
  digest(value: string): string {
    return `hmac:${createHmac('sha256', this.#digestKey).update(value).digest('base64url').slice(0, 22)}`;
  }

  /** Writes what processes that stopped left in the write-ahead file, then flushes on a timer. */
  async start(): Promise<void> {
    if (!this.enabled || this.#timer) return;
    for (const orphan of this.#wal.orphans()) {
      const file = this.#wal.claim(orphan);
      if (file === null) continue;
      const records = WriteAheadFile.read<WalRecord>(file);
      await insertEntries(
        this.#options.db,
        records.flatMap((r) => ('e' in r ? [r.e] : [])),
      );
      await completeEntries(
        this.#options.db,
        records.flatMap((r) => ('c' in r ? [r.c] : [])),
      );
      WriteAheadFile.remove(file);
      if (records.length > 0) this.#options.logger.info({ file: path.basename(file), records: records.length }, 'access log records replayed');
      this.#chainDue = true;
    }
    await this.flush();
    this.#timer = setInterval(() => {
      if (this.#entries.length > 0 || this.#completions.length > 0 || Date.now() - this.#lastChain > CHAIN_SWEEP_MS) void this.#queueFlush();
    }, this.#options.flushMs);
    this.#timer.unref();
  }

  /** Records an entry; `done` runs once it is durable (on disk, or in the database when the file failed). */
  record(entry: AuditEntry, done: Done): void {
    this.#wal.append({ e: entry }, (error) => {
      if (!error) return done(null);
      this.#options.logger.error({ err: error }, 'access log write-ahead file failed; writing to the database');
      withoutTransactionObserver(() => insertEntries(this.#options.db, [entry])).then(() => done(null), done);
    });
  }

  /** Records what an answer adds to an entry written with its change. */
  complete(completion: AuditCompletion, done: Done): void {
    this.#wal.append({ c: completion }, (error) => {
      if (!error) return done(null);
      this.#options.logger.error({ err: error }, 'access log write-ahead file failed; writing to the database');
      withoutTransactionObserver(() => completeEntries(this.#options.db, [completion])).then(() => done(null), done);
    });
  }

  /** Writes an entry in the transaction of the change it records. */
  writeWithChange(trx: Db, entry: AuditEntry): Promise<void> {
    return insertWithChange(trx, entry);
  }

  /** Writes the entries waiting and chains what is ready; resolves when done (tests call it). */
  flush(): Promise<void> {
    this.#chainDue = true;
    return this.#queueFlush();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#wal.idle();
    await this.#queueFlush();
    this.#wal.close();
  }

  #queueFlush(): Promise<void> {
    // Called from the write-ahead file's callbacks, which run in a request's context: the batch's
    // transactions are not that request's.
    return withoutTransactionObserver(() => this.#enqueueFlush());
  }

  #enqueueFlush(): Promise<void> {
    if (this.#flushQueued) return this.#flushChain;
    this.#flushQueued = true;
    this.#flushChain = this.#flushChain.then(async () => {
      this.#flushQueued = false;
      try {
        await this.#flushOnce();
      } catch (error) {
        this.#options.logger.warn({ err: error }, 'access log flush failed; retrying');
      }
    });
    return this.#flushChain;
  }

  #durable(records: WalRecord[], segment: Segment): void {
    for (const record of records) {
      if ('e' in record) this.#entries.push({ entry: record.e, segment });
      else this.#completions.push({ completion: record.c, segment });
    }
    if (this.#entries.length + this.#completions.length >= this.#options.flushEntries) void this.#queueFlush();
  }

  async #flushOnce(): Promise<void> {
    const entries = this.#entries;
    const completions = this.#completions;
    if (entries.length > 0 || completions.length > 0) {
      this.#entries = [];
      this.#completions = [];
      try {
        await this.#write(entries.map((e) => e.entry));
        if (completions.length > 0) await this.#completeAndChain(completions.map((c) => c.completion));
      } catch (error) {
        this.#entries = entries.concat(this.#entries);
        this.#completions = completions.concat(this.#completions);
        throw error;
      }
      const released = new Map<Segment, number>();
      for (const { segment } of [...entries, ...completions]) if (segment) released.set(segment, (released.get(segment) ?? 0) + 1);
      for (const [segment, count] of released) this.#wal.release(segment, count);
    }
    this.#wal.sync();
    if (this.#chainDue || Date.now() - this.#lastChain > CHAIN_SWEEP_MS) await this.#chain();
  }

  /** Entries chained as they are inserted, per business; a batch that cannot be (an entry stored already) goes in unchained. */
  async #write(entries: AuditEntry[]): Promise<void> {
    const byBusiness = new Map<string, AuditEntry[]>();
    for (const entry of entries) {
      const list = byBusiness.get(entry.business_id);
      if (list) list.push(entry);
      else byBusiness.set(entry.business_id, [entry]);
    }
    for (const [businessId, list] of byBusiness) {
      try {
        await appendChained(this.#options.db, this.chainSeal, businessId, list);
      } catch {
        await insertEntries(this.#options.db, list);
        this.#chainDue = true;
      }
    }
  }

  /**
   * Applies answers to the entries written with their changes, each by the update that chains it; an
   * answer whose entry was chained without it meanwhile (another process, after the grace) changes nothing.
   */
  async #completeAndChain(completions: AuditCompletion[]): Promise<void> {
    const pending = new Map(completions.map((completion) => [completion.id, completion]));
    await this.#chain(pending);
    await completeEntries(this.#options.db, [...pending.values()]);
  }

  /** Chains what is ready, and the entries `pending` holds answers for (see chainBusiness). */
  async #chain(pending = new Map<string, AuditCompletion>()): Promise<void> {
    const db = this.#options.db;
    const before = Date.now() - UNANSWERED_GRACE_MS;
    this.#lastChain = Date.now();
    const businesses = new Set([...(await businessesToChain(db, before)), ...(await businessesOf(db, [...pending.keys()]))]);
    for (const businessId of businesses) {
      while ((await chainBusiness(db, businessId, before, CHAIN_BATCH, this.chainSeal, pending)) === CHAIN_BATCH);
    }
    this.#chainDue = false;
  }
}
