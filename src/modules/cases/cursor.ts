/**
 * Page tokens (`next_token`, sent back as `offset`): the keyset position of the last case of a page
 * and the `u_at__gt` filter of the walk, sealed for the business and the patient, so a token opens only
 * for the caller and patient it was made for (anything else answers 400).
 */
import { SealedTokens } from '../../security/sealed-tokens.ts';

export interface Cursor {
  /** updated_at (ms) and id of the last case handed out. */
  updatedAt: number;
  id: string;
  /** The walk's u_at__gt (epoch seconds), null when it has none. */
  updatedAfter: number | null;
}

export class CursorCodec {
  readonly #tokens: SealedTokens;

  constructor(masterKey: Buffer) {
    this.#tokens = new SealedTokens(masterKey, 'cases-cursor');
  }

  seal(cursor: Cursor, businessId: string, patientRef: string): string {
    return this.#tokens.seal([cursor.updatedAt, cursor.id, cursor.updatedAfter], walkOf(businessId, patientRef));
  }

  /** The cursor, or null when the token is malformed, altered or made for another business or patient. */
  open(token: string, businessId: string, patientRef: string): Cursor | null {
    const values = this.#tokens.open(token, walkOf(businessId, patientRef));
    if (values === null) return null;
    const [updatedAt, id, updatedAfter] = values;
    if (!Number.isSafeInteger(updatedAt) || typeof id !== 'string') return null;
    if (updatedAfter !== null && !Number.isSafeInteger(updatedAfter)) return null;
    return { updatedAt: updatedAt as number, id, updatedAfter: updatedAfter as number | null };
  }
}

function walkOf(businessId: string, patientRef: string): string {
  return JSON.stringify(['cases-cursor', 1, businessId, patientRef]);
}
