/**
 * Where a search index keeps its records, and the columnar pieces the index itself is made of.
 *
 * A quarter of a million drugs as JS objects cost ~250 bytes each plus a Map entry, and every one is
 * an object the garbage collector walks. The drug store keeps them column by column instead: ids and
 * names as one long string with offsets, the repeated texts (makers, compositions, forms, packs) as
 * numbers into one string table, flags in bytes, about 100 bytes a product. A record object is made
 * only for the few results a search returns. Every piece is a string or a typed array, so the whole
 * store goes to and comes back from a snapshot file without parsing anything per record.
 */
import type { DrugRecord } from './model.ts';

export type Column = Uint8Array | Int8Array | Uint16Array | Uint32Array;

/** What an index or a store writes to a snapshot: scalars and small tables, long texts, typed arrays. */
export interface SnapshotParts {
  meta: Record<string, unknown>;
  texts: Record<string, string>;
  arrays: Record<string, Column>;
}

/** Records by row number, rows numbered in the order records were added. */
export interface RecordStore<T> {
  readonly length: number;
  add(record: T): number;
  get(row: number): T;
  id(row: number): string;
  snapshot(): SnapshotParts;
}

type ColumnType<A extends Column> = { new (length: number): A; new (buffer: ArrayBuffer, byteOffset: number, length: number): A };

/**
 * A typed array at least `size` long, keeping its contents: the same memory seen longer when it has
 * room (a column read from a snapshot with some, see readSnapshot), else a copy whose capacity
 * doubles while small, then grows by an eighth (doubling a restored index's full columns for the
 * first upsert cost 17 MB at 250,000 products).
 */
export function grow<A extends Column>(array: A, size: number, type: ColumnType<A>): A {
  if (array.length >= size) return array;
  const memory = array.buffer;
  const room = memory instanceof ArrayBuffer ? (memory.byteLength - array.byteOffset) / array.BYTES_PER_ELEMENT : 0;
  if (room >= size) return new type(memory as ArrayBuffer, array.byteOffset, Math.min(room, Math.max(size, array.length + (array.length >>> 3))));
  const more = array.length < 65_536 ? array.length : array.length >>> 3;
  const next = new type(Math.max(size, array.length + more, 1024));
  next.set(array as never);
  return next;
}

/** Plain objects: for small catalogues (lab tests) and tests. */
export class ArrayStore<T extends { id: string }> implements RecordStore<T> {
  private readonly records: T[] = [];
  get length(): number {
    return this.records.length;
  }

  add(record: T): number {
    return this.records.push(record) - 1;
  }

  get(row: number): T {
    return this.records[row]!;
  }

  id(row: number): string {
    return this.records[row]!.id;
  }

  snapshot(): SnapshotParts {
    // A copy: records added after the snapshot was taken are not in it.
    return { meta: { records: this.records.slice() }, texts: {}, arrays: {} };
  }

  static restore<T extends { id: string }>(parts: SnapshotParts): ArrayStore<T> {
    const store = new ArrayStore<T>();
    store.records.push(...(parts.meta.records as T[]));
    return store;
  }
}

/**
 * Many short strings as one: the strings sealed so far are slices of `base` (offsets in `starts`);
 * strings added after the last seal wait in `tail`.
 */
export class TextColumn {
  private base = '';
  private starts: Uint32Array = new Uint32Array(1);
  private sealed = 0;
  private tail: string[] = [];

  get length(): number {
    return this.sealed + this.tail.length;
  }

  push(text: string): number {
    return this.sealed + this.tail.push(text) - 1;
  }

  get(i: number): string {
    return i < this.sealed ? this.base.slice(this.starts[i]!, this.starts[i + 1]!) : this.tail[i - this.sealed]!;
  }

  /** Moves the tail into the long string (after a bulk load; small later additions stay in the tail). */
  seal(): void {
    if (this.tail.length === 0) return;
    const count = this.length;
    const starts = new Uint32Array(count + 1);
    starts.set(this.starts.subarray(0, this.sealed + 1));
    let at = starts[this.sealed]!;
    for (let i = 0; i < this.tail.length; i++) {
      at += this.tail[i]!.length;
      starts[this.sealed + i + 1] = at;
    }
    this.base += this.tail.join('');
    this.starts = starts;
    this.sealed = count;
    this.tail = [];
  }

  snapshot(name: string, parts: SnapshotParts): void {
    this.seal();
    parts.texts[name] = this.base;
    parts.arrays[`${name}.starts`] = this.starts;
  }

  static restore(name: string, parts: SnapshotParts): TextColumn {
    const column = new TextColumn();
    column.base = parts.texts[name]!;
    column.starts = parts.arrays[`${name}.starts`] as Uint32Array;
    column.sealed = column.starts.length - 1;
    return column;
  }
}

/** Repeated strings stored once: number 0 is null, n is strings[n - 1]. */
class StringTable {
  readonly strings: string[] = [];
  private readonly numbers = new Map<string, number>();

  number(value: string | null): number {
    if (value === null) return 0;
    let n = this.numbers.get(value);
    if (n === undefined) {
      n = this.strings.push(value);
      this.numbers.set(value, n);
    }
    return n;
  }

  string(n: number): string | null {
    return n === 0 ? null : this.strings[n - 1]!;
  }

  static from(strings: string[]): StringTable {
    const table = new StringTable();
    for (const s of strings) table.number(s);
    return table;
  }
}

