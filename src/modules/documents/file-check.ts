/**
 * What a document file may be, checked from its bytes as they stream by: its type from its first
 * bytes (file-type), never from what the client says; an image's declared dimensions (a JPEG's as libjpeg finds them,
 * a PNG's by image-size, a HEIF's by heif-meta.ts)
 * against a pixel budget, so an image that would inflate to gigabytes when decoded is refused before
 * anything decodes it; and its size, counted, against the limit and, for a form, the declared size.
 */
import { fileTypeFromBuffer } from 'file-type';
import { imageSize } from 'image-size';
import { AppError } from '../../errors.ts';
import { HeifMetaSearch } from './heif-meta.ts';

/** The accepted types, by their canonical content type, and how Eka's file_type names them. */
export const ACCEPTED_TYPES: Readonly<Record<string, 'PDF' | 'IMG'>> = {
  'application/pdf': 'PDF',
  'image/jpeg': 'IMG',
  'image/png': 'IMG',
  'image/heic': 'IMG',
  'image/heif': 'IMG',
  'application/dicom': 'IMG',
};

/** Other names clients give the accepted types. */
const ALIASES: Readonly<Record<string, string>> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'image/heic-sequence': 'image/heic',
  'image/heif-sequence': 'image/heif',
  'application/x-pdf': 'application/pdf',
};

/** HEIC is a kind of HEIF: file-type may name either for the same bytes. */
const SAME: Readonly<Record<string, string>> = { 'image/heif': 'image/heic' };

/** The canonical content type of a declared one (parameters and case dropped), or null when it is not accepted. */
export function canonicalType(declared: string): string | null {
  const bare = declared.split(';')[0]!.trim().toLowerCase();
  const name = ALIASES[bare] ?? bare;
  return Object.hasOwn(ACCEPTED_TYPES, name) ? name : null;
}

export const ACCEPTED_LIST = `${Object.keys(ACCEPTED_TYPES).join(', ')}`;

/** Bytes enough to tell the type of every accepted file (file-type's reasonableDetectionSizeInBytes). */
const TYPE_BYTES = 4100;
/**
 * The most of an image's first bytes held to find its dimensions: a JPEG's frame header may follow
 * large EXIF, ICC or XMP segments. An image whose dimensions are not within them is refused, since
 * its pixels cannot be counted before anything decodes it; but for a HEIF whose image data comes
 * first, whose meta box (at most HEAD_BYTES too) is looked for after it (heif-meta.ts).
 */
export const HEAD_BYTES = 1024 * 1024;

export interface FileRules {
  /** The most bytes the file may have. */
  maxBytes: number;
  /** What limits maxBytes, for the message (the per-file limit, or the business's remaining space). */
  maxReason: string;
  /** A form's declared size: the file must have exactly this many bytes. */
  exactBytes?: number;
  /** A form's declared content type (canonical): the bytes must be of it. */
  expectedType?: string;
  maxImagePixels: number;
}

export interface CheckedFile {
  /** Filled in once the head is checked. */
  contentType: string | null;
  size: number;
}

const refuse = (status: number, message: string) => new AppError(status, message, { code: 'INVALID_REQUEST' });

/**
 * Passes the bytes of `source` through once they pass the checks, and throws (an AppError naming
 * the problem) as soon as one fails: an unaccepted or mismatching type, too many pixels or none
 * declared, too many or too few bytes. `result` tells the type found and the size. The type is told
 * from the first TYPE_BYTES; only an image's head is held back further, until its dimensions are in
 * it (at most HEAD_BYTES), so a PDF's bytes go on as they came, without a copy. A HEIF whose image
 * data comes before its meta box is not held: its bytes go on while its top-level boxes are walked to
 * the meta, and it is refused when the meta is complete, or the file over, without pixels within the
 * budget (what went on is removed by the store's write, which fails with it).
 */
