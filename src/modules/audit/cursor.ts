/**
 * Page tokens of the access log (`next_token`, sent back as `offset`): the keyset position of the last
 * entry of a page (its business and chain position), sealed for the walk (the caller and the filters),
 * so a token opens only for the walk it was made for (anything else answers 400).
 */
import { SealedTokens } from '../../security/sealed-tokens.ts';

export interface Position {
  businessId: string;
  seq: number;
}

export class PositionCodec {
  readonly #tokens: SealedTokens;

  constructor(masterKey: Buffer) {
    this.#tokens = new SealedTokens(masterKey, 'audit-cursor');
  }

  seal(position: Position, walk: string): string {
    return this.#tokens.seal([position.businessId, position.seq], walk);
  }

  /** The position, or null when the token is malformed, altered or made for another walk. */
  open(token: string, walk: string): Position | null {
    const values = this.#tokens.open(token, walk);
    if (values === null) return null;
    const [businessId, seq] = values;
    if (typeof businessId !== 'string' || !Number.isSafeInteger(seq)) return null;
    return { businessId, seq: seq as number };
  }
}
