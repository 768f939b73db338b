/**
 * Thumbnails of documents' JPEG, PNG and HEIC/HEIF files and of a PDF's first page: a JPEG of at
 * most THUMBNAIL_EDGE pixels a side, made by the documents.thumbnail job once a document's files are
 * stored (never on a request's path), kept by the file store as files are and served by a
 * short-lived link as files are. Decoding costs 4 bytes a pixel, so an image is decoded only when the
 * pixels its header declares (a HEIF's largest image, as the upload counted them) are within
 * THUMBNAIL_MAX_PIXELS (a decompression bomb, or a merely huge scan, gets no thumbnail; the upload's
 * own limit, CPS_DOCUMENTS_MAX_MEGAPIXELS, is about what is stored), and a PDF's embedded images over
 * it are left out. A JPEG or PNG is decoded by Skia (@napi-rs/canvas), a PDF rendered by pdf.js, and a
 * HEIF's primary image decoded by libheif (the libheif-js package's WebAssembly build: no native build),
 * each in a worker thread of its own (IMAGE_THREAD, PDF_THREAD, HEIF_THREAD, run by inThread: the process
 * itself never loads Skia, nor decodes on its event loop), ended after THREAD_MS, when its heap passes
 * THREAD_HEAP_MB, or when the process's resident memory grows by THREAD_MEMORY_MB while it runs (for
 * a HEIF, more with its declared pixels: HEIF_BYTES_PER_PIXEL): no file can stall the event loop,
 * hold the job or take the process's memory. A file that does not decode within them gets no
 * thumbnail, and the job goes on.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { declaredPixels, heifDeclaredPixels } from './file-check.ts';

export const THUMBNAIL_EDGE = 256;
/** 25 megapixels: 100 MB of pixels while the job decodes one. */
export const THUMBNAIL_MAX_PIXELS = 25_000_000;
const HEIF_TYPES: ReadonlySet<string> = new Set(['image/heic', 'image/heif']);
/** How long a thread may take to make one thumbnail. */
const THREAD_MS = 20_000;
const THREAD_HEAP_MB = 192;
/**
 * The thread's limit on the memory it may add to the process. The heap limit does not cover what
 * lives outside the heap: what pdf.js inflates a compressed stream into (a PDF of 300 KB whose page
 * content inflates to 300 MB of spaces took the process from 74 to 793 MB), libheif's WebAssembly
 * memory and the decoded pixels.
 */
export const THREAD_MEMORY_MB = 256;
/** How often the process's resident memory is read while a thread runs. */
const MEMORY_WATCH_MS = 20;

/** A JPEG thumbnail of the file (a PDF's first page, a HEIF's primary image), or null when it gets none. */
export function thumbnailOfFile(contentType: string, bytes: Buffer): Promise<Buffer | null> {
  if (contentType === 'application/pdf') return pdfThumbnailOf(bytes);
  if (HEIF_TYPES.has(contentType)) return heifThumbnailOf(bytes);
  return thumbnailOf(bytes);
}

/**
 * Runs `code` (plain JavaScript, so that the thread loads no TypeScript support: it costs memory in
 * each isolate) in a worker thread of its own, with `file` as workerData.file and `data` beside it.
 * The thread posts a JPEG or null; it is ended when it has, or when THREAD_MS pass, its heap passes
 * THREAD_HEAP_MB, or the process's resident memory grows by `memoryMb`. Null unless it posted a JPEG.
 */
