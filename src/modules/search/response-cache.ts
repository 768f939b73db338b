/**
 * Serialized search responses by query, for one catalogue version. Prescribers type the same names
 * over and over (and every keystroke of them), so most searches repeat one made a moment ago; a hit
 * skips the search, the highlighting and the JSON serialisation. Entries are dropped when the catalogue
 * changes (a new version), and beyond the byte budget by the clock algorithm: the oldest entry goes
 * unless it was used since it was added or last spared, so a hit only sets a flag (moving the entry
 * in the Map on every hit cost a delete, an insert and the Map's resizing).
 */
export interface CachedResponse {
  status: number;
  /** UTF-8 bytes: encoding a response of a few kilobytes was a quarter of a cached request's CPU. */
  body: Buffer;
}

interface Slot {
  entry: CachedResponse;
  used: boolean;
}

/** Bytes an entry holds: its key (two bytes a character) and its body. */
const cost = (key: string, entry: CachedResponse) => key.length * 2 + entry.body.length;

export class ResponseCache {
  private readonly maxBytes: number;
  private readonly slots = new Map<string, Slot>();
  private bytes = 0;
  private version = -1;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  get size(): number {
    return this.slots.size;
  }

  get(version: number, key: string): CachedResponse | undefined {
    if (version !== this.version) return undefined;
    const slot = this.slots.get(key);
    if (slot === undefined) return undefined;
    slot.used = true;
    return slot.entry;
  }

  set(version: number, key: string, entry: CachedResponse): void {
    if (cost(key, entry) > this.maxBytes / 16) return;
    if (version !== this.version) {
      this.slots.clear();
      this.bytes = 0;
      this.version = version;
    }
    const old = this.slots.get(key);
    if (old !== undefined) {
      this.slots.delete(key);
      this.bytes -= cost(key, old.entry);
    }
    this.slots.set(key, { entry, used: false });
    this.bytes += cost(key, entry);
    while (this.bytes > this.maxBytes) {
      const [oldest, slot] = this.slots.entries().next().value!;
      this.slots.delete(oldest);
      if (slot.used) {
        slot.used = false;
        this.slots.set(oldest, slot);
      } else {
        this.bytes -= cost(oldest, slot.entry);
      }
    }
  }
}
