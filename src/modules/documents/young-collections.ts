/**
 * Young-generation collections paced by the upload bytes this process receives.
 *
 * An upload allocates few JavaScript objects per byte, so V8's young generation fills slowly while
 * the buffers behind them pile up: the socket's 64 KiB pieces and their ciphertext, which V8 counts
 * only as external memory and frees when their small wrappers are collected. Left alone, that waits
 * for external memory to grow by 64 MB and a full collection to mark the whole heap; under 100 uploads
 * of 5 MB at once the process held over 150 MB of such garbage at its peak. A scavenge after every
 * RECEIVED_PER_COLLECTION bytes frees the pieces already used, at a fraction of a millisecond each
 * (bench/RESULTS.md, documents).
 */
import { collectGarbage } from '../../garbage-collection.ts';

const RECEIVED_PER_COLLECTION = 8 * 1024 * 1024;

let received = 0;

/** `source` as it is, counting its bytes towards the next young collection. */
export async function* youngCollected(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  for await (const piece of source) {
    received += piece.length;
    if (received >= RECEIVED_PER_COLLECTION) {
      received = 0;
      collectGarbage({ type: 'minor', execution: 'sync' });
    }
    yield piece;
  }
}