function inThread(code: string, file: Buffer, data: Record<string, unknown>, memoryMb: number): Promise<Buffer | null> {
  return new Promise((resolve) => {
    // The file's own memory moves to the thread when it is a whole ArrayBuffer (as a concatenation is), else a copy does.
    const whole = file.byteOffset === 0 && file.byteLength === file.buffer.byteLength && file.buffer instanceof ArrayBuffer;
    const bytes = whole ? new Uint8Array(file.buffer as ArrayBuffer) : new Uint8Array(file);
    const worker = new Worker(code, {
      eval: true,
      workerData: { ...data, file: bytes },
      transferList: [bytes.buffer],
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
    });
    let answer: Buffer | null = null;
    const timer = setTimeout(() => void worker.terminate(), THREAD_MS);
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

/** Where a thread finds a module: resolved here, where the application's node_modules are. */
const resolved = (name: string) => createRequire(import.meta.url).resolve(name);

/** Bytes at a PDF's end that must hold its trailer's `startxref`: a file without one gets no thumbnail, and no thread. */
const PDF_TAIL_BYTES = 1024;

/** The PDF thread: pdf.js parses and draws on the thread that calls it, so a hostile PDF stalls only this thread. */
const PDF_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const { pathToFileURL } = require('node:url');
(async () => {
  const { file, edge, maxImagePixels, pdfjs, canvasModule, fonts } = workerData;
  const { getDocument } = await import(pathToFileURL(pdfjs).href);
  const { createCanvas } = require(canvasModule);
  const document = await getDocument({ data: file, disableFontFace: true, standardFontDataUrl: fonts, maxImageSize: maxImagePixels, verbosity: 0 }).promise;
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

/** The first page of a PDF as a JPEG thumbnail, rendered in a worker thread; null when it does not render within its limits. */
export function pdfThumbnailOf(pdf: Buffer, memoryMb = THREAD_MEMORY_MB): Promise<Buffer | null> {
  if (!pdf.subarray(Math.max(0, pdf.length - PDF_TAIL_BYTES)).includes('startxref')) return Promise.resolve(null);
  const pdfjs = resolved('pdfjs-dist/legacy/build/pdf.mjs');
  const fonts = `${path.join(path.dirname(resolved('pdfjs-dist/package.json')), 'standard_fonts')}/`;
  return inThread(
    PDF_THREAD,
    pdf,
    { edge: THUMBNAIL_EDGE, maxImagePixels: THUMBNAIL_MAX_PIXELS, pdfjs, canvasModule: resolved('@napi-rs/canvas'), fonts },
    memoryMb,
  );
}

/** Thread code shared by the image threads: `image` scaled to fit `edge`, drawn onto white, as a JPEG. */
const SCALED_JPEG = `
function scaledJpeg(createCanvas, image, width, height, edge) {
  const scale = Math.min(1, edge / Math.max(width, height));
  const canvas = createCanvas(Math.max(1, Math.round(width * scale)), Math.max(1, Math.round(height * scale)));
  const context = canvas.getContext('2d');
  context.fillStyle = '#fff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.drawImage(image, 0, 0, canvas.width, canvas.height);
  return canvas.encode('jpeg', 80);
}
`;

/**
 * The HEIF thread: libheif (WebAssembly, its binary read once by this process and handed over)
 * decodes the primary image, the one a viewer shows (a HEIF may hold others, and tiles of it), to
 * RGBA in its own memory, put on a canvas from there, drawn scaled onto white and encoded as the
 * JPEG/PNG path does. Its context's own limit refuses an image of more pixels than the budget: a
 * grid's or an overlay's canvas is sized by its own fields, not by the ispe boxes the upload counted,
 * so a grid of 80 × 80 pixels declared could otherwise ask for a 20,000 × 20,000 image made of one
 * tile. libheif-js logs its failures on stdout: not here.
 */
const HEIF_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
${SCALED_JPEG}
console.log = () => {};
(async () => {
  const { file, edge, maxPixels, libheif: factory, wasm, canvasModule } = workerData;
  let initialised;
  const ready = new Promise((resolve) => { initialised = resolve; });
  const libheif = require(factory)({ wasmBinary: wasm, print() {}, printErr() {}, onRuntimeInitialized: () => initialised() });
  await ready;
  const heif = libheif.heif_context_alloc();
  // The limit is a side's length, squared; the raw function takes the context's address (embind's $$.ptr).
  libheif._heif_context_set_maximum_image_size_limit(heif.$$.ptr, Math.floor(Math.sqrt(maxPixels)));
  if (libheif.heif_context_read_from_memory(heif, file).code !== libheif.heif_error_code.heif_error_Ok) return null;
  const handle = libheif.heif_js_context_get_primary_image_handle(heif);
  if (!handle || handle.code) return null;
  const decoded = await libheif.heif_js_decode_image2(handle, libheif.heif_colorspace.heif_colorspace_RGB, libheif.heif_chroma.heif_chroma_interleaved_RGBA);
  const plane = decoded?.channels?.find((channel) => channel.id === libheif.heif_channel.heif_channel_interleaved);
  if (!plane || !(plane.width > 0 && plane.height > 0) || plane.stride % 4 !== 0) return null;
  const { width, height, stride } = plane;
  const { createCanvas, ImageData } = require(canvasModule);
  // The rows as libheif left them in its memory (stride bytes apart), put without a copy of their own.
  const rows = new ImageData(new Uint8ClampedArray(plane.data.buffer, plane.data.byteOffset, stride * height), stride / 4, height);
  const source = createCanvas(width, height);
  source.getContext('2d').putImageData(rows, 0, 0, 0, 0, width, height);
  return scaledJpeg(createCanvas, source, width, height, edge);
})().then((jpeg) => parentPort.postMessage(jpeg), () => parentPort.postMessage(null));
`;

/** libheif's WebAssembly binary, read on the first HEIF (1.4 MB) and kept: each thread compiles it from these bytes. */
let libheifWasm: Uint8Array | null = null;

/**
 * What a HEIF's thread adds to the process for each pixel: libheif's copy of the file, its decoded
 * planes and their RGBA in its WebAssembly memory (9 bytes a pixel), then the canvas they are put on
 * (4). Measured: 200 MB for 12 megapixels, 405 MB for 24.5 (an iPhone's default), and 40 MB more when
 * the thread is the first to load Skia; so the thread's limit grows with the pixels declared, from
 * THREAD_MEMORY_MB: 16 bytes a pixel and HEIF_BASE_MB over.
 */
const HEIF_BYTES_PER_PIXEL = 16;
const HEIF_BASE_MB = 128;

/**
 * A HEIF's primary image as a JPEG thumbnail, decoded in a worker thread; null when it declares too
 * many pixels, or does not decode within its limits (`limits` lowers the thread's: memory it may add,
 * pixels libheif may make).
 */
export function heifThumbnailOf(heif: Buffer, limits: { memoryMb?: number; maxPixels?: number } = {}): Promise<Buffer | null> {
  const maxPixels = limits.maxPixels ?? THUMBNAIL_MAX_PIXELS;
  const pixels = heifDeclaredPixels(heif);
  if (pixels === null || pixels > THUMBNAIL_MAX_PIXELS) return Promise.resolve(null);
  const libheif = resolved('libheif-js/libheif-wasm/libheif.js');
  libheifWasm ??= new Uint8Array(readFileSync(path.join(path.dirname(libheif), 'libheif.wasm')));
  const limit = limits.memoryMb ?? Math.max(THREAD_MEMORY_MB, HEIF_BASE_MB + Math.ceil((pixels * HEIF_BYTES_PER_PIXEL) / 1024 / 1024));
  return inThread(
    HEIF_THREAD,
    heif,
    { edge: THUMBNAIL_EDGE, maxPixels, libheif, wasm: libheifWasm, canvasModule: resolved('@napi-rs/canvas') },
    limit,
  );
}

/** The JPEG and PNG thread: Skia decodes the image, then draws it scaled onto white (a PNG's transparency shows as on paper). */
const IMAGE_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
${SCALED_JPEG}
(async () => {
  const { file, edge, canvasModule } = workerData;
  const { createCanvas, loadImage } = require(canvasModule);
  const decoded = await loadImage(Buffer.from(file.buffer, file.byteOffset, file.byteLength));
  if (!(decoded.width > 0 && decoded.height > 0)) return null;
  return scaledJpeg(createCanvas, decoded, decoded.width, decoded.height, edge);
})().then((jpeg) => parentPort.postMessage(jpeg), () => parentPort.postMessage(null));
`;

/**
 * A JPEG thumbnail of a JPEG or PNG, decoded in a worker thread; null when it declares too many pixels
 * or does not decode within its thread's limits.
 */
export function thumbnailOf(image: Buffer, memoryMb = THREAD_MEMORY_MB): Promise<Buffer | null> {
  const pixels = declaredPixels(image);
  if (pixels === null || pixels > THUMBNAIL_MAX_PIXELS) return Promise.resolve(null);
  return inThread(IMAGE_THREAD, image, { edge: THUMBNAIL_EDGE, canvasModule: resolved('@napi-rs/canvas') }, memoryMb);
}
