/**
 * Page tokens of the access log (`next_token`, sent back as `offset`): the keyset position of the last
 * entry of a page (its business and chain position), sealed with AES-256-GCM under a key derived from
 * the master key, as the cases' tokens are. The caller and the filters are the associated data, so a
 * token opens only for the walk it was made for; anything else fails to open (400).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export interface Position {
  businessId: string;
  seq: number;
}

const VERSION = 1;
const NONCE = 12;
const TAG = 16;

export class PositionCodec {
  readonly #key: Buffer;

  constructor(masterKey: Buffer) {
    this.#key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'audit-cursor', 32));
  }

  seal(position: Position, walk: string): string {
    const nonce = randomBytes(NONCE);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce);
    cipher.setAAD(Buffer.from(walk, 'utf8'));
    const sealed = Buffer.concat([cipher.update(JSON.stringify([position.businessId, position.seq]), 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), nonce, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /** The position, or null when the token is malformed, altered or made for another walk. */
  open(token: string, walk: string): Position | null {
    if (!/^[A-Za-z0-9_-]+$/.test(token)) return null;
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < 1 + NONCE + TAG + 2 || raw[0] !== VERSION) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(1, 1 + NONCE));
      decipher.setAAD(Buffer.from(walk, 'utf8'));
      decipher.setAuthTag(raw.subarray(raw.length - TAG));
      const plaintext = Buffer.concat([decipher.update(raw.subarray(1 + NONCE, raw.length - TAG)), decipher.final()]).toString('utf8');
      const [businessId, seq] = JSON.parse(plaintext) as unknown[];
      if (typeof businessId !== 'string' || !Number.isSafeInteger(seq)) return null;
      return { businessId, seq: seq as number };
    } catch {
      return null;
    }
  }
}
