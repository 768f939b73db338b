/**
 * The schema pieces routes share: the families' error bodies (for response documentation), the
 * free-form object, and the atoms several modules' routes are built of (an id, an epoch, the
 * partner_id flag, a route's config), each written once here.
 */
import { Type } from 'typebox';
import type { RouteAuth } from './auth.ts';
import type { ErrorFamily } from './errors.ts';

export const StandardError = Type.Object({ error: Type.Object({ code: Type.String(), message: Type.String() }) });
export const SearchError = Type.Object({ error: Type.String(), code: Type.Integer(), details: Type.Union([Type.String(), Type.Null()]) });
export const CasesError = Type.Object({ error: Type.String(), code: Type.String() });
export const NotificationError = Type.Object({ message: Type.String(), error_code: Type.Integer() });
export const ClinicsError = Type.Record(Type.String(), Type.Array(Type.String()));
export const ClinicsNotFound = Type.Object({ status: Type.Literal('error'), message: Type.String() });

/**
 * Bounds of every free-form object a client sends (partner_meta, display_meta): keys at the top
 * level (maxProperties), keys at every level (x-max-keys), nesting (x-max-depth: the object itself
 * is level 1) and its size as UTF-8 JSON (x-max-bytes). Enforced by validation.ts and stated in the
 * OpenAPI document, so a value that is stored can always be read and listed.
 */
export const FREE_FORM_LIMITS = { maxProperties: 100, 'x-max-keys': 1000, 'x-max-depth': 16, 'x-max-bytes': 16_384 } as const;

export const FREE_FORM_DESCRIPTION =
  `At most ${FREE_FORM_LIMITS.maxProperties} keys at the top level and ${FREE_FORM_LIMITS['x-max-keys']} in all, ` +
  `nested at most ${FREE_FORM_LIMITS['x-max-depth']} levels deep (the object itself is level 1), ` +
  `and at most ${FREE_FORM_LIMITS['x-max-bytes']} bytes as UTF-8 JSON.`;

/** A free-form object with FREE_FORM_LIMITS; `description` comes before the limits' wording. */
export function freeFormObject(description?: string) {
  return Type.Record(Type.String(), Type.Unknown(), {
    ...FREE_FORM_LIMITS,
    description: description ? `${description}. ${FREE_FORM_DESCRIPTION}` : FREE_FORM_DESCRIPTION,
  });
}

/** The longest id any schema accepts, in characters (code points). */
export const MAX_ID_LENGTH = 200;

/** An id in a path, query or body: 1 to MAX_ID_LENGTH characters. */
export const Id = Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH });

/** A time as whole epoch seconds, up to the end of the year 9999. */
export const Epoch = Type.Integer({ minimum: 0, maximum: 253_402_300_799, description: 'Epoch seconds' });

/** Whether the query's `partner_id=1` says the path's id is the partner's, not the service's. */
export const byPartner = (query: { partner_id?: string }): boolean => query.partner_id === '1';

/** What a route's `config` says: its error family, its auth and whether it honours Idempotency-Key. */
export interface RouteConfig {
  family: ErrorFamily;
  auth: RouteAuth;
  idempotent?: boolean;
}
