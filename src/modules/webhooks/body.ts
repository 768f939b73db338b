/**
 * The body a delivery sends: the stored event written the way Python's
 * `json.dumps(body, separators=(',', ':'))` writes it. Eka's webhook consumer parses the body, writes
 * it again that way and checks the signature over the result, so the body must come back byte for
 * byte: compact, every character outside printable ASCII escaped as `\uXXXX` (lower-case hex; a
 * character beyond U+FFFF as its surrogate pair), keys in the order stored, numbers as Python prints
 * them (integers as digits, `1e-05` where JavaScript writes `0.00001`). Any JSON parser reads the same
 * value.
 *
 * The stored text is JSON.stringify's, which differs from Python's only there: it leaves DEL and
 * non-ASCII characters as they are (they occur only inside strings) and writes numbers below 1e-4
 * otherwise. So the text is rewritten in place, without parsing (several times faster).
 */

const NON_ASCII = /[\x7f-\uffff]/;
const NON_ASCII_ALL = /[\x7f-\uffff]/g;
/** A number JSON.stringify writes where Python writes another exponent: 0.00001 to 0.0000099..., or 1e-7 to 9.9...e-7. */
const SMALL_NUMBER = /0\.0000|e-\d(?!\d)/;
/** Strings (left as they are) and numbers, the tokens of JSON text that hold digits. */
const TOKENS = /"(?:[^"\\]+|\\.)*"|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?/g;

/** The bytes every attempt of an event sends, from its stored text. */
export function deliveryBody(stored: string): string {
  let body = stored;
  if (SMALL_NUMBER.test(body)) body = body.replace(TOKENS, (token) => (token.startsWith('"') ? token : pythonNumber(Number(token))));
  // Per UTF-16 code unit, as Python escapes: an astral character is already its two surrogates here.
  if (NON_ASCII.test(body)) body = body.replace(NON_ASCII_ALL, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return body;
}

/**
 * Python's repr of the number, which is the text it reads back as the same number: JavaScript and
 * Python both write the shortest digits that read back exactly, and differ only in where exponents
 * start. An integer stays as JavaScript writes it (digits, which Python reads as an int, or from 1e21
 * an exponent as Python writes it); below 1e-4 Python writes `d.ddde-XX`.
 */
function pythonNumber(value: number): string {
  if (Number.isInteger(value) || Math.abs(value) >= 1e-4) return String(value);
  const [mantissa, exponent] = value.toExponential().split('e') as [string, string];
  return `${mantissa}e-${exponent.slice(1).padStart(2, '0')}`;
}
