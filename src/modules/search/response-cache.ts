/**
 * Serialized search responses by query, for one catalogue version. Prescribers type the same names
 * over and over (and every keystroke of them), so most searches repeat one made a moment ago; a hit
 * skips the search, the highlighting and the JSON serialisation. Entries are dropped when the catalogue
 * changes (a new version) and least recently used first beyond the byte budget.
 */
export interface CachedResponse {
  status: number;
  /** UTF-8 bytes: encoding a response of a few kilobytes was a quarter of a cached request's CPU. */
  body: Buffer;
}

/** Bytes an entry holds: its key (two bytes a character) and its body. */
const cost = (key: string, entry: CachedResponse) => key.length * 2 + entry.body.length;

export class ResponseCache {
  private readonly maxBytes: number;
  private readonly entries = new Map<string, CachedResponse>();
  private bytes = 0;
  private version = -1;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  get size(): number {
    return this.entries.size;
  }

  get(version: number, key: string): CachedResponse | undefined {
    if (version !== this.version) return undefined;
    const entry = this.entries.get(key);
    if (entry !== undefined) {
      // Most recently used last.
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  set(version: number, key: string, entry: CachedResponse): void {
    if (cost(key, entry) > this.maxBytes / 16) return;
    if (version !== this.version) {
      this.entries.clear();
      this.bytes = 0;
      this.version = version;
    }
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.bytes -= cost(key, old);
    }
    this.entries.set(key, entry);
    this.bytes += cost(key, entry);
    for (const [oldest, value] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= cost(oldest, value);
    }
  }
}
