/**
 * Thumbnails of documents' JPEG and PNG files: a JPEG of at most THUMBNAIL_EDGE pixels a side, made
 * by the documents.thumbnail job once a document's files are stored (never on a request's path),
 * kept by the file store as files are and served by a short-lived link as files are. Decoding costs
 * 4 bytes a pixel, so an image is decoded only when the dimensions its header declares are within
 * THUMBNAIL_MAX_PIXELS (a decompression bomb, or a merely huge scan, gets no thumbnail; the upload's
 * own limit, CPS_DOCUMENTS_MAX_MEGAPIXELS, is about what is stored). PDFs get none: rendering a page
 * takes pdf.js, a large dependency of its own beside the canvas (see docs/2-production.md).
 */
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { imageSize } from 'image-size';

export const THUMBNAIL_EDGE = 256;
/** 25 megapixels: 100 MB of pixels while the job decodes one. */
export const THUMBNAIL_MAX_PIXELS = 25_000_000;
export const THUMBNAIL_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png']);

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
