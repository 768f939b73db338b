import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

let lastTime = 0;
let lastRandom = 0n;

/**
 * Opaque identifiers: a prefix, then 10 characters of time and 16 of randomness (80 bits), so ids
 * cannot be guessed and sort by creation. Within one millisecond the random part counts up (as in
 * monotonic ULIDs), so ids made by one process never sort out of creation order.
 */
export function newId(prefix: string): string {
  const now = Date.now();
  if (now <= lastTime) {
    lastRandom = (lastRandom + 1n) & ((1n << 80n) - 1n);
  } else {
    lastTime = now;
    lastRandom = BigInt(`0x${randomBytes(10).toString('hex')}`);
  }
  let time = lastTime;
  let timePart = '';
  for (let i = 0; i < 10; i++) {
    timePart = ALPHABET[time % 32] + timePart;
    time = Math.floor(time / 32);
  }
  let random = lastRandom;
  let randomPart = '';
  for (let i = 0; i < 16; i++) {
    randomPart = ALPHABET[Number(random & 31n)] + randomPart;
    random >>= 5n;
  }
  return `${prefix}_${timePart}${randomPart}`;
}
