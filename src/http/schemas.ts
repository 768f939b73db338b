/** Error body schemas of the families, for response documentation. */
import { Type } from 'typebox';

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
