/** Thumbnails: made by a job for JPEG, PNG, HEIC/HEIF and PDF files, listed as metadata.thumbnail, served by a short-lived link, removed with their file. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { createDeflate } from 'node:zlib';
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { imageSize } from 'image-size';
import { heifThumbnailOf, pdfThumbnailOf, thumbnailOf } from '../../../src/modules/documents/thumbnails.ts';
import { createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { untilSecondIsOver } from '../cases/support.ts';
import { documentsApi, documentsTestApp, download, jpegWithHiddenFrame, sampleFile, STORE, storedOf, writeUnrecordedThumbnail } from './support.ts';

/** A real image of `width` × `height` pixels, drawn and encoded here. */
function image(type: 'png' | 'jpeg', width: number, height: number): Buffer {
  const canvas = createCanvas(width, height);
  const context = canvas.getContext('2d');
  context.fillStyle = '#3a7';
  context.fillRect(0, 0, width, height);
  context.fillStyle = '#c33';
  context.fillRect(width / 4, height / 4, width / 2, height / 2);
  return type === 'png' ? canvas.toBuffer('image/png') : canvas.toBuffer('image/jpeg');
}

/** A one-page PDF (A4 portrait: 595 × 842 points) with a line of text and a filled rectangle. */
function onePagePdf(): Buffer {
  const content = 'BT /F1 48 Tf 72 700 Td (Lab report) Tj ET 0.8 0.2 0.2 rg 72 100 450 500 re f';
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let text = '%PDF-1.4\n';
  const offsets: number[] = [];
  for (const [i, object] of objects.entries()) {
    offsets.push(text.length);
    text += `${i + 1} 0 obj\n${object}\nendobj\n`;
  }
  const xref = text.length;
  text += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((at) => `${String(at).padStart(10, '0')} 00000 n \n`).join('')}`;
  text += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(text, 'latin1');
}

/** A one-page PDF of a few hundred KB whose page content inflates to `megabytes` MB of spaces. */
async function inflatingPdf(megabytes: number): Promise<Buffer> {
  const deflate = createDeflate({ level: 9 });
  const compressed: Buffer[] = [];
  deflate.on('data', (piece: Buffer) => compressed.push(piece));
  const ended = new Promise((resolve) => deflate.on('end', resolve));
  const spaces = Buffer.alloc(1024 * 1024, 0x20);
  for (let i = 0; i < megabytes; i++) if (!deflate.write(spaces)) await new Promise((resolve) => deflate.once('drain', resolve));
  deflate.end();
  await ended;
  const content = Buffer.concat(compressed);
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>',
  ];
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n')];
  const offsets: number[] = [];
  let length = parts[0]!.length;
  const add = (part: Buffer) => {
    parts.push(part);
    length += part.length;
  };
  for (const [i, object] of objects.entries()) {
    offsets.push(length);
    add(Buffer.from(`${i + 1} 0 obj\n${object}\nendobj\n`));
  }
  offsets.push(length);
  add(Buffer.from(`4 0 obj\n<< /Length ${content.length} /Filter /FlateDecode >>\nstream\n`));
  add(content);
  add(Buffer.from('\nendstream\nendobj\n'));
  const xref = length;
  const entries = offsets.map((at) => `${String(at).padStart(10, '0')} 00000 n \n`).join('');
  add(Buffer.from(`xref\n0 5\n0000000000 65535 f \n${entries}trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`));
  return Buffer.concat(parts);
}

/** A PNG whose header declares 6000 × 5000 pixels (30 megapixels) over a few bytes of data: accepted, never decoded. */
function declaredHuge(): Buffer {
  const png = image('png', 4, 4);
  // IHDR's width and height follow the 8-byte signature, the chunk's length and its type.
  png.writeUInt32BE(6000, 16);
  png.writeUInt32BE(5000, 20);
  return png;
}

/** A real HEIC of fixtures/ (README.md there says how each was made). */
const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));

/** The HEIC fixture's 320 × 240 image with its header (ispe) declaring 6000 × 5000 pixels (30 megapixels): accepted, never decoded. */
function heicDeclaredHuge(): Buffer {
  const heic = fixture('landscape-320x240.heic');
  // ispe: its type, then version and flags, width and height.
  const ispe = heic.indexOf('ispe');
  heic.writeUInt32BE(6000, ispe + 8);
  heic.writeUInt32BE(5000, ispe + 12);
  return heic;
}

/** The two-image fixture with its primary item (pitm) made the second image, the landscape one (id 2), instead of the first. */
function heicSecondPrimary(): Buffer {
  const heic = fixture('two-images.heic');
  // pitm: its type, then version 0 and flags, and a 16-bit item id.
  const pitm = heic.indexOf('pitm');
  assert.equal(heic.readUInt16BE(pitm + 8), 1);
  heic.writeUInt16BE(2, pitm + 8);
  return heic;
}

/** The colour of a JPEG's pixel at (x, y), as [r, g, b]. */
async function colourAt(jpeg: Buffer, x: number, y: number): Promise<number[]> {
  const decoded = await loadImage(jpeg);
  const canvas = createCanvas(decoded.width, decoded.height);
  const context = canvas.getContext('2d');
  context.drawImage(decoded, 0, 0);
  return [...context.getImageData(x, y, 1, 1).data.subarray(0, 3)];
}

/** Whether two colours are within JPEG's error of each other. */
const near = (a: number[], b: number[]) => a.every((value, i) => Math.abs(value - b[i]!) <= 24);

describe(`documents: thumbnails (${DIALECT}, ${STORE} store)`, () => {
  let t: TestApp & { objectsDir: string | null };
  let client: TestClient;

  before(async () => {
    t = await documentsTestApp();
    client = await createTestClient(t.ctx);
  });
  after(() => t.close());

  const thumbnails = async (patient: string) => {
    await untilSecondIsOver();
    const listed = await documentsApi(t.app, client.token, patient).all();
    return new Map(
      listed.items.map((entry) => [entry.record.item.document_id as string, (entry.record.item.metadata as { thumbnail: string | null }).thumbnail]),
    );
  };

  it("a JPEG, a PNG and a PDF's first page get a thumbnail of at most 256 px a side, made by a job and served by their link", async () => {
    const api = documentsApi(t.app, client.token, 'pt-thumbs');
    const png = image('png', 800, 600);
    const fromV2 = await api.uploadV2(png, { fileName: 'photo.png', contentType: 'image/png' });
    assert.equal(fromV2.statusCode, 200, fromV2.body);
    const wide = fromV2.json().document_id as string;
    const tall = await api.create([image('jpeg', 300, 1000)], ['image/jpeg']);
    const report = await api.create([onePagePdf()], ['application/pdf']);
    assert.equal((await thumbnails('pt-thumbs')).get(wide), null, 'none before the job ran: nothing is made on the request');
    await t.ctx.jobs.runDue();
    const listed = await thumbnails('pt-thumbs');
    for (const [id, width, height] of [
      [wide, 256, 192],
      [tall, 77, 256],
      [report, 181, 256],
    ] as const) {
      const link = listed.get(id);
      assert.match(String(link), /^http:\/\/cps\.test\/mr\/api\/v1\/docs\/[^/]+\/files\/0\/thumbnail\?/);
      const answer = await download(t.app, link!);
      assert.equal(answer.statusCode, 200, answer.body);
      assert.match(String(answer.headers['content-type']), /^image\/jpeg/);
      assert.deepEqual({ ...imageSize(answer.rawPayload) }, { height, width, type: 'jpg' });
    }
    // A document's download link does not open another document's thumbnail.
    const forged = listed.get(wide)!.replace(`/docs/${wide}/`, `/docs/${tall}/`);
    assert.equal((await download(t.app, forged)).statusCode, 403);
  });

  it("a HEIC's primary image gets a thumbnail of at most 256 px a side, of its colours", async () => {
    const api = documentsApi(t.app, client.token, 'pt-heic');
    const landscape = await api.create([fixture('landscape-320x240.heic')], ['image/heic']);
    const firstPrimary = await api.create([fixture('two-images.heic')], ['image/heif']);
    const secondPrimary = await api.create([heicSecondPrimary()], ['image/heic']);
    await t.ctx.jobs.runDue();
    const listed = await thumbnails('pt-heic');
    const thumbnailOf = async (id: string) => {
      const answer = await download(t.app, listed.get(id)!);
      assert.equal(answer.statusCode, 200, answer.body);
      assert.match(String(answer.headers['content-type']), /^image\/jpeg/);
      return answer.rawPayload;
    };
    const green = [0x33, 0xaa, 0x77];
    const blue = [0x33, 0x77, 0xaa];
    const red = [0xcc, 0x33, 0x33];
    for (const [id, width, height, ground] of [
      [landscape, 256, 192, green],
      [firstPrimary, 144, 256, blue],
      // Not the first image: the one the file names primary.
      [secondPrimary, 256, 192, green],
    ] as const) {
      const jpeg = await thumbnailOf(id);
      assert.deepEqual({ ...imageSize(jpeg) }, { height, width, type: 'jpg' });
      const corner = await colourAt(jpeg, 4, 4);
      const middle = await colourAt(jpeg, width / 2, height / 2);
      assert.ok(near(corner, ground), `the ground is ${corner}, not ${ground}`);
      assert.ok(near(middle, red), `the middle is ${middle}, not ${red}`);
    }
  });

  it('an image declaring more pixels than a thumbnail decodes, or a file that does not decode, gets none, and the job does not fail', async () => {
    const api = documentsApi(t.app, client.token, 'pt-bombs');
    const huge = await api.create([declaredHuge()], ['image/png']);
    const broken = await api.create([sampleFile('jpeg', 3000)], ['image/jpeg']);
    const brokenPdf = await api.create([sampleFile('pdf', 3000)], ['application/pdf']);
    // With a trailer, so that the rendering thread gets it, and fails.
    const garbledPdf = await api.create([Buffer.concat([sampleFile('pdf', 3000), Buffer.from('\nstartxref\n9\n%%EOF\n')])], ['application/pdf']);
    const hugeHeic = await api.create([heicDeclaredHuge()], ['image/heic']);
    // Its header whole, so that the decoding thread gets it, and fails: its image data zeroed, or cut short.
    const heic = fixture('landscape-320x240.heic');
    const imageData = heic.indexOf('mdat') + 4;
    const zeroedHeic = await api.create([Buffer.from(heic).fill(0, imageData)], ['image/heic']);
    const cutHeic = await api.create([heic.subarray(0, imageData + 32)], ['image/heic']);
    await t.ctx.jobs.runDue();
    const listed = await thumbnails('pt-bombs');
    assert.equal(listed.get(huge), null);
    assert.equal(listed.get(broken), null);
    assert.equal(listed.get(brokenPdf), null);
    assert.equal(listed.get(garbledPdf), null);
    assert.equal(listed.get(hugeHeic), null);
    assert.equal(listed.get(zeroedHeic), null);
    assert.equal(listed.get(cutHeic), null);
    const unsettled = await t.ctx.storage.db
      .selectFrom('jobs')
      .select(['status', 'last_error'])
      .where('kind', '=', 'documents.thumbnail')
      .where('status', '<>', 'succeeded')
      .execute();
    assert.deepEqual(unsettled, []);
  });

  it('a JPEG whose real frame header declares more pixels than a thumbnail decodes gets none, a 1 × 1 one hidden before it notwithstanding', async () => {
    // 30 megapixels: over the thumbnail's 25, under the upload's 100.
    assert.equal(await thumbnailOf(jpegWithHiddenFrame(6000, 5000)), null);
    const small = await thumbnailOf(jpegWithHiddenFrame(600, 500));
    assert.deepEqual(imageSize(small!), { width: 256, height: 213, type: 'jpg' });
    // Through an upload and the job: accepted (within the upload's limit), and never decoded.
    const api = documentsApi(t.app, client.token, 'pt-hidden-frame');
    const id = await api.create([jpegWithHiddenFrame(6000, 5000)], ['image/jpeg']);
    await t.ctx.jobs.runDue();
    assert.equal((await thumbnails('pt-hidden-frame')).get(id), null);
  });

  it("a PDF whose content inflates past the rendering thread's memory limit gets no thumbnail, and the process stays within it", async () => {
    const pdf = await inflatingPdf(300);
    assert.ok(pdf.length < 400_000);
    const before = process.memoryUsage.rss();
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 5);
    try {
      assert.equal(await pdfThumbnailOf(pdf, 64), null);
    } finally {
      clearInterval(sampler);
    }
    // The limit, what grows between two looks at it (20 ms), and the sampler's own slack; 700 MB without the limit.
    const grown = (peak - before) / 1024 / 1024;
    assert.ok(grown < 64 + 96, `the process grew by ${Math.round(grown)} MB`);
  });

  it("a HEIC whose decoding passes its thread's memory limit gets no thumbnail", async () => {
    const heic = fixture('landscape-320x240.heic');
    assert.ok(await heifThumbnailOf(Buffer.from(heic)));
    // A thread alone takes more than 1 MB: ended at the first look.
    assert.equal(await heifThumbnailOf(Buffer.from(heic), { memoryMb: 1 }), null);
  });

  it('libheif itself refuses to make an image of more pixels than the budget, whatever boxes the file declares them in', async () => {
    const heic = fixture('landscape-320x240.heic');
    // 320 × 240 = 76,800 pixels: over a budget of 200², within one of 400².
    assert.equal(await heifThumbnailOf(Buffer.from(heic), { maxPixels: 200 * 200 }), null);
    assert.ok(await heifThumbnailOf(Buffer.from(heic), { maxPixels: 400 * 400 }));
  });

  it("a deleted document's thumbnail goes with its file", async () => {
    const api = documentsApi(t.app, client.token, 'pt-gone');
    const id = await api.create([image('png', 400, 400)], ['image/png']);
    await t.ctx.jobs.runDue();
    const link = (await thumbnails('pt-gone')).get(id);
    assert.ok(link);
    assert.equal((await download(t.app, link)).statusCode, 200);
    assert.equal((await api.remove(id)).statusCode, 200);
    assert.equal((await download(t.app, link)).statusCode, 404);
    assert.deepEqual(await storedOf(t, id), [], 'the store keeps neither the file nor its thumbnail');
  });

  it('a thumbnail a job wrote and never recorded (its process ended between) goes with its file', async () => {
    const api = documentsApi(t.app, client.token, 'pt-unrecorded');
    const id = await api.create([image('png', 64, 64)], ['image/png']);
    await writeUnrecordedThumbnail(t, id, image('jpeg', 8, 8));
    assert.equal((await storedOf(t, id)).length, 2);
    assert.equal((await thumbnails('pt-unrecorded')).get(id), null, 'an unrecorded thumbnail is not listed');
    assert.equal((await api.remove(id)).statusCode, 200);
    assert.deepEqual(await storedOf(t, id), [], 'the store keeps neither the file nor the unrecorded thumbnail');
  });

  it('a job run again after one that ended between writing and recording its thumbnail makes and records it', async () => {
    const api = documentsApi(t.app, client.token, 'pt-rerun');
    const id = await api.create([image('png', 300, 300)], ['image/png']);
    await writeUnrecordedThumbnail(t, id, Buffer.from('what the ended attempt wrote'));
    await t.ctx.jobs.runDue();
    const link = (await thumbnails('pt-rerun')).get(id);
    assert.ok(link);
    const answer = await download(t.app, link);
    assert.equal(answer.statusCode, 200, answer.body);
    assert.deepEqual({ ...imageSize(answer.rawPayload) }, { height: 256, width: 256, type: 'jpg' });
    assert.equal((await storedOf(t, id)).length, 2, 'the file and one thumbnail');
  });
});

describe(`documents: thumbnails of the kinds CPS_DOCUMENTS_THUMBNAILS names (${DIALECT}, ${STORE} store)`, () => {
  let t: TestApp & { objectsDir: string | null };
  let client: TestClient;

  before(async () => {
    t = await documentsTestApp({ env: { CPS_DOCUMENTS_THUMBNAILS: 'jpeg,png' } });
    client = await createTestClient(t.ctx);
  });
  after(() => t.close());

  it('a kind left out gets no thumbnail and no job; a kind named gets both', async () => {
    const api = documentsApi(t.app, client.token, 'pt-kinds');
    const heic = await api.create([fixture('landscape-320x240.heic')], ['image/heic']);
    const pdf = await api.create([onePagePdf()], ['application/pdf']);
    const png = await api.create([image('png', 64, 64)], ['image/png']);
    const jobs = await t.ctx.storage.db.selectFrom('jobs').select('payload').where('kind', '=', 'documents.thumbnail').execute();
    assert.deepEqual(
      jobs.map((job) => (JSON.parse(job.payload) as { documentId: string }).documentId),
      [png],
      'a job for the PNG alone',
    );
    await t.ctx.jobs.runDue();
    await untilSecondIsOver();
    const listed = await documentsApi(t.app, client.token, 'pt-kinds').all();
    const thumbnail = (id: string) =>
      (listed.items.find((entry) => entry.record.item.document_id === id)!.record.item.metadata as { thumbnail: string | null }).thumbnail;
    assert.equal(thumbnail(heic), null);
    assert.equal(thumbnail(pdf), null);
    assert.ok(thumbnail(png));
    assert.deepEqual(await storedOf(t, heic).then((stored) => stored.length), 1, 'the HEIC alone, no thumbnail beside it');
  });
});
