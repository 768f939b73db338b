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
  why: string;
}

export interface MutationModule {
  name: string;
  files: string[];
  tests: string[];
  /** Percent of mutants killed: 90 for the security-relevant modules, 80 for the rest. */
  goal: 80 | 90;
  equivalent?: Equivalent[];
}

export const MODULES: MutationModule[] = [
  {
    name: 'outbound-addresses',
    files: ['src/security/outbound.ts'],
    tests: ['test/security/outbound.test.ts'],
    goal: 90,
  },
  {
    name: 'webhook-signing',
    files: ['src/modules/webhooks/signer.ts'],
    tests: ['test/modules/webhooks/signer.test.ts'],
    goal: 90,
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
    goal: 90,
  },
  {
    name: 'page-tokens',
    files: ['src/security/sealed-tokens.ts', 'src/modules/audit/cursor.ts', 'src/modules/cases/cursor.ts'],
    tests: ['test/security/sealed-tokens.test.ts'],
    goal: 90,
  },
  {
    name: 'slots',
    files: ['src/modules/schedules/slots.ts'],
    tests: ['test/modules/schedules/slots.test.ts'],
    goal: 80,
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
];
