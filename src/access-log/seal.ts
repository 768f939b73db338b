/**
 * Seals of a chain's ends: an HMAC, under a key derived from the master key, over a head's or a
 * pruning anchor's fields. Entry hashes need no key (anyone can recompute them), so without a seal
 * whoever can write the database could move a head back over deleted newest entries, or write an
 * anchor past deleted oldest ones; with it, only a holder of CPS_MASTER_KEY can.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export interface ChainEnd {
  business_id: string;
  seq: number;
  hash: string;
}

export interface SealedAnchor extends ChainEnd {
  /** When the last pruned entry was recorded: an anchor for entries not yet due for pruning is refused. */
  through_at: number;
}

export class ChainSeal {
  readonly #key: Buffer;

  constructor(masterKey: Buffer) {
    this.#key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'audit-chain-seal', 32));
  }

  head(end: ChainEnd): string {
    return this.#mac(['head', end.business_id, Number(end.seq), end.hash]);
  }

  anchor(end: SealedAnchor): string {
    return this.#mac(['anchor', end.business_id, Number(end.seq), end.hash, Number(end.through_at)]);
  }

  static matches(mac: string | null, expected: string): boolean {
    if (mac === null || mac.length !== expected.length) return false;
    return timingSafeEqual(Buffer.from(mac), Buffer.from(expected));
  }

  #mac(fields: unknown[]): string {
    return createHmac('sha256', this.#key).update(JSON.stringify(fields)).digest('base64url');
  }
}
