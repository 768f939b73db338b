/**
 * An export document as stored and as downloaded. The document holds no file's bytes: where a holder
 * put an ExportStream (compartment.ts), the stored form keeps null and, beside the document, the
 * path to that place and the stream's holder and ref. A download writes the document's JSON text
 * with each stream's bytes read from its holder, as a base64 string, in its place: the text is the
 * one JSON.stringify gives for the whole document, and no file is ever held whole.
 */
import { randomBytes } from 'node:crypto';
import { ExportStream } from '../../compartment.ts';

type Path = Array<string | number>;

interface StoredStream {
  path: Path;
  holder: string;
  ref: unknown;
}

/** What an export's row keeps (encrypted): the document with null where its streams go, and the streams. */
export interface StoredExport {
  stored: 2;
  document: Record<string, unknown>;
  streams: StoredStream[];
}

/** The stored form of a document just built: each ExportStream taken out of it, its place set to null. */
export function storedExport(document: Record<string, unknown>): StoredExport {
  const streams: StoredStream[] = [];
  const walk = (value: unknown, path: Path): unknown => {
    if (value instanceof ExportStream) {
      streams.push({ path, holder: value.holder, ref: value.ref });
      return null;
    }
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = walk(value[i], [...path, i]);
    } else if (value !== null && typeof value === 'object') {
      const object = value as Record<string, unknown>;
      for (const key of Object.keys(object)) object[key] = walk(object[key], [...path, key]);
    }
    return value;
  };
  walk(document, []);
  return { stored: 2, document, streams };
}

/** A stored export as its row's text parses: an export stored before streams were kept (the document alone) has none. */
export function parseStoredExport(text: string): StoredExport {
  const parsed = JSON.parse(text) as Record<string, unknown>;
  return parsed.stored === 2 ? (parsed as unknown as StoredExport) : { stored: 2, document: parsed, streams: [] };
}

/**
 * The document's JSON text, each stream's bytes in its place (null when `open` answers null). Each
 * place is first set to a string no stored value can hold (a fresh random one), which the text is cut at.
 */
export async function* exportText(
  stored: StoredExport,
  open: (stream: { holder: string; ref: unknown }) => Promise<AsyncIterable<Buffer> | null>,
): AsyncGenerator<Buffer> {
  const mark = `cps-export-stream-${randomBytes(16).toString('hex')}-`;
  for (const [i, stream] of stored.streams.entries()) setAt(stored.document, stream.path, `${mark}${i}`);
  const text = JSON.stringify(stored.document);
  const places = new RegExp(`"${mark}(\\d+)"`, 'g');
  let at = 0;
  for (const place of text.matchAll(places)) {
    yield Buffer.from(text.slice(at, place.index), 'utf8');
    at = place.index + place[0].length;
    const bytes = await open(stored.streams[Number(place[1])]!);
    if (bytes === null) {
      yield Buffer.from('null');
      continue;
    }
    yield Buffer.from('"');
    yield* base64Of(bytes);
    yield Buffer.from('"');
  }
  yield Buffer.from(text.slice(at), 'utf8');
}

/** Base64 of a stream of bytes, piece by piece (a piece's last one or two bytes wait for the next). */
async function* base64Of(bytes: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let carry = Buffer.alloc(0);
  for await (const piece of bytes) {
    const joined = carry.length > 0 ? Buffer.concat([carry, piece]) : piece;
    const whole = joined.length - (joined.length % 3);
    if (whole > 0) yield Buffer.from(joined.subarray(0, whole).toString('base64'), 'latin1');
    carry = Buffer.from(joined.subarray(whole));
  }
  if (carry.length > 0) yield Buffer.from(carry.toString('base64'), 'latin1');
}

function setAt(document: Record<string, unknown>, path: Path, value: unknown): void {
  let parent: unknown = document;
  for (const step of path.slice(0, -1)) parent = (parent as Record<string | number, unknown>)[step];
  (parent as Record<string | number, unknown>)[path.at(-1)!] = value;
}