export async function* checkedFile(source: AsyncIterable<Buffer>, rules: FileRules, result: CheckedFile): AsyncGenerator<Buffer> {
  let held: Buffer[] | null = [];
  let heldBytes = 0;
  // An image's dimensions are looked for again once the bytes held have doubled, not at each piece:
  // a client sending small pieces would otherwise cost a join and a parse per piece (quadratic).
  let nextLook = 0;
  let type: string | null = null;
  // A HEIF's top-level boxes, walked as its pieces arrive (each once, never joined).
  let heif: HeifMetaSearch | null = null;
  const count = (piece: Buffer) => {
    result.size += piece.length;
    if (rules.exactBytes !== undefined && result.size > rules.exactBytes) {
      throw refuse(400, `The file has more bytes than the form's declared file_size (${rules.exactBytes})`);
    }
    if (result.size > rules.maxBytes) throw refuse(413, `The file is larger than ${rules.maxBytes} bytes (${rules.maxReason})`);
  };
  for await (const piece of source) {
    const at = result.size;
    count(piece);
    if (held === null) {
      if (heif !== null) {
        // Checked before the piece that completes the meta goes on.
        heif.feed(piece, at);
        if (heif.done) {
          checkPixels(heifPixels(heif), rules);
          heif = null;
        }
      }
      yield piece;
      continue;
    }
    held.push(piece);
    heldBytes += piece.length;
    if (type === null && heldBytes >= TYPE_BYTES) {
      type = await checkType(joined(held, heldBytes), rules);
      heif = heifSearchOf(type, held);
    } else {
      heif?.feed(piece, at);
    }
    if (type === null) continue;
    if (heif !== null) {
      // A HEIF's pixels come from its meta as its top-level boxes place it, never from image-size's
      // walk over the head (it misreads 64-bit sizes and takes a clap box as a crop of the width).
      if (heif.done) {
        checkPixels(heifPixels(heif), rules);
        heif = null;
      } else if (!heif.imageDataFirst) {
        if (heldBytes >= HEAD_BYTES) noDimensions();
        continue;
      }
      result.contentType = type;
      yield* held;
      held = null;
      continue;
    }
    if (type.startsWith('image/')) {
      if (heldBytes < nextLook && heldBytes < HEAD_BYTES) continue;
      nextLook = heldBytes * 2;
      const pixels = declaredPixels(joined(held, heldBytes));
      if (pixels === null) {
        if (heldBytes >= HEAD_BYTES) noDimensions();
        continue;
      }
      checkPixels(pixels, rules);
    }
    result.contentType = type;
    heif = null;
    yield* held;
    held = null;
  }
  if (held !== null) {
    if (heldBytes === 0) throw refuse(400, 'The file is empty');
    const head = joined(held, heldBytes);
    type ??= await checkType(head, rules);
    heif ??= heifSearchOf(type, held);
    if (heif !== null) checkPixels(heifPixels(heif), rules);
    else if (type.startsWith('image/')) checkPixels(declaredPixels(head) ?? noDimensions(), rules);
    result.contentType = type;
    yield* held;
  } else if (heif !== null) {
    // The file ended before its meta did, or without one: refused.
    checkPixels(heifPixels(heif), rules);
  }
  if (rules.exactBytes !== undefined && result.size !== rules.exactBytes) {
    throw refuse(400, `The file has ${result.size} bytes, not the form's declared file_size (${rules.exactBytes})`);
  }
}

/** The pieces as one buffer: the first itself when it is the only one. */
function joined(pieces: Buffer[], bytes: number): Buffer {
  return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, bytes);
}

/** Reads `bytes` bytes of a stored file from offset `start` (fewer at its end). */
export type ReadAt = (start: number, bytes: number) => Promise<Buffer>;

/**
 * The same checks on a file a client put in an object store itself, of `size` bytes: its first
 * HEAD_BYTES, and for a HEIF whose image data comes first, its meta box where the top-level boxes put
 * it (read in ranges of at most HEAD_BYTES, from box to box, never the image data).
 */
export async function checkStoredFile(size: number, read: ReadAt, rules: FileRules, result: CheckedFile): Promise<void> {
  result.size = size;
  if (size === 0) throw refuse(400, 'The file is empty');
  if (rules.exactBytes !== undefined && size !== rules.exactBytes) {
    throw refuse(400, `The file has ${size} bytes, not the form's declared file_size (${rules.exactBytes})`);
  }
  if (size > rules.maxBytes) throw refuse(413, `The file is larger than ${rules.maxBytes} bytes (${rules.maxReason})`);
  const head = await read(0, Math.min(size, HEAD_BYTES));
  const type = await checkType(head, rules);
  const heif = heifSearchOf(type, [head]);
  if (heif !== null) {
    // Each read takes all the search wants up to its end, so each starts past the last.
    while (heif.imageDataFirst && !heif.done && heif.wanted < size) {
      const at = heif.wanted;
      const bytes = await read(at, Math.min(size - at, HEAD_BYTES));
      if (bytes.length === 0) break;
      heif.feed(bytes, at);
    }
    checkPixels(heifPixels(heif), rules);
  } else if (type.startsWith('image/')) {
    checkPixels(declaredPixels(head) ?? noDimensions(), rules);
  }
  result.contentType = type;
}

