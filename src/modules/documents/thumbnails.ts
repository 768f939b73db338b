/**
 * Thumbnails of documents' JPEG and PNG files and of a PDF's first page: a JPEG of at most
 * THUMBNAIL_EDGE pixels a side, made by the documents.thumbnail job once a document's files are
 * stored (never on a request's path), kept by the file store as files are and served by a
 * short-lived link as files are. Decoding costs 4 bytes a pixel, so an image is decoded only when the
 * dimensions its header declares are within THUMBNAIL_MAX_PIXELS (a decompression bomb, or a merely
 * huge scan, gets no thumbnail; the upload's own limit, CPS_DOCUMENTS_MAX_MEGAPIXELS, is about what
 * is stored), and a PDF's embedded images over it are left out. A PDF is rendered by pdf.js in a
 * worker thread of its own (PDF_THREAD), ended after PDF_RENDER_MS, when its heap passes PDF_HEAP_MB,
 * or when the process's resident memory grows by PDF_MEMORY_MB while it runs: no PDF can stall the
 * event loop, hold the job or take the process's memory.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { imageSize } from 'image-size';

export const THUMBNAIL_EDGE = 256;
/** 25 megapixels: 100 MB of pixels while the job decodes one. */
export const THUMBNAIL_MAX_PIXELS = 25_000_000;
export const THUMBNAIL_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'application/pdf']);
const PDF_RENDER_MS = 20_000;
const PDF_HEAP_MB = 192;
/**
 * The thread's limit on the memory it may add to the process. The heap limit does not cover what
 * pdf.js inflates a compressed stream into (ArrayBuffers, outside the heap): a PDF of 300 KB whose
 * page content inflates to 300 MB of spaces took the process from 74 to 793 MB.
 */
export const PDF_MEMORY_MB = 256;
/** How often the process's resident memory is read while a PDF renders. */
const MEMORY_WATCH_MS = 20;

/** A JPEG thumbnail of the file (a PDF's first page), or null when it gets none. */
export function thumbnailOfFile(contentType: string, bytes: Buffer): Promise<Buffer | null> {
  return contentType === 'application/pdf' ? pdfThumbnailOf(bytes) : thumbnailOf(bytes);
}

/** Bytes at a PDF's end that must hold its trailer's `startxref`: a file without one gets no thumbnail, and no thread. */
const PDF_TAIL_BYTES = 1024;

/**
 * The thread's code: plain JavaScript, so that the thread loads no TypeScript support (it costs
 * memory in each isolate). pdf.js parses and draws on the thread that calls it, so a hostile PDF
 * stalls only this thread, which is ended when its time is up.
 */
const PDF_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const { pathToFileURL } = require('node:url');
(async () => {
  const { pdf, edge, maxImagePixels, pdfjs, canvasModule, fonts } = workerData;
  const { getDocument } = await import(pathToFileURL(pdfjs).href);
  const { createCanvas } = require(canvasModule);
  const document = await getDocument({ data: pdf, disableFontFace: true, standardFontDataUrl: fonts, maxImageSize: maxImagePixels, verbosity: 0 }).promise;
  const page = await document.getPage(1);
  const whole = page.getViewport({ scale: 1 });
  if (!(whole.width > 0 && whole.height > 0)) return null;
  const viewport = page.getViewport({ scale: edge / Math.max(whole.width, whole.height) });
  const canvas = createCanvas(Math.max(1, Math.round(viewport.width)), Math.max(1, Math.round(viewport.height)));
  const context = canvas.getContext('2d');
  context.fillStyle = '#fff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  await page.render({ canvas, canvasContext: context, viewport }).promise;
  return canvas.encode('jpeg', 80);
})().then((jpeg) => parentPort.postMessage(jpeg), () => parentPort.postMessage(null));
`;

/** Where the thread finds pdf.js, the canvas and pdf.js's standard fonts. */
function pdfModules(): { pdfjs: string; canvasModule: string; fonts: string } {
  const require = createRequire(import.meta.url);
  const pdfjs = require.resolve('pdfjs-dist/legacy/build/pdf.mjs');
  return {
    pdfjs,
    canvasModule: require.resolve('@napi-rs/canvas'),
    fonts: `${path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'standard_fonts')}/`,
  };
}

/** The first page of a PDF as a JPEG thumbnail, rendered in a worker thread; null when it does not render within its limits. */
export function pdfThumbnailOf(pdf: Buffer, memoryMb = PDF_MEMORY_MB): Promise<Buffer | null> {
  if (!pdf.subarray(Math.max(0, pdf.length - PDF_TAIL_BYTES)).includes('startxref')) return Promise.resolve(null);
  return new Promise((resolve) => {
    // The file's own memory moves to the thread when it is a whole ArrayBuffer (as a concatenation is), else a copy does.
    const whole = pdf.byteOffset === 0 && pdf.byteLength === pdf.buffer.byteLength && pdf.buffer instanceof ArrayBuffer;
    const data = whole ? new Uint8Array(pdf.buffer as ArrayBuffer) : new Uint8Array(pdf);
    const worker = new Worker(PDF_THREAD, {
      eval: true,
      workerData: { pdf: data, edge: THUMBNAIL_EDGE, maxImagePixels: THUMBNAIL_MAX_PIXELS, ...pdfModules() },
      transferList: [data.buffer],
      resourceLimits: { maxOldGenerationSizeMb: PDF_HEAP_MB },
    });
    let answer: Buffer | null = null;
    const timer = setTimeout(() => void worker.terminate(), PDF_RENDER_MS);
    const ceiling = process.memoryUsage.rss() + memoryMb * 1024 * 1024;
    const watch = setInterval(() => {
      if (process.memoryUsage.rss() > ceiling) void worker.terminate();
    }, MEMORY_WATCH_MS);
    worker.once('message', (message: Uint8Array | null) => {
      answer = message === null ? null : Buffer.from(message);
      void worker.terminate();
    });
    worker.once('error', () => void worker.terminate());
    worker.once('exit', () => {
      clearTimeout(timer);
      clearInterval(watch);
      resolve(answer);
    });
  });
}

/** A JPEG thumbnail of the image, or null when it gets none (too many pixels declared, or it does not decode). */
export async function thumbnailOf(image: Buffer): Promise<Buffer | null> {
  let width = 0;
  let height = 0;
  try {
    ({ width = 0, height = 0 } = imageSize(image));
  } catch {
    return null;
  }
  if (width <= 0 || height <= 0 || width * height > THUMBNAIL_MAX_PIXELS) return null;
  // Loaded on the first thumbnail, not with the module: Skia's library costs every process memory.
  const { createCanvas, loadImage } = await import('@napi-rs/canvas');
  let decoded: Awaited<ReturnType<typeof loadImage>>;
  try {
    decoded = await loadImage(image);
  } catch {
    return null;
  }
  if (decoded.width <= 0 || decoded.height <= 0) return null;
  const scale = Math.min(1, THUMBNAIL_EDGE / Math.max(decoded.width, decoded.height));
  const canvas = createCanvas(Math.max(1, Math.round(decoded.width * scale)), Math.max(1, Math.round(decoded.height * scale)));
  const context = canvas.getContext('2d');
  // A PNG's transparency shows on white, as on paper, not on JPEG's black.
  context.fillStyle = '#fff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.drawImage(decoded, 0, 0, canvas.width, canvas.height);
  return canvas.encode('jpeg', 80);
}