const DISCONTINUED = 1;
const SOA = 2;
const TABLE_COLUMNS = ['manufacturer_name', 'product_type', 'product_sku', 'generic_name', 'generic_id', 'common_name'] as const;

/** Drugs column by column (see the top of this file). */
export class DrugStore implements RecordStore<DrugRecord> {
  private count = 0;
  private ids = new TextColumn();
  private names = new TextColumn();
  private strings = new StringTable();
  private tables: Record<(typeof TABLE_COLUMNS)[number], Uint32Array> = {
    manufacturer_name: new Uint32Array(0),
    product_type: new Uint32Array(0),
    product_sku: new Uint32Array(0),
    generic_name: new Uint32Array(0),
    generic_id: new Uint32Array(0),
    common_name: new Uint32Array(0),
  };
  /** Action classes repeat across thousands of products: one frozen object each, numbered from 1. */
  private actionClasses: Array<Record<string, unknown>> = [];
  private actionNumbers = new Map<Record<string, unknown>, number>();
  private actionClass: Uint32Array = new Uint32Array(0);
  /** is_otc: -1 unknown, 0, 1. */
  private otc: Int8Array = new Int8Array(0);
  private flags: Uint8Array = new Uint8Array(0);
  private parts: Uint8Array = new Uint8Array(0);

  get length(): number {
    return this.count;
  }

  add(record: DrugRecord): number {
    const row = this.count++;
    this.ids.push(record.id);
    this.names.push(record.name);
    for (const column of TABLE_COLUMNS) {
      const table = grow(this.tables[column], row + 1, Uint32Array);
      table[row] = this.strings.number(record[column]);
      this.tables[column] = table;
    }
    this.actionClass = grow(this.actionClass, row + 1, Uint32Array);
    this.actionClass[row] = record.action_class === null ? 0 : this.actionNumber(record.action_class);
    this.otc = grow(this.otc, row + 1, Int8Array);
    this.otc[row] = record.is_otc === null ? -1 : record.is_otc ? 1 : 0;
    this.flags = grow(this.flags, row + 1, Uint8Array);
    this.flags[row] = (record.discontinued ? DISCONTINUED : 0) | (record.soa ? SOA : 0);
    this.parts = grow(this.parts, row + 1, Uint8Array);
    this.parts[row] = Math.min(record.parts, 255);
    return row;
  }

  private actionNumber(value: Record<string, unknown>): number {
    let n = this.actionNumbers.get(value);
    if (n === undefined) {
      n = this.actionClasses.push(Object.isFrozen(value) ? value : Object.freeze({ ...value }));
      this.actionNumbers.set(value, n);
    }
    return n;
  }

  /** Seals the long strings after a bulk load. */
  seal(): void {
    this.ids.seal();
    this.names.seal();
  }

  get(row: number): DrugRecord {
    const table = (column: (typeof TABLE_COLUMNS)[number]) => this.strings.string(this.tables[column][row]!);
    const otc = this.otc[row]!;
    const flags = this.flags[row]!;
    const action = this.actionClass[row]!;
    return {
      id: this.ids.get(row),
      name: this.names.get(row),
      manufacturer_name: table('manufacturer_name') ?? '',
      product_type: table('product_type') ?? '',
      product_sku: table('product_sku'),
      generic_name: table('generic_name') ?? '',
      generic_id: table('generic_id') ?? '',
      common_name: table('common_name') ?? '',
      action_class: action === 0 ? null : this.actionClasses[action - 1]!,
      is_otc: otc < 0 ? null : otc === 1,
      discontinued: (flags & DISCONTINUED) !== 0,
      soa: (flags & SOA) !== 0,
      parts: this.parts[row]!,
    };
  }

  id(row: number): string {
    return this.ids.get(row);
  }

  snapshot(): SnapshotParts {
    const n = this.count;
    const parts: SnapshotParts = {
      meta: { count: n, strings: this.strings.strings.slice(), actionClasses: this.actionClasses.map((value) => JSON.stringify(value)) },
      texts: {},
      arrays: {
        actionClass: this.actionClass.subarray(0, n),
        otc: this.otc.subarray(0, n),
        flags: this.flags.subarray(0, n),
        parts: this.parts.subarray(0, n),
      },
    };
    for (const column of TABLE_COLUMNS) parts.arrays[column] = this.tables[column].subarray(0, n);
    this.ids.snapshot('ids', parts);
    this.names.snapshot('names', parts);
    return parts;
  }

  static restore(parts: SnapshotParts): DrugStore {
    const store = new DrugStore();
    store.count = parts.meta.count as number;
    store.ids = TextColumn.restore('ids', parts);
    store.names = TextColumn.restore('names', parts);
    store.strings = StringTable.from(parts.meta.strings as string[]);
    for (const column of TABLE_COLUMNS) store.tables[column] = parts.arrays[column] as Uint32Array;
    store.actionClasses = (parts.meta.actionClasses as string[]).map((text) => Object.freeze(JSON.parse(text) as Record<string, unknown>));
    store.actionNumbers = new Map(store.actionClasses.map((value, i) => [value, i + 1]));
    store.actionClass = parts.arrays.actionClass as Uint32Array;
    store.otc = parts.arrays.otc as Int8Array;
    store.flags = parts.arrays.flags as Uint8Array;
    store.parts = parts.arrays.parts as Uint8Array;
    return store;
  }
}
