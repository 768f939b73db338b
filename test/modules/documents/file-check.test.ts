import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { type CheckedFile, checkedFile, type FileRules, HEAD_BYTES } from '../../../src/modules/documents/file-check.ts';
import { sampleFile } from './support.ts';

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

  it('refuses bytes of no accepted type before passing any on', async () => {
    const passedOn: Buffer[] = [];
    const checked: CheckedFile = { contentType: null, size: 0 };
    await assert.rejects(async () => {
      for await (const piece of checkedFile(piecesOf(Buffer.from('PK\u0003\u0004'.padEnd(9000, 'x')), 1000), RULES, checked)) passedOn.push(piece);
    }, /accepted/);
    assert.equal(passedOn.length, 0);
  });
});
