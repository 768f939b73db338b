/**
 * The pure modules `npm run mutate` (bench/mutate.ts) measures: each module's files, the pure test files run
 * against its mutants (no database, no HTTP), its goal, and the surviving mutants that are equivalent, with why.
 * An equivalent is matched by file, mutator, the mutated text and its replacement: when the code under it
 * changes, the survivor shows again as not yet killed and is judged anew.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface Equivalent {
  file: string;
  mutator: string;
  original: string;
  replacement: string;
  /** Part of the mutated line, where the same mutation elsewhere in the file is not equivalent. */
  line?: string;
  why: string;
}

export interface MutationModule {
  name: string;
  files: string[];
  /** What Stryker mutates, where only part of a file is the module (`file:from-to`, see `linesOf`); the files when absent. */
  mutate?: string[];
  tests: string[];
  /** Percent of mutants killed: 90 for the security-relevant modules, 80 for the rest. */
  goal: 80 | 90;
  equivalent?: Equivalent[];
  /** What the report should say beside the survivors (a test left out of the run, and why). */
  note?: string;
}

/**
 * `file:from-to`: the lines of `file` from the one holding `first` up to (not including) the next one
 * holding `next`. Found by text when the run starts, so edits elsewhere in the file do not move the part;
 * an anchor no longer found stops the run.
 */
export function linesOf(file: string, first: string, next: string): string {
  const lines = readFileSync(path.join(import.meta.dirname, '..', file), 'utf8').split('\n');
  const from = lines.findIndex((line) => line.includes(first));
  const to = from < 0 ? -1 : lines.findIndex((line, i) => i > from && line.includes(next));
  if (from < 0 || to < 0) throw new Error(`${file}: no lines from ${JSON.stringify(first)} to ${JSON.stringify(next)}`);
  return `${file}:${from + 1}-${to}`;
}

const ENGINE = 'src/modules/search/index/engine.ts';
const RULES = 'src/modules/schedules/rules.ts';
const NAME_KEYS = 'src/modules/patients/name-keys.ts';
const NO_DIGITS =
  'a mobile number with no digit is then keyed "" instead of null: keysOf adds no key for either, and the stored mobile column is read back only by keysOf; a search reaches mobileKey with three digits or more';
const SOUNDED =
  "every word has a sound, so no indexed word has an empty skeleton: a word's first letter always gives one (a vowel, a leading h, w, y or any consonant)";
const EQUAL_DIGITS =
  'a query that reaches this line is digits once spaces, brackets, + and - are taken out, and mobileKey takes out every character that is no digit: the query and its digits give the same key, whichever is passed';

