/**
 * The pure modules `npm run mutate` (bench/mutate.ts) measures: each module's files, the pure test files run
 * against its mutants (no database, no HTTP), its goal, and the surviving mutants that are equivalent, with why.
 * An equivalent is matched by file, mutator, the mutated text and its replacement: when the code under it
 * changes, the survivor shows again as not yet killed and is judged anew.
 */
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
  tests: string[];
  /** Percent of mutants killed: 90 for the security-relevant modules, 80 for the rest. */
  goal: 80 | 90;
  equivalent?: Equivalent[];
  /** What the report should say beside the survivors (a test left out of the run, and why). */
  note?: string;
}

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
    note: '28 of the 107 mutants timed out (counted as detected, as Stryker counts them): measured with a 3 s margin at a load average of 14 on 2 cores, and most of them make keyWarning run zxcvbn on more keys, so some are slower runs rather than loops. Killed by a failing test alone: 78 of 107 (72.8 %).',
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
    note: 'These figures are from the first round of tests: the run after the second round (foreign issuers that are not text, numbers as client_id and sub, the cache at its expiry and with two tokens) did not finish before the session’s end (its first mutants timed out at a load average of 19). The cache’s bound (10,000 entries, line 87) is checked by `test/auth/token-cache.test.ts`, which verifies 10,001 tokens (13 s on the bench machine) and is left out of the run for that cost: its mutants show below as not killed.',
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
];

/** Parts of issue 39's list not measured yet, and why: shown under the table so the gap stays in sight. */
export const UNLISTED: Array<{ what: string; files: string[]; why: string }> = [
  {
    what: 'ranking',
    files: ['src/modules/search/index/engine.ts'],
    why: 'ranking lives inside the index engine (1,343 lines); its tests build indexes from the catalogue (30 s a run), so it needs small pure ranking tests first',
  },
  {
    what: 'retention rules',
    files: ['src/modules/retention/rules.ts'],
    why: 'each rule is a Kysely expression only a database evaluates; its tests run on SQLite and PostgreSQL, outside the no-database frame of this run',
  },
  {
    what: 'the name index',
    files: ['src/modules/patients/name-index.ts'],
    why: 'it stores and looks up its keys in the database (name-repo.ts); the folding and scoring it uses are measured as name-folding',
  },
];
