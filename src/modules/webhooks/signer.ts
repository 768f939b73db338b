/**
 * Delivery signatures. Every attempt carries two, over the same body:
 * - Standard Webhooks (https://www.standardwebhooks.com): `webhook-signature: v1,<base64 HMAC-SHA256
 *   of "id.timestamp.body">`, one per key, space-separated. The HMAC key is the secret's bytes: the
 *   base64 after `whsec_` for a `whsec_` key; the UTF-8 bytes of any other key (the standardwebhooks
 *   libraries' "raw" format).
 * - Eka Care's: `Eka-Webhook-Signature: t=<timestamp>,v1=<hex HMAC-SHA256 of "timestamp.body">`, the
 *   HMAC keyed with the key's text as given (its UTF-8 bytes, a `whsec_` prefix included), as Eka's
 *   webhook consumer computes it.
 * A key is either `whsec_` + base64 of 24 to 64 bytes (what the service generates) or, as Eka's
 * partners configure theirs, any other text of 8 to 200 characters without spaces or control
 * characters (a UUID, a random string). Eka's own example key, `supersecretkey`, is accepted (a
 * partner's registration and consumer move over unchanged) but answered with a warning: the key
 * guards the partner's receiver, not this service, so a guessable one is the partner's risk to take,
 * told plainly.
 */
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { ZxcvbnFactory } from '@zxcvbn-ts/core';

const PREFIX = 'whsec_';
export const MIN_KEY_BYTES = 24;
export const MAX_KEY_BYTES = 64;
export const MIN_TEXT_KEY_LENGTH = 8;
/**
 * A text key zxcvbn estimates below 10^16 guesses (about 53 bits: 16 random characters score exactly
 * that) is accepted with a warning. zxcvbn counts runs, repeats and sequences as little, so
 * `passwordpassword` is warned of too.
 */
export const WEAK_KEY_GUESSES_LOG10 = 16;
export const MAX_TEXT_KEY_LENGTH = 200;

/** Printable, without spaces: a key pasted into a config file or an environment variable stays whole. */
const TEXT_KEY = /^[^\s\p{Cc}]+$/u;

export function generateSigningKey(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

/**
 * Why the key cannot sign, in the words of the `signing_key` field's error; null when it can.
 */
export function keyProblem(key: string): string | null {
  if (key.startsWith(PREFIX)) {
    return standardKeyBytes(key)
      ? null
      : `a key starting with "${PREFIX}" must continue with the base64 of ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} random bytes`;
  }
  const length = [...key].length;
  if (length < MIN_TEXT_KEY_LENGTH || length > MAX_TEXT_KEY_LENGTH || !TEXT_KEY.test(key) || !key.isWellFormed()) {
    return (
      `must be "${PREFIX}" followed by the base64 of ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} random bytes, ` +
      `or a text of ${MIN_TEXT_KEY_LENGTH} to ${MAX_TEXT_KEY_LENGTH} characters without spaces (a UUID, a random string)`
    );
  }
  return null;
}

/**
 * Why an accepted key is easy to guess, for the answer's `warnings`; null for a generated `whsec_` key
 * and a strong text key. Whoever holds one signed delivery (a receiver's log, say) can test guesses
 * offline and then sign forged deliveries the receiver accepts.
 */
export function keyWarning(key: string): string | null {
  if (key.startsWith(PREFIX)) return null;
  const guessesLog10 = new ZxcvbnFactory().check(key).guessesLog10;
  if (guessesLog10 >= WEAK_KEY_GUESSES_LOG10) return null;
  return (
    `signing_key is guessable (about 10^${Math.floor(guessesLog10)} guesses): anyone holding one signed delivery can find it ` +
    'offline and sign deliveries your receiver accepts. Accepted; change it to a UUID or 32 random bytes (PATCH signing_key) ' +
    'in the service and your receiver'
  );
}

/** The Standard Webhooks secret of a key: a `whsec_` key's decoded bytes, another key's UTF-8 bytes; null for a key that cannot sign. */
export function standardKeyBytes(key: string): Buffer | null {
  if (!key.startsWith(PREFIX)) return keyProblem(key) === null ? Buffer.from(key, 'utf8') : null;
  const encoded = key.slice(PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return null;
  const bytes = Buffer.from(encoded, 'base64');
  return bytes.length >= MIN_KEY_BYTES && bytes.length <= MAX_KEY_BYTES ? bytes : null;
}

/** A key ready to sign with both ways. */
export interface PreparedKey {
  standard: KeyObject;
  eka: KeyObject;
}

/**
 * Made once per key: an HMAC given the raw bytes builds a key object of its own each time, several
 * times the cost of the signature itself.
 */
export function prepareKey(key: string): PreparedKey {
  const bytes = standardKeyBytes(key);
  if (!bytes) throw new Error('invalid signing key');
  return { standard: createSecretKey(bytes), eka: createSecretKey(Buffer.from(key, 'utf8')) };
}

function prepared(key: string | PreparedKey): PreparedKey {
  return typeof key === 'string' ? prepareKey(key) : key;
}

/** The `webhook-signature` header value: one `v1,` signature per key, space-separated. */
export function signatureHeader(keys: ReadonlyArray<string | PreparedKey>, id: string, timestamp: number, body: string): string {
  const signed = `${id}.${timestamp}.`;
  return keys.map((key) => `v1,${createHmac('sha256', prepared(key).standard).update(signed).update(body).digest('base64')}`).join(' ');
}

/**
 * The `Eka-Webhook-Signature` header value: `t=<timestamp>` and one `v1=` per key. The current key
 * comes first and `keys` lists it first; it is written last, because a verifier that reads the
 * header into a map (as Eka's sample consumer does) keeps the last `v1`.
 */
export function ekaSignatureHeader(keys: ReadonlyArray<string | PreparedKey>, timestamp: number, body: string): string {
  const signed = `${timestamp}.`;
  const signatures = keys.map((key) => `v1=${createHmac('sha256', prepared(key).eka).update(signed).update(body).digest('hex')}`);
  return [`t=${timestamp}`, ...signatures.reverse()].join(',');
}
