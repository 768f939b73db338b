/**
 * Page tokens (`next_token`, sent back as `offset`): the keyset position of the last case of a page
 * and the `u_at__gt` filter of the walk, sealed with AES-256-GCM under a key derived from the master
 * key. The business and the patient are the associated data, so a token opens only for the caller
 * and patient it was made for; anything altered, forged or replayed elsewhere fails to open (400).
 * Sealing rather than signing also keeps the format opaque, so clients cannot come to depend on it.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export interface Cursor {
  /** updated_at (ms) and id of the last case handed out. */
  updatedAt: number;
  id: string;
  /** The walk's u_at__gt (epoch seconds), null when it has none. */
  updatedAfter: number | null;
}

const VERSION = 1;
const NONCE = 12;
const TAG = 16;

export class CursorCodec {
  readonly #key: Buffer;

  constructor(masterKey: Buffer) {
    this.#key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'cases-cursor', 32));
  }

  seal(cursor: Cursor, businessId: string, patientRef: string): string {
    const nonce = randomBytes(NONCE);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce);
    cipher.setAAD(associatedData(businessId, patientRef));
    const plaintext = JSON.stringify([cursor.updatedAt, cursor.id, cursor.updatedAfter]);
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), nonce, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /** The cursor, or null when the token is malformed, altered or made for another business or patient. */
  open(token: string, businessId: string, patientRef: string): Cursor | null {
    if (!/^[A-Za-z0-9_-]+$/.test(token)) return null;
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < 1 + NONCE + TAG + 2 || raw[0] !== VERSION) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(1, 1 + NONCE));
      decipher.setAAD(associatedData(businessId, patientRef));
      decipher.setAuthTag(raw.subarray(raw.length - TAG));
      const plaintext = Buffer.concat([decipher.update(raw.subarray(1 + NONCE, raw.length - TAG)), decipher.final()]).toString('utf8');
      const [updatedAt, id, updatedAfter] = JSON.parse(plaintext) as unknown[];
      if (!Number.isSafeInteger(updatedAt) || typeof id !== 'string') return null;
      if (updatedAfter !== null && !Number.isSafeInteger(updatedAfter)) return null;
      return { updatedAt: updatedAt as number, id, updatedAfter: updatedAfter as number | null };
    } catch {
      return null;
    }
  }
}

function associatedData(businessId: string, patientRef: string): Buffer {
  return Buffer.from(JSON.stringify(['cases-cursor', VERSION, businessId, patientRef]), 'utf8');
}
