/**
 * The patient compartment: every kind of row the business keeps about a patient, declared by the
 * module that owns it. A module that stores such rows registers one holder in its front door
 * (index.ts), with the SQL in its own repo; merge (modules/patients), export and erasure
 * (modules/privacy) walk the holders and never write another module's table. The compartment test
 * (test/compartment.test.ts) reads the live schema and fails for a column naming a patient that no
 * holder declares.
 *
 * The lock order of a patient's data, for every change that takes more than one of these locks:
 *   1. the rows that name a patient by its service id (`lockById`: appointments), patient by patient in
 *      id order;
 *   2. the patient rows, in id order (PatientService);
 *   3. the records kept under a patient's key (cases, devices: PatientService.lockRecords), key by key
 *      in order.
 * A change that learns of another patient after it took its locks (a merge that committed while it
 * waited) does not lock that patient out of order: it starts again with the larger set.
 */
import type { Db } from './db/index.ts';
import type { Database } from './db/schema.ts';

/** The patients an export or an erasure is about: a survivor and the patients merged into it. */
export interface PatientScope {
  businessId: string;
  /** Their service ids. */
  patientIds: string[];
  /** Every id they went by (service and partner ids): records kept under a patient's key name them so. */
  refs: string[];
}

/** A merge: the duplicate's rows go to the survivor. `key` is the id records are kept under (the partner id, else the service id). */
export interface PatientMerge {
  businessId: string;
  from: { id: string; key: string };
  to: { id: string; key: string };
  /** ms */
  now: number;
}

/** What other records name a holder's rows by: ids (a stored answer may quote them) and event ordering keys. */
export interface HeldReferences {
  ids: string[];
  eventKeys: string[];
}

/** A column of a table that names a patient: by its service id, or by its key (`ref`: partner id, else service id). */
export interface HeldTable {
  table: keyof Database & string;
  column: string;
  by: 'id' | 'ref';
}

/**
 * A value of an export section that is bytes the holder keeps (a document's file): the export does not
 * hold them; they are read from the holder (its `openExportStream`, with `ref`) when the export is
 * downloaded, and written in the value's place as a base64 string, or null when the holder no longer
 * has them. Only a holder makes one: nothing read from the database can be an instance of this class.
 */
export class ExportStream {
  readonly holder: string;
  readonly ref: unknown;
  constructor(holder: string, ref: unknown) {
    this.holder = holder;
    this.ref = ref;
  }
}

/** How an erasure treats a holder's rows: a function that deletes or anonymises them, or the reason they are kept. */
export type Erasure = ((trx: Db, scope: PatientScope, now: number) => Promise<void>) | { kept: string };

export interface PatientDataHolder {
  /** The holder's name, in errors and in the documentation: its module's. */
  name: string;
  /** The tables and columns it keeps patient rows in. */
  tables: readonly HeldTable[];
  /** Step 1 of the lock order: locks the rows naming the patient by service id, until the transaction ends. */
  lockById?: (trx: Db, businessId: string, patientId: string) => Promise<void>;
  /** Refuses a merge that would lose rows (throws an AppError); runs under every lock, before any move. */
  refuseMerge?: (trx: Db, merge: PatientMerge) => Promise<void>;
  /** A merge: moves the rows naming the duplicate by service id to the survivor; answers how many moved, by the names a merge reports. */
  moveById?: (trx: Db, merge: PatientMerge) => Promise<Record<string, number>>;
  /**
   * A merge, or a patient taking a partner id: moves the rows kept under key `from` to key `to`, both
   * keys' records locks held; answers how many moved, by the names a merge reports.
   */
  moveKey?: (trx: Db, businessId: string, from: string, to: string) => Promise<Record<string, number>>;
  /** The references an erasure must also clear elsewhere (events, stored answers). */
  references?: (db: Db, scope: PatientScope) => Promise<Partial<HeldReferences>>;
  /** Its sections of the patient's export document, by name. */
  export?: (db: Db, scope: PatientScope) => Promise<Record<string, unknown>>;
  /** The bytes of an ExportStream it put in its sections, by the stream's ref; null when it no longer has them. */
  openExportStream?: (db: Db, businessId: string, ref: unknown) => Promise<AsyncIterable<Buffer> | null>;
  erase: Erasure;
}

/** The holders of one app (tests build many apps in one process, so this is no singleton). */
export class PatientCompartment {
  readonly #holders: PatientDataHolder[] = [];

  register(holder: PatientDataHolder): void {
    if (this.#holders.some((known) => known.name === holder.name)) throw new Error(`Patient data holder ${holder.name} registered twice`);
    this.#holders.push(holder);
  }

  get holders(): readonly PatientDataHolder[] {
    return this.#holders;
  }

  /** Step 1 of the lock order for `patientIds`, in id order. */
  async lockById(trx: Db, businessId: string, patientIds: readonly string[]): Promise<void> {
    for (const id of [...patientIds].sort()) {
      for (const holder of this.#holders) await holder.lockById?.(trx, businessId, id);
    }
  }

  /** Moves every holder's rows of a merge (once every holder agreed), every lock held; answers the counts by name. */
  async merge(trx: Db, merge: PatientMerge): Promise<Record<string, number>> {
    for (const holder of this.#holders) await holder.refuseMerge?.(trx, merge);
    const moved: Record<string, number> = {};
    for (const holder of this.#holders) if (holder.moveById) Object.assign(moved, await holder.moveById(trx, merge));
    Object.assign(moved, await this.moveKey(trx, merge.businessId, merge.from.key, merge.to.key));
    return moved;
  }

  /** Moves the rows kept under one key to another (both keys' records locks held); answers the counts by name. */
  async moveKey(trx: Db, businessId: string, from: string, to: string): Promise<Record<string, number>> {
    const moved: Record<string, number> = {};
    for (const holder of this.#holders) if (holder.moveKey) Object.assign(moved, await holder.moveKey(trx, businessId, from, to));
    return moved;
  }

  async references(db: Db, scope: PatientScope): Promise<HeldReferences> {
    const all: HeldReferences = { ids: [], eventKeys: [] };
    for (const holder of this.#holders) {
      const found = await holder.references?.(db, scope);
      all.ids.push(...(found?.ids ?? []));
      all.eventKeys.push(...(found?.eventKeys ?? []));
    }
    return all;
  }

  /** Every holder's sections of the export document, in the order the holders registered. */
  async export(db: Db, scope: PatientScope): Promise<Record<string, unknown>> {
    const sections: Record<string, unknown> = {};
    for (const holder of this.#holders) if (holder.export) Object.assign(sections, await holder.export(db, scope));
    return sections;
  }

  /** The bytes of an ExportStream of the business's export, from the holder that made it. */
  async openExportStream(db: Db, businessId: string, stream: { holder: string; ref: unknown }): Promise<AsyncIterable<Buffer> | null> {
    const holder = this.#holders.find((known) => known.name === stream.holder);
    if (!holder?.openExportStream) throw new Error(`Patient data holder ${stream.holder} opens no export stream`);
    return holder.openExportStream(db, businessId, stream.ref);
  }

  /** Every holder's erasure, under the locks the caller took. */
  async erase(trx: Db, scope: PatientScope, now: number): Promise<void> {
    for (const holder of this.#holders) if (typeof holder.erase === 'function') await holder.erase(trx, scope, now);
  }
}

/** A stored JSON column as an export document shows it: parsed, or the text as stored when it is not JSON. */
export function parsedJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
