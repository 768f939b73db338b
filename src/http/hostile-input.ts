/**
 * Checks every request part for what the database or the serializer cannot take, whatever its
 * schema says: strings and keys with U+0000 (PostgreSQL text refuses it) or an unpaired surrogate
 * (not encodable as UTF-8), and the bounds of free-form
 * objects (`x-max-depth`, `x-max-bytes` on the schema). Every walk is iterative: a value nested
 * thousands deep must be refused, not overflow the stack (JSON.stringify does, at a depth that
 * depends on the caller's stack, which is why such a value could be stored and then never read).
 */

/** An Ajv-shaped error, so that validationProblem renders it like any other field problem. */
export interface InputError {
  instancePath: string;
  keyword: string;
  message: string;
  params: Record<string, unknown>;
}

const NUL = '\u0000';
export const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';
const NUL_KEY_MESSAGE = 'has a key containing the NUL character (U+0000)';
// A lone surrogate cannot be encoded as UTF-8: the database would store U+FFFD instead, so an id
// sent with one could never be addressed again.
export const SURROGATE_MESSAGE = 'must be well-formed Unicode (no unpaired surrogate)';
const SURROGATE_KEY_MESSAGE = 'has a key that is not well-formed Unicode (an unpaired surrogate)';

/** The problem with a string the database cannot store as sent, or null. */
function stringProblem(value: string, asKey: boolean): string | null {
  if (value.includes(NUL)) return asKey ? NUL_KEY_MESSAGE : NUL_MESSAGE;
  if (!value.isWellFormed()) return asKey ? SURROGATE_KEY_MESSAGE : SURROGATE_MESSAGE;
  return null;
}

/** JSON pointer escaping; a NUL in a key is written as \u0000 so the field name stays printable. */
function pointerSegment(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1').replaceAll(NUL, '\\u0000');
}

/**
 * The most string errors reported for one request part: a body of thousands of NULs nested one in
 * another gave one error each, every one naming a path as long as its depth (a 220 kB body held the
 * event loop for two minutes and answered 400 MB; deeper, past V8's longest string, 500).
 */
export const MAX_STRING_ERRORS = 100;

/**
 * The string values or keys in `data` with a NUL or an unpaired surrogate, as errors at `basePath`
 * and below, the first MAX_STRING_ERRORS of them.
 */
export function unstorableStringErrors(data: unknown, basePath = ''): InputError[] {
  const errors: InputError[] = [];
  const stack: Array<[unknown, string]> = [[data, basePath]];
  while (stack.length > 0 && errors.length < MAX_STRING_ERRORS) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      const problem = stringProblem(value, false);
      if (problem) errors.push({ instancePath: path, keyword: 'x-storable-string', message: problem, params: {} });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}/${i}`]);
    } else if (value !== null && typeof value === 'object') {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        const problem = stringProblem(key, true);
        if (problem) errors.push({ instancePath: path, keyword: 'x-storable-string', message: problem, params: {} });
        stack.push([(value as Record<string, unknown>)[key], `${path}/${pointerSegment(key)}`]);
      }
    }
  }
  return errors;
}

/**
 * The nesting depth of `data` (a scalar is 0, `{}` and `[]` are 1, `{"a": {}}` is 2), counted no
 * further than `limit + 1`, so a hostile value costs no more than a legal one.
 */
export function depthOf(data: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[data, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return deepest;
}

/** The UTF-8 size of `data`'s JSON encoding; only called on values whose depth is bounded. */
export function encodedBytes(data: unknown): number {
  return Buffer.byteLength(JSON.stringify(data) ?? '', 'utf8');
}

/** The number of keys of `data` at every level, counted no further than `limit + 1`. */
export function keyCountOf(data: unknown, limit: number): number {
  let count = 0;
  const stack: unknown[] = [data];
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || typeof value !== 'object') continue;
    const children = Array.isArray(value) ? value : Object.values(value);
    if (!Array.isArray(value)) count += children.length;
    if (count > limit) return count;
    for (const child of children) if (child !== null && typeof child === 'object') stack.push(child);
  }
  return count;
}
