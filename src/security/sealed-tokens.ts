/**
 * Opaque page tokens: a short list of values sealed with AES-256-GCM under a key derived from the
 * master key for one purpose. The associated data names who and what the token was made for, so a
 * token opens only there; anything altered, forged or replayed elsewhere fails to open. Sealing rather
 * than signing also keeps the format opaque, so clients cannot come to depend on it.
 */
import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, type KeyObject, randomBytes } from 'node:crypto';

const VERSION = 1;
const NONCE = 12;
const TAG = 16;

export class SealedTokens {
  readonly #key: KeyObject;

  /** `purpose` separates the keys (and tokens) of different uses of the same master key. */
  constructor(masterKey: Buffer, purpose: string) {
    this.#key = createSecretKey(Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), purpose, 32)));
  }

  seal(values: readonly unknown[], associatedData: string): string {
    const nonce = randomBytes(NONCE);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce);
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const sealed = Buffer.concat([cipher.update(JSON.stringify(values), 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), nonce, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /** The values, or null when the token is malformed, altered or made for other associated data. */
  open(token: string, associatedData: string): unknown[] | null {
    if (!/^[A-Za-z0-9_-]+$/.test(token)) return null;
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < 1 + NONCE + TAG + 2 || raw[0] !== VERSION) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(1, 1 + NONCE));
      decipher.setAAD(Buffer.from(associatedData, 'utf8'));
      decipher.setAuthTag(raw.subarray(raw.length - TAG));
      const plaintext = Buffer.concat([decipher.update(raw.subarray(1 + NONCE, raw.length - TAG)), decipher.final()]);
      const values: unknown = JSON.parse(plaintext.toString('utf8'));
      return Array.isArray(values) ? values : null;
    } catch {
      return null;
    }
  }
}