export const MODULES: MutationModule[] = [
  {
    name: 'outbound-addresses',
    files: ['src/security/outbound.ts'],
    tests: ['test/security/outbound.test.ts'],
    goal: 90,
    equivalent: [
      {
        file: 'src/security/outbound.ts',
        mutator: 'ConditionalExpression',
        original: "case 'rfc6145': \u2026",
        replacement: "case 'rfc6145':",
        why: 'without its own return, an rfc6145 address falls through to the NAT64 case, which reads the same embedded IPv4 address from the last two words: word 2 of ::ffff:0:a.b.c.d is 0',
      },
      {
        file: 'src/security/outbound.ts',
        mutator: 'ConditionalExpression',
        original: 'classifyAddress(network.toString()) === addressClass',
        replacement: 'true',
        why: 'a range of /8 or narrower that holds a loopback or "this network" address lies inside 127.0.0.0/8 or 0.0.0.0/8, so its network address has the same class',
      },
      {
        file: 'src/security/outbound.ts',
        mutator: 'StringLiteral',
        original: "'http:'",
        replacement: '""',
        why: "the scheme is only ever compared with 'https:': any other text is refused where plain http is",
      },
      {
        file: 'src/security/outbound.ts',
        mutator: 'ConditionalExpression',
        original: 'literal === null',
        replacement: 'true',
        line: 'const listedName',
        why: 'a literal is checked before DNS with the listed-name flag off; the flag then only loosens the check of the answers, and a literal that passed answers with itself, which passes again',
      },
      {
        file: 'src/security/outbound.ts',
        mutator: 'Regex',
        original: '/^\\[(.*)\\]$/',
        replacement: '/^\\[(.)\\]$/',
        line: 'for (const candidate of',
        why: "classifyLiteral's first candidate: classifyAddress strips a host's brackets itself, and the second candidate (canonicalHost) strips them too, so a candidate left in its brackets is classified the same",
      },
      {
        file: 'src/security/outbound.ts',
        mutator: 'StringLiteral',
        original: "'$1'",
        replacement: '""',
        line: 'for (const candidate of',
        why: "classifyLiteral's first candidate: an empty candidate is no address, and the second candidate (canonicalHost, which strips the same brackets) classifies the host as the first would have",
      },
      {
        file: 'src/security/outbound.ts',
        mutator: 'Regex',
        original: '/%.*$/',
        replacement: '/%.*/',
        line: 'canonicalHost(text).replace',
        why: 'in covers(): the two differ only on a zone followed by a line break, and ipaddr.js reads no address with a line break in it either way (the URL parser, which drops line breaks, is not on this path)',
      },
      {
        file: 'src/security/outbound.ts',
        mutator: 'BooleanLiteral',
        original: 'true',
        replacement: 'false',
        line: 'verbatim: true',
        why: "systemResolver's verbatim: false orders IPv4 answers first; every answer is checked either way, only which allowed address is dialled first changes",
      },
    ],
  },
  {
    name: 'webhook-signing',
    files: ['src/modules/webhooks/signer.ts'],
    tests: ['test/modules/webhooks/signer.test.ts'],
    goal: 90,
    note: '4 of the 107 mutants timed out (counted as detected, as Stryker counts them; a load average of 8 to 10 on 2 cores): most mutants that time out make keyWarning run zxcvbn on more keys, so some are slower runs rather than loops (at a load average of 14, 28 timed out). Killed by a failing test alone: 101 of 107 (94.4 %).',
    equivalent: [
      {
        file: 'src/modules/webhooks/signer.ts',
        mutator: 'StringLiteral',
        original: "'utf8'",
        replacement: '""',
        why: 'Buffer.from reads a string with an empty encoding name as UTF-8, its default: the same bytes',
      },
    ],
  },
  {
    name: 'audit-hashing',
    files: ['src/access-log/entry.ts', 'src/access-log/seal.ts'],
    tests: ['test/access-log/hashing.test.ts'],
    goal: 90,
    equivalent: [
      {
        file: 'src/access-log/entry.ts',
        mutator: 'ConditionalExpression',
        original: 'clean !== value',
        replacement: 'true',
        why: 'copies the record even when no string changed: the values written and hashed are the same, only a new object holds them',
      },
    ],
  },
  {
    name: 'token-checks',
    files: ['src/auth/tokens.ts'],
    tests: ['test/auth/tokens.test.ts'],
    note: 'Measured with both rounds of tests (the second: foreign issuers that are not text, numbers as client_id and sub, the cache at its expiry and with two tokens): what survives is the equivalents below and the cache’s bound. The bound (10,000 entries, line 87) is checked by `test/auth/token-cache.test.ts`, which verifies 10,001 tokens (13 s on the bench machine) and is left out of the run for that cost: its mutants show below as not killed.',
    goal: 90,
    equivalent: [
      {
        file: 'src/auth/tokens.ts',
        mutator: 'MethodExpression',
        original: 'token.slice(-KEY_CHARS)',
        replacement: 'token',
        why: "the cache key only finds the entry, which holds the whole token, and only an exact match is a hit: the whole token as its key answers the same (at the cost the key's comment gives)",
      },
      {
        file: 'src/auth/tokens.ts',
        mutator: 'UnaryOperator',
        original: '-KEY_CHARS',
        replacement: '+KEY_CHARS',
        why: 'the text after the first 32 characters is as unique to a token as its last 32, and a hit still needs the whole token to match',
      },
      {
        file: 'src/auth/tokens.ts',
        mutator: 'ConditionalExpression',
        original: 'cached !== undefined',
        replacement: 'false',
        why: "verifying a cached token's signature again gives the same claims; the cache saves only the time",
      },
      {
        file: 'src/auth/tokens.ts',
        mutator: 'ConditionalExpression',
        original: '!entry || entry.alg !== header.alg',
        replacement: 'false',
        why: "with no key for the kid, or the other algorithm's key, jose refuses the token itself: each accepted algorithm takes one key type (EdDSA an Ed25519 key, ES256 a P-256 key)",
      },
      {
        file: 'src/auth/tokens.ts',
        mutator: 'LogicalOperator',
        original: '!entry || entry.alg !== header.alg',
        replacement: '!entry && entry.alg !== header.alg',
        why: "an unknown kid then throws reading alg of undefined, which refuses the token as the Error did; a known kid's other algorithm is refused by jose as above",
      },
      {
        file: 'src/auth/tokens.ts',
        mutator: 'ConditionalExpression',
        original: 'entry.alg !== header.alg',
        replacement: 'false',
        why: "jose refuses a key of the other algorithm's type itself (EdDSA takes Ed25519 keys only, ES256 P-256 keys only)",
      },
      {
        file: 'src/auth/tokens.ts',
        mutator: 'StringLiteral',
        original: "'unknown signing key'",
        replacement: '""',
        why: 'the error is caught and the token refused; its message is never shown or logged',
      },
      {
        file: 'src/auth/tokens.ts',
        mutator: 'ConditionalExpression',
        original: "typeof scope !== 'string'",
        replacement: 'false',
        why: 'a scope that is not text throws at scope.split, which the catch turns into the same refusal',
      },
      {
        file: 'src/auth/tokens.ts',
        mutator: 'CallExpression',
        original: 'this.#verified.delete(key);',
        replacement: ';',
        why: 'either delete: before the set in verify, the key is never there (a cached token returned early, an expired one was deleted by verifyCached, and another token ending alike is a forgery refused above); in verifyCached, an expired entry left in place is never answered (the expiry is checked at every look-up) and only holds memory until evicted',
      },
    ],
  },
  {
    name: 'page-tokens',
    files: ['src/security/sealed-tokens.ts', 'src/modules/audit/cursor.ts', 'src/modules/cases/cursor.ts'],
    tests: ['test/security/sealed-tokens.test.ts'],
    goal: 90,
    equivalent: [
      {
        file: 'src/security/sealed-tokens.ts',
        mutator: 'StringLiteral',
        original: "'utf8'",
        replacement: '""',
        why: 'Buffer.from and the cipher read a string with an empty encoding name as UTF-8, their default: the same bytes',
      },
      {
        file: 'src/security/sealed-tokens.ts',
        mutator: 'ConditionalExpression',
        original: 'raw.length < 1 + NONCE + TAG + 2',
        replacement: 'false',
        why: 'each weakens the length check only: a token too short for a version, nonce, tag and two bytes of JSON fails to decrypt, or decrypts to no list, and opens to null all the same; the check spares the attempt',
      },
      {
        file: 'src/security/sealed-tokens.ts',
        mutator: 'ArithmeticOperator',
        original: '1 + NONCE + TAG + 2',
        replacement: '1 + NONCE + TAG - 2',
        why: 'each weakens the length check only: a token too short for a version, nonce, tag and two bytes of JSON fails to decrypt, or decrypts to no list, and opens to null all the same; the check spares the attempt',
      },
      {
        file: 'src/security/sealed-tokens.ts',
        mutator: 'ArithmeticOperator',
        original: '1 + NONCE + TAG',
        replacement: '1 + NONCE - TAG',
        why: 'each weakens the length check only: a token too short for a version, nonce, tag and two bytes of JSON fails to decrypt, or decrypts to no list, and opens to null all the same; the check spares the attempt',
      },
      {
        file: 'src/security/sealed-tokens.ts',
        mutator: 'ArithmeticOperator',
        original: '1 + NONCE',
        replacement: '1 - NONCE',
        why: 'each weakens the length check only: a token too short for a version, nonce, tag and two bytes of JSON fails to decrypt, or decrypts to no list, and opens to null all the same; the check spares the attempt',
      },
    ],
  },
  {
    name: 'name-folding',
    files: ['src/modules/patients/names.ts'],
    tests: ['test/modules/patients/names.test.ts'],
    goal: 80,
  },
  {
    name: 'search-normalisation',
    files: ['src/modules/search/index/normalize.ts'],
    tests: ['test/modules/search/text.test.ts'],
    goal: 80,
  },
  {
    name: 'query-parsing',
    files: ['src/modules/search/index/query.ts'],
    tests: ['test/modules/search/text.test.ts'],
    goal: 80,
  },
  {
    name: 'highlighting',
    files: ['src/modules/search/index/highlight.ts'],
    tests: ['test/modules/search/text.test.ts'],
    goal: 80,
  },
  {
    name: 'error-rendering',
    files: ['src/http/errors.ts'],
    tests: ['test/http/error-bodies.test.ts'],
    goal: 80,
  },
  {
    name: 'slots',
    files: ['src/modules/schedules/slots.ts'],
    tests: ['test/modules/schedules/slots.test.ts'],
    goal: 80,
  },
  {
    name: 'schedule-rules',
    files: ['src/modules/schedules/rules.ts'],
    tests: ['test/modules/schedules/rules.test.ts'],
    goal: 80,
    note: 'Measured with the cases of rules.test.ts written against the first run’s survivors (sessions side by side listed the later first, one date or time real and the other not, a refused field beside other problems, a crowded date with a bad zone): they killed the overlap, date, time and skip survivors.',
    equivalent: [
      {
        file: RULES,
        mutator: 'ConditionalExpression',
        original: "typeof input.timezone === 'string'",
        replacement: 'true',
        why: 'a body without a zone passes either way: isTimeZone(undefined) is true (Intl takes an undefined zone as its default), and a zone that is not text was refused by the schema and is skipped',
      },
      {
        file: RULES,
        mutator: 'ConditionalExpression',
        original: "typeof input.slot_minutes === 'number'",
        replacement: 'true',
        why: 'a slot length that is not a number was refused by the schema (an integer from 5 to 480), and a refused field is skipped',
      },
      {
        file: RULES,
        mutator: 'ArrayDeclaration',
        original: '[]',
        replacement: '["Stryker was here"]',
        line: 'const sessions =',
        why: 'sessions that are not a list were refused by the schema, and no session is checked when the list was refused',
      },
      {
        file: RULES,
        mutator: 'ConditionalExpression',
        original: 'slotMinutes !== null',
        replacement: 'true',
        why: 'with no slot length (refused by the schema) the comparison is with null, which compares as 0, and a session that got this far is longer than 0',
      },
      {
        file: RULES,
        mutator: 'ArrayDeclaration',
        original: '[]',
        replacement: '["Stryker was here"]',
        line: 'byDay.get(day)',
        why: 'the sessions already on a day start empty: a text among them has no start or end, so it overlaps nothing',
      },
      {
        file: RULES,
        mutator: 'StringLiteral',
        original: "'UTC'",
        replacement: '""',
        why: 'crowdedDate counts the windows and slots of local dates and never turns them into instants, so it does not read the zone',
      },
      {
        file: RULES,
        mutator: 'ArrayDeclaration',
        original: '[]',
        replacement: '["Stryker was here"]',
        line: 'exceptions: input.exceptions',
        why: 'with no exceptions sent, a text as the only exception is no extra session (it has no type or times), and only extra sessions crowd a date',
      },
    ],
  },
  {
    name: 'name-index',
    files: ['src/modules/patients/name-keys.ts'],
    tests: ['test/modules/patients/name-keys.test.ts'],
    goal: 80,
    equivalent: [
      {
        file: NAME_KEYS,
        mutator: 'ConditionalExpression',
        original: "query.startsWith('+') || digits.length > 10",
        replacement: 'true',
        line: 'mobileKey(query.startsWith',
        why: EQUAL_DIGITS,
      },
      {
        file: NAME_KEYS,
        mutator: 'ConditionalExpression',
        original: "query.startsWith('+') || digits.length > 10",
        replacement: 'false',
        line: 'mobileKey(query.startsWith',
        why: EQUAL_DIGITS,
      },
      {
        file: NAME_KEYS,
        mutator: 'LogicalOperator',
        original: "query.startsWith('+') || digits.length > 10",
        replacement: "query.startsWith('+') && digits.length > 10",
        line: 'mobileKey(query.startsWith',
        why: EQUAL_DIGITS,
      },
      {
        file: NAME_KEYS,
        mutator: 'MethodExpression',
        original: "query.startsWith('+')",
        replacement: "query.endsWith('+')",
        line: 'mobileKey(query.startsWith',
        why: EQUAL_DIGITS,
      },
      {
        file: NAME_KEYS,
        mutator: 'StringLiteral',
        original: "'+'",
        replacement: '""',
        line: 'mobileKey(query.startsWith',
        why: EQUAL_DIGITS,
      },
      {
        file: NAME_KEYS,
        mutator: 'ConditionalExpression',
        original: 'digits.length > 10',
        replacement: 'false',
        line: 'mobileKey(query.startsWith',
        why: EQUAL_DIGITS,
      },
      {
        file: NAME_KEYS,
        mutator: 'EqualityOperator',
        original: 'digits.length > 10',
        replacement: 'digits.length >= 10',
        line: 'mobileKey(query.startsWith',
        why: EQUAL_DIGITS,
      },
      {
        file: NAME_KEYS,
        mutator: 'EqualityOperator',
        original: 'digits.length > 10',
        replacement: 'digits.length <= 10',
        line: 'mobileKey(query.startsWith',
        why: EQUAL_DIGITS,
      },
      {
        file: NAME_KEYS,
        mutator: 'ConditionalExpression',
        original: 'query.length === 0',
        replacement: 'false',
        why: 'an empty query has no name words and no digits: its only scan is the partner id "" (key u), which no patient has, so it finds nobody either way',
      },
      {
        file: NAME_KEYS,
        mutator: 'ConditionalExpression',
        original: 'digits.length > 0',
        replacement: 'true',
        why: NO_DIGITS,
      },
      {
        file: NAME_KEYS,
        mutator: 'EqualityOperator',
        original: 'digits.length > 0',
        replacement: 'digits.length >= 0',
        why: NO_DIGITS,
      },
      {
        file: NAME_KEYS,
        mutator: 'ConditionalExpression',
        original: 't.skeleton.length > 0',
        replacement: 'true',
        why: SOUNDED,
      },
      {
        file: NAME_KEYS,
        mutator: 'EqualityOperator',
        original: 't.skeleton.length > 0',
        replacement: 't.skeleton.length >= 0',
        why: SOUNDED,
      },
      {
        file: NAME_KEYS,
        mutator: 'EqualityOperator',
        original: 'a.patientId < b.patientId',
        replacement: 'a.patientId <= b.patientId',
        why: 'the hits are one per patient (a map by patient id), so two hits compared never have the same id',
      },
      {
        file: NAME_KEYS,
        mutator: 'ConditionalExpression',
        original: 'group.length === 0',
        replacement: 'false',
        why: 'a group with no scans reads no range: scanRanges answers no rows without a query, so there is nothing to score and no round trip',
      },
    ],
    note: 'The keys a patient is stored under, the key ranges a search reads (most exact first) and how their rows are scored and paged (`name-keys.ts`), against the query set of `name-search.test.ts` and crowds held in memory (162 patients sharing a surname, a first name, a first and middle name, or the first letters of the other word; 60 sharing a surname for the round trips and rows a page costs); `name-index.ts` keeps what reads and writes the database, tested on both databases by `name-search.test.ts`. The three not killed change only how far a range is read past a whole word’s own spelling: its keys sort first in the wider range that follows (a space sorts before any letter), so only a crowd of other spellings of the same sounds sorting before it (Raa or Rai for Rao) would tell them apart.',
  },
  {
    name: 'ranking',
    files: [ENGINE],
    mutate: [
      linesOf(ENGINE, 'function slipKind(', '/** Prefix expansion of one- or two-letter words'),
      linesOf(ENGINE, 'function fieldRank(', '/** The compact name and a bit mask'),
      linesOf(ENGINE, 'function docInfo(', "/** A word's name-field postings are scored up front"),
      linesOf(ENGINE, 'private leadKind(', '/** Visits the name keys starting with'),
      linesOf(ENGINE, 'private finish(pass: RankPass)', "/** Adds a field's words to a document's distinct words"),
    ],
    tests: ['test/modules/search/ranking.test.ts'],
    goal: 80,
    equivalent: [
      {
        file: ENGINE,
        mutator: 'ConditionalExpression',
        original: 'top.length < pass.limit',
        replacement: 'true',
        why: 'finish then sorts a full page too: a full page was sorted when it filled and each later candidate was put in its place, so sorting it again by the same order (score, then document) changes nothing',
      },
      {
        file: ENGINE,
        mutator: 'EqualityOperator',
        original: 'top.length < pass.limit',
        replacement: 'top.length <= pass.limit',
        why: 'finish then sorts a full page too: a full page was sorted when it filled and each later candidate was put in its place, so sorting it again by the same order (score, then document) changes nothing',
      },
      {
        file: ENGINE,
        mutator: 'ConditionalExpression',
        original: 'top.length === limit',
        replacement: 'true',
        why: 'sorts the page after every candidate instead of when it fills: finish sorts a page that never filled, by the same order, so the answer is the same',
      },
      {
        file: ENGINE,
        mutator: 'EqualityOperator',
        original: 'driverQuality >= 0',
        replacement: 'driverQuality > 0',
        why: 'a driver quality is a kind times 4 plus a field rank, at least 5; only -1 (work it out) is below 0, so 0 never comes',
      },
      {
        file: ENGINE,
        mutator: 'ConditionalExpression',
        original: 'kind === 0',
        replacement: 'false',
        why: 'wordScore only bounds the early stop of a run (others and reach in rank): for a word no document holds it raises the bound, and a higher bound walks more postings, never fewer: the same answers, found slower',
      },
      {
        file: ENGINE,
        mutator: 'ConditionalExpression',
        original: 'kind === KIND_EXACT',
        replacement: 'true',
        line: 'return (required ?',
        why: 'wordScore only bounds the early stop of a run (others and reach in rank): counting every required word as whole raises the bound, and a higher bound walks more postings, never fewer',
      },
      {
        file: ENGINE,
        mutator: 'BooleanLiteral',
        original: 'false',
        replacement: 'true',
        line: 'all = false',
        why: 'all is read only for a candidate whose name does not start with the query (its tier), and such a candidate with a required word unmatched has returned already: all is true there either way',
      },
      {
        file: ENGINE,
        mutator: 'ConditionalExpression',
        original: 'q > 0',
        replacement: 'true',
        why: 'counts every word that is not required as matched: every candidate of a query then gets the same count, which adds the same to every score and changes no order',
      },
      {
        file: ENGINE,
        mutator: 'EqualityOperator',
        original: 'q > 0',
        replacement: 'q >= 0',
        why: 'a quality is never below 0, so this counts every word that is not required as matched: the same count for every candidate of a query, the same order',
      },
    ],
    note: 'Only the ranking part of `engine.ts` is mutated: slipKind, fieldRank, docInfo to byRank (the query-independent score, a word’s score, the order of two candidates), leadKind (a name beginning with a slipped word) and finish and consider (a candidate’s score and its place on the page); the lines are found by the functions’ text when the run starts.',
  },
  {
    name: 'retention-rules',
    files: ['src/modules/retention/rules.ts'],
    tests: ['test/modules/retention/retention.test.ts'],
    goal: 80,
    note: 'A rule is a Kysely expression only a database evaluates, so this module is measured against a database test: `retention.test.ts` on SQLite (a fresh database per run, about 6 s a mutant), which writes rows either side of each cutoff, runs retention and reads which rows are left.',
  },
];

/** Parts of issue 39's list not measured yet, and why: shown under the table so the gap stays in sight. */
export const UNLISTED: Array<{ what: string; files: string[]; why: string }> = [];