/** A search for the meta box of a HEIF, over its first bytes `head`; null for another type. */
function heifSearchOf(type: string, head: Buffer[]): HeifMetaSearch | null {
  if (type !== 'image/heic' && type !== 'image/heif') return null;
  const search = new HeifMetaSearch(HEAD_BYTES);
  let at = 0;
  for (const piece of head) {
    search.feed(piece, at);
    at += piece.length;
  }
  return search;
}

/** The pixels the meta box a search found declares; refuses when it found none (the file is over). */
function heifPixels(search: HeifMetaSearch): number {
  if (!search.found) {
    if (!search.imageDataFirst && search.failure === null) noDimensions();
    noDimensions(`(HEIF: ${search.failure ?? 'no meta box follows its image data'})`);
  }
  return search.pixels() ?? noDimensions('(HEIF: its meta box declares none)');
}

/** The accepted type the bytes are of, or a 415. */
async function checkType(head: Buffer, rules: FileRules): Promise<string> {
  const found = await fileTypeFromBuffer(head);
  const type = found ? canonicalType(found.mime) : null;
  if (type === null) {
    throw refuse(415, `The file's content is ${found ? found.mime : 'of no recognised type'}; accepted: ${ACCEPTED_LIST}`);
  }
  if (rules.expectedType !== undefined && (SAME[type] ?? type) !== (SAME[rules.expectedType] ?? rules.expectedType)) {
    throw refuse(415, `The file's content is ${type}, not the form's declared contentType ${rules.expectedType}`);
  }
  return type;
}

/**
 * The pixels a whole stored HEIF declares (its largest image), found as its upload found them: in a
 * meta box before its image data, or after it (the top-level boxes walked, whatever their sizes'
 * width); null when it declares none.
 */
export function heifDeclaredPixels(file: Buffer): number | null {
  const search = heifSearchOf('image/heic', [file])!;
  return search.found ? search.pixels() : null;
}

/**
 * The pixels an image's header declares (a HEIF's largest image: its first may be a tile of it), or
 * null when its dimensions are not (yet) in `head`.
 */
export function declaredPixels(head: Buffer): number | null {
  if (head.length >= 2 && head[0] === 0xff && head[1] === 0xd8) return jpegPixels(head);
  try {
    const found = imageSize(head);
    const pixels = Math.max(...[found, ...(found.images ?? [])].map(({ width, height }) => (width ?? 0) * (height ?? 0)));
    return pixels > 0 ? pixels : null;
  } catch {
    return null;
  }
}

/** A JPEG's start-of-frame markers: libjpeg-turbo decodes SOF0-3 and SOF9-11, and refuses the others. */
const JPEG_FRAMES: ReadonlySet<number> = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

/**
 * The pixels of a JPEG's frame header, found as libjpeg (the decoder a thumbnail uses) finds it, or
 * null when it is not (yet) in `head`. Not image-size's: it knows only SOF0-2 and, finding no marker
 * right after a segment, moves on by one byte and reads a length there, so a frame header of 1 × 1
 * written inside an APP segment, behind a stray byte, was taken for the image's while libjpeg skipped
 * both and decoded the real one's 16,000 × 16,000 (a 1 KB file, 1 GB of pixels). Here, as in
 * libjpeg's next_marker, bytes up to the next 0xFF are skipped, fill bytes and stuffed zeros too, and
 * each segment is skipped by its length; a scan or the end before a frame header declares nothing.
 */
function jpegPixels(head: Buffer): number | null {
  let at = 2;
  for (;;) {
    while (at < head.length && head[at] !== 0xff) at += 1;
    while (at < head.length && head[at] === 0xff) at += 1;
    if (at >= head.length) return null;
    const marker = head[at]!;
    at += 1;
    if (marker === 0x00 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) continue;
    if (marker === 0xd8 || marker === 0xd9 || marker === 0xda) return null;
    if (at + 2 > head.length) return null;
    const length = head.readUInt16BE(at);
    if (length < 2) return null;
    if (JPEG_FRAMES.has(marker)) {
      if (at + 7 > head.length) return null;
      const pixels = head.readUInt16BE(at + 3) * head.readUInt16BE(at + 5);
      // A height of 0 is given later (DNL): uncountable before decoding.
      return pixels > 0 ? pixels : null;
    }
    at += length;
  }
}

function noDimensions(where = `in its first ${HEAD_BYTES / 1024} KiB`): never {
  throw refuse(400, `The image declares no dimensions ${where}: its pixels cannot be counted before it is decoded`);
}

/** Refuses an image whose declared dimensions exceed the pixel budget. */
function checkPixels(pixels: number, rules: FileRules): void {
  if (pixels > rules.maxImagePixels) {
    throw refuse(400, `The image declares ${pixels} pixels, more than the ${rules.maxImagePixels} accepted (a decompression bomb)`);
  }
}
