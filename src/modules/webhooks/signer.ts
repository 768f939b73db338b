/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a key is `whsec_` + base64 of the
 * secret bytes; the signature is `v1,` + base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`, and
 * several signatures (during a key rotation) are separated by spaces.
 */
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

const PREFIX = 'whsec_';
export const MIN_KEY_BYTES = 24;
export const MAX_KEY_BYTES = 64;

export function generateSigningKey(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

/** The secret bytes of a `whsec_` key, or null when the key is not one of 24 to 64 bytes. */
export function keyBytes(key: string): Buffer | null {
  if (!key.startsWith(PREFIX)) return null;
  const encoded = key.slice(PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return null;
  const bytes = Buffer.from(encoded, 'base64');
  return bytes.length >= MIN_KEY_BYTES && bytes.length <= MAX_KEY_BYTES ? bytes : null;
}

/**
 * A key ready to sign with. Made once per key: an HMAC given the raw bytes builds a key object of
 * its own each time, several times the cost of the signature itself.
 */
export function signingKey(key: string): KeyObject {
  const bytes = keyBytes(key);
  if (!bytes) throw new Error('invalid signing key');
  return createSecretKey(bytes);
}

/** The `webhook-signature` header value: one `v1,` signature per key, space-separated. */
export function signatureHeader(keys: ReadonlyArray<string | KeyObject>, id: string, timestamp: number, body: string): string {
  const signed = `${id}.${timestamp}.`;
  return keys
    .map(
      (key) =>
        `v1,${createHmac('sha256', typeof key === 'string' ? signingKey(key) : key)
          .update(signed)
          .update(body)
          .digest('base64')}`,
    )
    .join(' ');
}
