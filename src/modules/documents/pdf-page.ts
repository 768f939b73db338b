/**
 * A worker thread's task (thumbnails.ts starts one per PDF, with a time and heap limit): renders the
 * first page of the PDF in workerData.pdf to a JPEG of at most workerData.edge pixels a side with
 * pdf.js and @napi-rs/canvas, and posts it, or posts null when the PDF does not render. In a thread
 * of its own because pdf.js parses and draws on the thread that calls it: a hostile PDF stalls only
 * this thread, which is ended when its time is up.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { createCanvas } from '@napi-rs/canvas';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';

const { pdf, edge, maxImagePixels } = workerData as { pdf: Uint8Array; edge: number; maxImagePixels: number };
const fonts = `${path.join(path.dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'standard_fonts')}/`;

async function firstPage(): Promise<Buffer | null> {
  const document = await getDocument({
    data: pdf,
    disableFontFace: true,
    standardFontDataUrl: fonts,
    // An embedded image of more pixels is left out, not decoded (a decompression bomb in a PDF).
    maxImageSize: maxImagePixels,
    verbosity: 0,
  }).promise;
  const page = await document.getPage(1);
  const whole = page.getViewport({ scale: 1 });
  if (!(whole.width > 0 && whole.height > 0)) return null;
  const viewport = page.getViewport({ scale: edge / Math.max(whole.width, whole.height) });
  const canvas = createCanvas(Math.max(1, Math.round(viewport.width)), Math.max(1, Math.round(viewport.height)));
  const context = canvas.getContext('2d');
  context.fillStyle = '#fff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  await page.render({ canvas: canvas as never, canvasContext: context as never, viewport }).promise;
  return canvas.encode('jpeg', 80);
}

parentPort!.postMessage(await firstPage().catch(() => null));
