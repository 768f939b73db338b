/**
 * A HEIF's first top-level `meta` box, and the pixels its ispe properties declare. Its dimensions live
 * there (iprp/ipco/ispe), and a camera or converter may write the image data (`mdat`) first: such a
 * file's dimensions come after all of its pixels' bytes, past any head held for them. The search walks
 * the top-level boxes by their sizes over bytes handed to it at their offsets, skips what it does not
 * need without keeping it, and keeps the meta, on either side of the image data (it, and the file
 * type that must come first, at most `limit` bytes). The pixels are read as a decoder reads the boxes (image-size's
 * walk undercounts crafted files: it takes a clap box off the width and misreads 64-bit sizes).
 */

/** What a box's header says. */
interface Header {
  type: string;
  /** The header's own bytes (8, or 16 with a 64-bit size). */
  headerBytes: number;
  /** The whole box's bytes; null when it runs to the end of the file (size 0). */
  size: number | null;
}

/** The boxes read whole, each at most the search's limit: the meta is kept, the file type only bounded as it. */
const BOUNDED = new Set(['ftyp', 'meta']);

/** Top-level boxes walked at most: a HEIF has a handful; each costs a parse, whatever its size (8 bytes). */
const MAX_BOXES = 1024;

export class HeifMetaSearch {
  /** Whether an `mdat` came before the meta: the file's bytes then go on while the meta is looked for. */
  imageDataFirst = false;
  /** Why the search ended without a meta (the rest of a refusal's message), or null. */
  failure: string | null = null;
  /** The offset of the next byte the search needs. */
  wanted = 0;
  readonly #limit: number;
  /** Where the box whose header is being read begins, and its header's bytes so far. */
  #boxAt = 0;
  readonly #header = Buffer.alloc(16);
  #headerFilled = 0;
  /** The meta's body while it is read. */
  #body: { bytes: Buffer; filled: number } | null = null;
  /** The kept meta's body. */
  #meta: Buffer | null = null;
  #boxes = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Whether the meta is complete. */
  get found(): boolean {
    return this.#meta !== null;
  }

  get done(): boolean {
    return this.found || this.failure !== null;
  }

  /**
   * The pixels of the largest image the kept meta declares (its ispe properties, as a decoder reads
   * them: by their boxes' sizes, 64-bit ones included, and before any crop), or null.
   */
  pixels(): number | null {
    return this.#meta === null ? null : ispePixels(this.#meta);
  }

  /** Takes the bytes `piece` of the file, which begin at offset `at`: no later than `wanted`. */
  feed(piece: Buffer, at: number): void {
    if (at > this.wanted) throw new Error(`HEIF meta search: bytes from ${at} handed on, ${this.wanted} wanted`);
    let i = this.wanted - at;
    while (!this.done && i < piece.length) {
      const body = this.#body;
      if (at + i < this.wanted) {
        // Inside a box skipped.
        i = Math.min(piece.length, this.wanted - at);
      } else if (body !== null) {
        const copied = piece.copy(body.bytes, body.filled, i);
        body.filled += copied;
        i += copied;
        this.wanted += copied;
        if (body.filled === body.bytes.length) this.#kept(body.bytes);
      } else {
        const copied = piece.copy(this.#header, this.#headerFilled, i, i + this.#headerWanted() - this.#headerFilled);
        this.#headerFilled += copied;
        i += copied;
        this.wanted += copied;
        if (this.#headerFilled === this.#headerWanted()) this.#boxBegins(this.#parsed());
      }
    }
  }

  /** Header bytes needed: 8, or 16 once the first 8 say the size follows in 64 bits. */
  #headerWanted(): number {
    return this.#headerFilled >= 4 && this.#header.readUInt32BE(0) === 1 ? 16 : 8;
  }

  #parsed(): Header {
    const size32 = this.#header.readUInt32BE(0);
    const type = this.#header.toString('latin1', 4, 8);
    if (size32 === 0) return { type, headerBytes: 8, size: null };
    if (size32 !== 1) return { type, headerBytes: 8, size: size32 };
    const size = this.#header.readBigUInt64BE(8);
    return { type, headerBytes: 16, size: size > BigInt(Number.MAX_SAFE_INTEGER) ? Number.POSITIVE_INFINITY : Number(size) };
  }

  #boxBegins(header: Header): void {
    const at = this.#boxAt;
    this.#headerFilled = 0;
    // The search ends at the meta, and the first box is the file type: an mdat seen comes before the meta.
    if (header.type === 'mdat') this.imageDataFirst = true;
    this.failure = ++this.#boxes > MAX_BOXES ? `it has more than ${MAX_BOXES} top-level boxes` : this.#refusal(header, at);
    if (this.failure !== null) return;
    const { type, headerBytes } = header;
    const size = header.size!;
    if (type === 'meta') {
      this.#body = { bytes: Buffer.alloc(size - headerBytes), filled: 0 };
      if (size === headerBytes) this.#kept(this.#body.bytes);
    } else {
      this.wanted = at + size;
    }
    this.#boxAt = at + size;
  }

  /** Why a box beginning at `at` ends the search, or null. */
  #refusal({ type, headerBytes, size }: Header, at: number): string | null {
    if (at === 0 && type !== 'ftyp') return 'its first box is not its file type (ftyp)';
    // The last box (size 0): nothing can follow it.
    if (size === null)
      return type === 'mdat'
        ? 'its image data runs to the end of the file, with no meta box after it'
        : `its ${type} box runs to the end of the file`;
    if (size < headerBytes) return `its ${type} box declares ${size} bytes, fewer than its header`;
    if (!Number.isFinite(size)) return `its ${type} box declares more bytes than a file can have`;
    if (BOUNDED.has(type) && size - headerBytes > this.#limit)
      return `its ${type} box has ${size} bytes, more than the ${this.#limit / 1024} KiB read to find its dimensions`;
    return null;
  }

  #kept(meta: Buffer): void {
    this.#body = null;
    this.#meta = meta;
  }
}

/** The boxes directly in `body`, each as its type and its own body; null when one does not fit. */
function children(body: Buffer): Array<{ type: string; body: Buffer }> | null {
  const found: Array<{ type: string; body: Buffer }> = [];
  for (let at = 0; at < body.length; ) {
    if (body.length - at < 8) return null;
    const size32 = body.readUInt32BE(at);
    const type = body.toString('latin1', at + 4, at + 8);
    let header = 8;
    let size: number;
    if (size32 === 0) size = body.length - at;
    else if (size32 === 1) {
      if (body.length - at < 16) return null;
      const large = body.readBigUInt64BE(at + 8);
      header = 16;
      size = large > BigInt(body.length - at) ? Number.POSITIVE_INFINITY : Number(large);
    } else size = size32;
    if (size < header || size > body.length - at) return null;
    found.push({ type, body: body.subarray(at + header, at + size) });
    at += size;
  }
  return found;
}

/** The largest width x height of the ispe properties of a meta box's body (iprp/ipco); null without one. */
export function ispePixels(meta: Buffer): number | null {
  // meta and ispe are full boxes: version and flags first.
  const iprp = children(meta.subarray(4))?.find((child) => child.type === 'iprp');
  const ipco = iprp && children(iprp.body)?.find((child) => child.type === 'ipco');
  const properties = ipco && children(ipco.body);
  if (!properties) return null;
  let pixels = 0;
  for (const { type, body } of properties) {
    if (type !== 'ispe') continue;
    if (body.length < 12) return null;
    pixels = Math.max(pixels, body.readUInt32BE(4) * body.readUInt32BE(8));
  }
  return pixels > 0 ? pixels : null;
}
