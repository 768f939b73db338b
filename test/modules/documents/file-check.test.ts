import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  type CheckedFile,
  checkedFile,
  checkStoredFile,
  type FileRules,
  HEAD_BYTES,
  heifDeclaredPixels,
} from '../../../src/modules/documents/file-check.ts';
import { box, heicOf, jpegWithHiddenFrame, sampleFile, u32s } from './support.ts';

const RULES: FileRules = { maxBytes: 10 * 1024 * 1024, maxReason: 'the limit', maxImagePixels: 50_000_000 };

async function* piecesOf(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function passed(source: AsyncIterable<Buffer>, rules = RULES): Promise<{ out: Buffer[]; checked: CheckedFile }> {
  const checked: CheckedFile = { contentType: null, size: 0 };
  const out: Buffer[] = [];
  for await (const piece of checkedFile(source, rules, checked)) out.push(piece);
  return { out, checked };
}

function pdfOf(bytes: number): Buffer {
  return Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(bytes - 9)]);
}

/** A JPEG whose frame header (its dimensions) comes after `exifBytes` of APP1 segments. */
function jpegOf(width: number, height: number, exifBytes: number): Buffer {
  const segments: Buffer[] = [Buffer.from([0xff, 0xd8])];
  for (let left = exifBytes; left > 0; ) {
    const body = Math.min(left, 60_000);
    const segment = Buffer.alloc(4 + body);
    segment.writeUInt16BE(0xffe1, 0);
    segment.writeUInt16BE(body + 2, 2);
    segments.push(segment);
    left -= body;
  }
  const frame = Buffer.from([0xff, 0xc0, 0x00, 0x11, 0x08, 0, 0, 0, 0, 0x03, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
  frame.writeUInt16BE(height, 5);
  frame.writeUInt16BE(width, 7);
  return Buffer.concat([...segments, frame, Buffer.from([0xff, 0xd9])]);
}

describe('documents: a file checked as it streams', () => {
  it("passes a PDF's pieces on as they came, without copying them, once its type is told", async () => {
    const pieces = [...Array(8)].map((_, i) => (i === 0 ? pdfOf(64 * 1024) : randomBytes(64 * 1024)));
    const { out, checked } = await passed(
      (async function* () {
        yield* pieces;
      })(),
    );
    assert.equal(checked.contentType, 'application/pdf');
    assert.equal(checked.size, 8 * 64 * 1024);
    assert.equal(out.length, pieces.length);
    for (const [i, piece] of out.entries()) assert.equal(piece, pieces[i], `piece ${i} is the one given`);
  });

  it('tells the type of a file that arrives a byte at a time, and keeps every byte in order', async () => {
    const pdf = pdfOf(6000);
    const { out, checked } = await passed(piecesOf(pdf, 1));
    assert.equal(checked.contentType, 'application/pdf');
    assert.deepEqual(Buffer.concat(out), pdf);
  });

  it('checks a file smaller than the bytes the type is told from', async () => {
    const { out, checked } = await passed(piecesOf(pdfOf(100), 7));
    assert.equal(checked.contentType, 'application/pdf');
    assert.equal(Buffer.concat(out).length, 100);
  });

  it('refuses a JPEG declaring too many pixels whose frame header comes after 100 KiB of EXIF data', async () => {
    const bomb = jpegOf(60_000, 60_000, 100 * 1024);
    await assert.rejects(passed(piecesOf(bomb, 16 * 1024)), /decompression bomb/);
  });

  it('passes a JPEG within the pixel budget whole, its frame header after 100 KiB of EXIF data', async () => {
    const jpeg = jpegOf(4000, 3000, 100 * 1024);
    const { out, checked } = await passed(piecesOf(jpeg, 16 * 1024));
    assert.equal(checked.contentType, 'image/jpeg');
    assert.deepEqual(Buffer.concat(out), jpeg);
  });

  it('finds the dimensions of a JPEG whose frame header follows 700 KiB of segments, and refuses it as a bomb', async () => {
    await assert.rejects(passed(piecesOf(jpegOf(60_000, 60_000, 700 * 1024), 16 * 1024)), /decompression bomb/);
    const jpeg = jpegOf(4000, 3000, 700 * 1024);
    assert.deepEqual(Buffer.concat((await passed(piecesOf(jpeg, 16 * 1024))).out), jpeg);
  });

  it('counts the pixels of the frame header a JPEG decoder reads, not of one hidden in an APP segment behind a stray byte', async () => {
    const bomb = jpegWithHiddenFrame(16_000, 16_000);
    await assert.rejects(passed(piecesOf(bomb, 256)), /declares 256000000 pixels/);
    const size = bomb.length;
    const read = async (start: number, bytes: number) => bomb.subarray(start, start + bytes);
    await assert.rejects(checkStoredFile(size, read, RULES, { contentType: null, size: 0 }), /declares 256000000 pixels/);
    // Within the budget, the same layout passes whole.
    const fine = jpegWithHiddenFrame(4000, 3000);
    assert.deepEqual(Buffer.concat((await passed(piecesOf(fine, 256))).out), fine);
  });

  it('refuses an image that declares no dimensions within the bytes held for them, or none at all', async () => {
    // Past what is held: its pixels could not be counted before a client decodes it.
    await assert.rejects(passed(piecesOf(jpegOf(60_000, 60_000, HEAD_BYTES + 1024), 16 * 1024)), /declares no dimensions/);
    const noFrame = jpegOf(4000, 3000, 10 * 1024).subarray(0, 10 * 1024);
    await assert.rejects(passed(piecesOf(noFrame, 4096)), /declares no dimensions/);
  });

  it('holds an image only until its dimensions are in: a PNG goes on after its first piece', async () => {
    const png = Buffer.concat([sampleFile('png'), Buffer.alloc(200_000)]);
    const pieces = piecesOf(png, 64 * 1024);
    const seen: number[] = [];
    let arrived = 0;
    const counted = (async function* () {
      for await (const piece of pieces) {
        arrived += 1;
        yield piece;
      }
    })();
    for await (const _ of checkedFile(counted, RULES, { contentType: null, size: 0 })) seen.push(arrived);
    assert.equal(seen[0], 1, 'the first piece went on before the second arrived');
  });

  it('passes a HEIF whose image data comes before its meta on as it arrives, and finds the meta after it', async () => {
    const heic = heicOf([[4000, 3000]], 3 * HEAD_BYTES, { imageDataFirst: true });
    let arrived = 0;
    const seen: number[] = [];
    const counted = (async function* () {
      for await (const piece of piecesOf(heic, 64 * 1024)) {
        arrived += 1;
        yield piece;
      }
    })();
    const checked: CheckedFile = { contentType: null, size: 0 };
    const out: Buffer[] = [];
    for await (const piece of checkedFile(counted, RULES, checked)) {
      seen.push(arrived);
      out.push(piece);
    }
    assert.equal(seen[0], 1, 'the first piece went on before the second arrived: the image data is not held');
    assert.equal(checked.contentType, 'image/heic');
    assert.deepEqual(Buffer.concat(out), heic);
    // The mdat's size in 64 bits, boxes between it and the meta, and pieces that cut every header.
    for (const [variant, size] of [
      [heicOf([[4000, 3000]], 2 * HEAD_BYTES, { imageDataFirst: true, largeSize: true }), 64 * 1024],
      [heicOf([[4000, 3000]], 5000, { imageDataFirst: true, largeSize: true }), 7],
      [heicOf([[4000, 3000]], 5000, { imageDataFirst: true, between: [box('free', Buffer.alloc(3000)), box('skip')] }), 7],
    ] as const) {
      assert.deepEqual(Buffer.concat((await passed(piecesOf(variant, size))).out), variant);
    }
  });

  it("refuses a HEIF whose meta after its image data declares too many pixels in its largest image, before the meta's last piece goes on", async () => {
    const bomb = heicOf(
      [
        [512, 512],
        [60_000, 60_000],
      ],
      2 * HEAD_BYTES,
      { imageDataFirst: true },
    );
    const out: Buffer[] = [];
    await assert.rejects(async () => {
      for await (const piece of checkedFile(piecesOf(bomb, 16 * 1024), RULES, { contentType: null, size: 0 })) out.push(piece);
    }, /declares 3600000000 pixels.*decompression bomb/);
    assert.ok(Buffer.concat(out).length < bomb.length - 16, 'the bytes of the meta did not all go on');
    // Within the head held, the same.
    await assert.rejects(passed(piecesOf(heicOf([[60_000, 60_000]], 100, { imageDataFirst: true, largeSize: true }), 5)), /decompression bomb/);
  });

  it('refuses a HEIF whose image data comes first and no meta with dimensions follows it', async () => {
    const refusals: Array<[Buffer, RegExp]> = [
      [heicOf(null, 2 * HEAD_BYTES, { imageDataFirst: true }), /no meta box follows its image data/],
      [heicOf(null, 2 * HEAD_BYTES, { imageDataFirst: true, between: [box('free', Buffer.alloc(100))] }), /no meta box follows/],
      // A meta that the file ends inside.
      [heicOf([[1, 1]], 2 * HEAD_BYTES, { imageDataFirst: true }).subarray(0, -4), /no meta box follows/],
      [heicOf(null, 1000, { imageDataFirst: true, between: [box('meta', u32s(0), box('iprp', box('ipco')))] }), /its meta box declares none/],
      // More than is read for a meta.
      [
        heicOf(null, 1000, { imageDataFirst: true, between: [box('meta', u32s(0), box('free', Buffer.alloc(HEAD_BYTES)))] }),
        /more than the 1024 KiB/,
      ],
      // An mdat of size 0 runs to the end of the file: no meta can follow it.
      [Buffer.concat([heicOf(null, 0).subarray(0, 24), u32s(0), Buffer.from('mdat'), randomBytes(5000)]), /runs to the end of the file/],
      [Buffer.concat([heicOf(null, 0).subarray(0, 24), u32s(4), Buffer.from('mdat'), randomBytes(5000)]), /declares 4 bytes, fewer than its header/],
    ];
    for (const [file, reason] of refusals) {
      await assert.rejects(passed(piecesOf(file, 64 * 1024)), (error: Error) => {
        assert.match(error.message, /^The image declares no dimensions/);
        assert.match(error.message, reason);
        return true;
      });
    }
  });

  it('still finds the dimensions of a HEIF whose meta comes first, and refuses it as a bomb when they are too many', async () => {
    const heic = heicOf([[4000, 3000]], 3 * HEAD_BYTES);
    assert.deepEqual(Buffer.concat((await passed(piecesOf(heic, 64 * 1024))).out), heic);
    await assert.rejects(passed(piecesOf(heicOf([[60_000, 60_000]], 3 * HEAD_BYTES), 64 * 1024)), /decompression bomb/);
  });

  it("counts a whole stored HEIF's pixels as its upload did, its meta before or after its image data, whatever its sizes' width", () => {
    // A tile and the image it is a tile of.
    const sizes: Array<[number, number]> = [
      [512, 512],
      [4032, 3024],
    ];
    for (const options of [{}, { imageDataFirst: true }, { imageDataFirst: true, largeSize: true }]) {
      assert.equal(heifDeclaredPixels(heicOf(sizes, 5000, options)), 4032 * 3024, JSON.stringify(options));
    }
    assert.equal(heifDeclaredPixels(heicOf(null, 5000, { imageDataFirst: true })), null);
  });

  it('refuses bytes of no accepted type before passing any on', async () => {
    const passedOn: Buffer[] = [];
    const checked: CheckedFile = { contentType: null, size: 0 };
    await assert.rejects(async () => {
      for await (const piece of checkedFile(piecesOf(Buffer.from('PK\u0003\u0004'.padEnd(9000, 'x')), 1000), RULES, checked)) passedOn.push(piece);
    }, /accepted/);
    assert.equal(passedOn.length, 0);
  });
});

describe('documents: a file checked where a client stored it', () => {
  /** The checks of `file` as stored, and the ranges read of it. */
  async function checkedStored(file: Buffer, rules = RULES): Promise<{ checked: CheckedFile; reads: Array<[number, number]> }> {
    const reads: Array<[number, number]> = [];
    const checked: CheckedFile = { contentType: null, size: 0 };
    await checkStoredFile(
      file.length,
      async (start, bytes) => {
        reads.push([start, bytes]);
        return file.subarray(start, start + bytes);
      },
      rules,
      checked,
    );
    return { checked, reads };
  }

  it('reads the head, then the meta of a HEIF where its top-level boxes put it, never the image data past the head', async () => {
    const heic = heicOf([[4000, 3000]], 5 * HEAD_BYTES, { imageDataFirst: true, largeSize: true });
    const metaAt = 24 + 16 + 5 * HEAD_BYTES;
    const { checked, reads } = await checkedStored(heic);
    assert.equal(checked.contentType, 'image/heic');
    assert.deepEqual(reads, [
      [0, HEAD_BYTES],
      [metaAt, heic.length - metaAt],
    ]);
    const meta = heicOf([[4000, 3000]], 3 * HEAD_BYTES);
    assert.deepEqual((await checkedStored(meta)).reads, [[0, HEAD_BYTES]], 'a meta first is in the head');
  });

  it('refuses a HEIF whose meta after its image data declares too many pixels, or that has no meta after it', async () => {
    const bomb = heicOf(
      [
        [1, 1],
        [60_000, 60_000],
      ],
      2 * HEAD_BYTES,
      { imageDataFirst: true },
    );
    await assert.rejects(checkedStored(bomb), /decompression bomb/);
    await assert.rejects(checkedStored(heicOf(null, 2 * HEAD_BYTES, { imageDataFirst: true })), /declares no dimensions \(HEIF: no meta box follows/);
    const big = heicOf(null, 2 * HEAD_BYTES, { imageDataFirst: true, between: [box('meta', u32s(0), box('free', Buffer.alloc(HEAD_BYTES)))] });
    await assert.rejects(checkedStored(big), /more than the 1024 KiB/);
  });

  it('walks many boxes after the image data with reads that each start past the last', async () => {
    const frees = Array.from({ length: 1000 }, () => box('free', Buffer.alloc(3000)));
    const heic = heicOf([[4000, 3000]], 2 * HEAD_BYTES, { imageDataFirst: true, between: frees });
    const { reads } = await checkedStored(heic);
    for (const [i, [start]] of reads.entries()) if (i > 0) assert.ok(start >= reads[i - 1]![0] + reads[i - 1]![1]);
    assert.ok(reads.length <= 2 + Math.ceil((1000 * 3008) / HEAD_BYTES), `${reads.length} reads`);
    // Boxes of 8 bytes cost a parse each: past 1024 of them, the file is refused (no HEIF has so many).
    const many = heicOf([[4000, 3000]], 1000, { imageDataFirst: true, between: [Buffer.concat(Array.from({ length: 2000 }, () => box('free')))] });
    await assert.rejects(checkedStored(many), /more than 1024 top-level boxes/);
    await assert.rejects(passed(piecesOf(many, 64 * 1024)), /more than 1024 top-level boxes/);
  });

  it("counts a HEIF's pixels as a decoder reads its boxes, whatever image-size would make of them", async () => {
    const box64 = (type: string, ...content: Buffer[]) => {
      const header = Buffer.alloc(16);
      header.writeUInt32BE(1);
      header.write(type, 4, 'latin1');
      header.writeBigUInt64BE(BigInt(16 + content.reduce((sum, part) => sum + part.length, 0)), 8);
      return Buffer.concat([header, ...content]);
    };
    const ispe = (width: number, height: number) => box('ispe', u32s(0, width, height));
    const meta = (...properties: Buffer[]) => box('meta', u32s(0), box('iprp', box('ipco', ...properties)));
    const ftyp = heicOf(null, 0).subarray(0, 24);
    const mdat = box('mdat', randomBytes(2 * HEAD_BYTES));
    // image-size takes a clap box's second field from the width: 60,000 x 60,000 would count as 1 x 60,000.
    const clap = box('clap', u32s(60_000, 59_999, 60_000, 1, 0, 1, 0, 1));
    // image-size steps 8 bytes into a 64-bit box: a fake 1 x 1 meta in its body, or a box there that jumps the real ispe.
    const inner = Buffer.alloc(8);
    inner.writeUInt32BE(8 + ispe(60_000, 60_000).length);
    inner.write('skip', 4, 'latin1');
    const bombs = {
      'clap, meta first': Buffer.concat([ftyp, meta(ispe(60_000, 60_000), clap), mdat]),
      'clap, image data first': Buffer.concat([ftyp, mdat, meta(ispe(60_000, 60_000), clap)]),
      'a fake meta in a 64-bit box': Buffer.concat([ftyp, box64('free', meta(ispe(1, 1))), meta(ispe(60_000, 60_000)), mdat]),
      'an ispe jumped by a 64-bit property': Buffer.concat([ftyp, meta(box64('free', inner), ispe(60_000, 60_000), ispe(1, 1)), mdat]),
    };
    for (const [name, bomb] of Object.entries(bombs)) {
      await assert.rejects(passed(piecesOf(bomb, 64 * 1024)), /declares 3600000000 pixels/, name);
      await assert.rejects(checkedStored(bomb), /declares 3600000000 pixels/, name);
    }
  });
});
