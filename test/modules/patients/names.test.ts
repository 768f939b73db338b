/**
 * Indian name folding without a database: which spellings of a name the patient search treats as one, how a
 * name is read into tokens (honorifics, abbreviations, initials), and how well a name answers a query. Each
 * table is a rule a receptionist would notice: a spelling found or not, a name ranked above another.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  editDistance,
  initialClasses,
  matchToken,
  nameTokens,
  typedNameTokens,
  phoneticOf,
  scoreName,
  skeletonOf,
  tokensFromText,
  tokensToText,
} from '../../../src/modules/patients/names.ts';

const token = (text: string) => nameTokens(text)[0]!;

describe('spellings of one name', () => {
  /** Each group: ways transliteration writes one name, and the key (consonant skeleton) they share. */
  const SAME: Array<[string, string[]]> = [
    ['srnvs', ['srinivas', 'shrinivas', 'sreenivas']],
    ['cdr', ['chaudhary', 'choudhury', 'chowdhury']],
    ['rgvndr', ['raghavendra', 'raghvendra']],
    ['mmt', ['mamata', 'mamta']],
    ['rmn', ['rehman', 'rahman']],
    ['gnsvr', ['dnyaneshwar', 'gyaneshwar', 'jnaneshwar']],
    ['sm', ['swamy', 'samy', 'swami']],
    ['svt', ['swetha', 'shweta', 'sweta']],
    ['c', ['chhaya', 'chaya']],
    ['mkrj', ['mukherjee', 'mukerji']],
    ['flp', ['philip', 'filip']],
    ['alksndr', ['alexander', 'aleksander']],
    ['krs', ['qureshi', 'kureshi']],
    ['jr', ['zaheer', 'jaheer']],
    ['vvn', ['bhavna', 'bavna', 'vhavna']],
    ['ssl', ['cecil', 'sesil']],
    ['jk', ['jacky', 'jaki']],
    ['vj', ['vijay', 'wijay', 'bijay']],
    ['tkr', ['thakur', 'takur']],
    ['gs', ['ghosh', 'gosh']],
    ['amd', ['ahmed', 'ahamad']],
    ['drv', ['dhruv', 'druv']],
    ['j', ['jha', 'ja']],
    ['adt', ['aditya', 'aaditya']],
    ['pj', ['pooja', 'puja']],
    ['gr', ['gowri', 'gauri']],
    ['mnk', ['mayank', 'maiank']],
    ['ksvr', ['xavier', 'ksavier']],
    ['asvl', ['oswal', 'osval']],
    ['hr', ['hari']],
    ['ar', ['ari']],
    ['ys', ['yash']],
    ['as', ['ayush']],
    ['vmk', ['wamiq']],
    ['svdn', ['sweden']],
    ['svnt', ['sawant']],
    ['krsn', ['krishna', 'krishn']],
    ['k', ['kh', 'kha', 'ck']],
  ];

  it('folds the spellings transliteration produces to one skeleton, and keeps other names apart', () => {
    for (const [skeleton, spellings] of SAME) for (const spelling of spellings) assert.equal(skeletonOf(spelling), skeleton, spelling);
  });

  it('keeps the vowel marks in the phonetic key, so names with one skeleton still rank apart, and drops a final vowel', () => {
    const cases: Array<[string, string]> = [
      ['shanti', 'sant'],
      ['sunita', 'sanat'],
      ['krishna', 'krasn'],
      ['krishn', 'krasn'],
      ['raghavendra', 'ragavandr'],
      ['raghvendra', 'ragvandr'],
      ['chowdhury', 'cadar'],
      ['srinivas', 'sranavas'],
      ['a', 'a'],
      ['aa', 'a'],
      ['e', 'a'],
    ];
    for (const [spelling, phonetic] of cases) assert.equal(phoneticOf(spelling), phonetic, spelling);
  });

  it('reads an initial as the first sounds a name written with it may start with', () => {
    const expected: Record<string, string[]> = {
      a: ['a'],
      e: ['a'],
      i: ['a'],
      o: ['a'],
      u: ['a'],
      c: ['c', 'k', 's'],
      p: ['p', 'f'],
      b: ['v'],
      v: ['v'],
      w: ['v'],
      z: ['j'],
      j: ['j'],
      q: ['k'],
      k: ['k'],
      x: ['k'],
      g: ['g'],
      s: ['s'],
      y: ['y'],
      h: ['h'],
    };
    for (const [letter, classes] of Object.entries(expected)) assert.deepEqual(initialClasses(letter), classes, letter);
  });
});

describe('tokens of a name', () => {
  it('drops honorifics before a name, spells out abbreviations, reads consonant groups and letters as initials', () => {
    const cases: Array<[string, string, string]> = [
      ['Mr. R.K. Sharma', 'r k sharma', 'IIw'],
      ['RK Narayan', 'r k narayan', 'IIw'],
      ['Brj Mohan', 'b r j mohan', 'IIIw'],
      ['A. P. J.  Abdul', 'a p j abdul', 'IIIw'],
      ['Dr Md Salim', 'mohammed salim', 'ww'],
      ['Mohd. Ali', 'mohammed ali', 'ww'],
      ['mohmd ali', 'mohammed ali', 'ww'],
      ['mhd ali', 'mohammed ali', 'ww'],
      ['mohamad ali', 'mohammed ali', 'ww'],
      ["D'Souza", 'dsouza', 'w'],
      ['d souza', 'dsouza', 'w'],
      ['D’Mello', 'dmello', 'w'],
      ['Ramesh  d costa', 'ramesh dcosta', 'ww'],
      ['d sharma', 'd sharma', 'Iw'],
      ['S/O Ramesh', 'ramesh', 'w'],
      ['Ramesh s/o Suresh', 'ramesh so suresh', 'www'],
      ['Ramesh W / O Suresh', 'ramesh wo suresh', 'www'],
      ['Mrs Kumari Baby', 'baby', 'w'],
      ['Smt.', 's m t', 'III'],
      ['Renée Çelik', 'renee celik', 'ww'],
      ['d', 'd', 'I'],
      ['', '', ''],
    ];
    for (const [raw, text, kinds] of cases) {
      const tokens = nameTokens(raw);
      assert.equal(tokensToText(tokens), text, raw);
      assert.equal(tokens.map((t) => (t.initial ? 'I' : 'w')).join(''), kinds, raw);
    }
  });

  it('drops every honorific the registers use, when a name follows', () => {
    const honorifics = [
      'mr',
      'mrs',
      'ms',
      'miss',
      'mst',
      'master',
      'smt',
      'shrimati',
      'srimati',
      'shri',
      'shree',
      'sh',
      'dr',
      'prof',
      'late',
      'kumari',
      'kum',
      'km',
      'baby',
      'bo',
      'so',
      'do',
      'wo',
      'co',
    ];
    for (const honorific of honorifics) assert.equal(tokensToText(nameTokens(`${honorific} ramesh`)), 'ramesh', honorific);
    assert.equal(tokensToText(nameTokens('mr')), 'm r');
    assert.equal(tokensToText(nameTokens('baby')), 'baby');
  });

  it('joins D with every Portuguese surname written after it', () => {
    for (const surname of [
      'souza',
      'sousa',
      'silva',
      'costa',
      'cruz',
      'cunha',
      'mello',
      'melo',
      'sa',
      'lima',
      'almeida',
      'abreu',
      'monte',
      'penha',
    ]) {
      assert.equal(tokensToText(nameTokens(`Anil D ${surname}`)), `anil d${surname}`, surname);
    }
  });

  it('reads a search text’s last word of consonants as a word being typed, where a name reads initials', () => {
    const cases: Array<[string, string, string]> = [
      ['Sunita Sh', 'sunita sh', 'ww'],
      ['Rajesh Kr', 'rajesh kr', 'ww'],
      ['RK Sharma', 'r k sharma', 'IIw'],
      ['Sharma R K', 'sharma r k', 'wII'],
      ['Sharma RK', 'sharma rk', 'ww'],
      ['Shr', 'shr', 'w'],
      ['Sh Sunita', 'sunita', 'w'],
      ['Md', 'mohammed', 'w'],
      ['Sunita Sharma', 'sunita sharma', 'ww'],
    ];
    for (const [raw, text, kinds] of cases) {
      const tokens = typedNameTokens(raw);
      assert.equal(tokensToText(tokens), text, raw);
      assert.equal(tokens.map((t) => (t.initial ? 'I' : 'w')).join(''), kinds, raw);
    }
  });

  it('takes a name in parts, skipping the empty ones', () => {
    assert.equal(tokensToText(nameTokens('Ravi', null, undefined, '', 'Kumar')), 'ravi kumar');
  });

  it('reads stored text back into the same tokens, single letters as initials, reusing the tokens already made', () => {
    const stored = tokensToText(nameTokens('R. K. Sharma'));
    assert.deepEqual(tokensFromText(stored), nameTokens('R. K. Sharma'));
    const known = new Map();
    const first = tokensFromText('r  ramesh', known);
    const second = tokensFromText('ramesh', known);
    assert.deepEqual(
      first.map((t) => [t.text, t.initial]),
      [
        ['r', true],
        ['ramesh', false],
      ],
    );
    assert.equal(second[0], first[1]);
    assert.equal(known.size, 2);
  });
});

describe('typo distance', () => {
  it('costs 1 for a missing, extra or swapped letter, half for a similar letter, 2 for another; more than the budget as budget + 1', () => {
    const cases: Array<[string, string, number, number]> = [
      ['ramesh', 'ramesh', 0, 0],
      ['ramesh', 'rameshh', 2, 1],
      ['ramesh', 'ramsh', 2, 1],
      ['ramesh', 'rmaesh', 2, 1],
      ['ramesh', 'rajesh', 3, 2],
      ['ramesh', 'ramesx', 1, 2],
      ['tanu', 'danu', 1, 0.5],
      ['sumit', 'sumeet', 3, 1.5],
      ['rajesh', 'razesh', 1, 0.5],
      ['kiran', 'giran', 1, 0.5],
      ['pawan', 'fawan', 1, 0.5],
      ['ravi', 'rabi', 1, 0.5],
      ['ravi', 'ravo', 1, 0.5],
      ['rohan', 'lohan', 1, 0.5],
      ['naman', 'maman', 1, 0.5],
      ['ab', 'abcd', 1, 2],
      ['abcdef', 'ghijkl', 2, 3],
      ['', 'abc', 5, 3],
      ['abc', '', 5, 3],
    ];
    for (const [a, b, max, distance] of cases) assert.equal(editDistance(a, b, max), distance, `${a} ${b} ${max}`);
  });
});

describe('how well a name token answers a query token', () => {
  it('ranks exact over prefix over same sounds over same skeleton over skeleton prefix over typo over initials', () => {
    const cases: Array<[string, string, boolean, number]> = [
      ['ramesh', 'ramesh', false, 1],
      ['ram', 'ramesh', true, 0.9],
      ['ram', 'ramesh', false, 0],
      ['ramesh', 'rameshwar', true, 0.9],
      ['sreenivas', 'srinivas', false, 0.85],
      ['amit', 'ameet', false, 0.85],
      ['raghvendra', 'raghavendra', false, 0.75],
      ['shanti', 'sunita', false, 0.75],
      ['rmsh', 'ramesh', true, 0.75],
      ['kh', 'kha', false, 0.5],
      ['rmsh', 'rameshwar', true, 0.6],
      ['rmsh', 'rameshwar', false, 0],
      ['ramesh', 'rameshk', false, 0.55],
      ['rame', 'ramex', false, 0.55],
      ['narayana', 'narayanapr', false, 0.55],
      ['narayana', 'narayanapqr', false, 0],
      ['kamesh', 'ramesh', false, 0],
      ['ramesj', 'ramesh', false, 0],
      ['rajesh', 'ramesh', false, 0],
      ['ram', 'rameshk', false, 0],
      ['sumit', 'amit', false, 0],
    ];
    for (const [query, name, prefix, score] of cases)
      assert.equal(matchToken(token(query), token(name), prefix), score, `${query} ${name} ${prefix}`);
  });

  it('matches an initial to the same initial, and to a name starting with a sound it may stand for', () => {
    const cases: Array<[string, string, number]> = [
      ['r', 'r', 1],
      ['r', 's', 0],
      ['b', 'v', 0],
      ['r', 'ramesh', 0.5],
      ['c', 'kiran', 0.5],
      ['c', 'suresh', 0.5],
      ['s', 'shanti', 0.5],
      ['a', 'aditya', 0.5],
      ['r', 'suresh', 0],
      ['kiran', 'k', 0.4],
      ['suresh', 'c', 0.4],
      ['shanti', 's', 0.4],
      ['aditya', 'e', 0.4],
      ['ramesh', 's', 0],
    ];
    for (const [query, name, score] of cases) assert.equal(matchToken(token(query), token(name), false), score, `${query} ${name}`);
  });
});

describe('the score of a name for a query', () => {
  it('is the mean token match (as 100), plus 2 in the query’s order, less 1 per name token the query left out (at most 3); 0 when a query token matches nothing', () => {
    const cases: Array<[string, string, number]> = [
      ['ramesh kumar', 'ramesh kumar', 102],
      ['kumar ramesh', 'ramesh kumar', 100],
      ['ramesh', 'ramesh kumar', 101],
      ['ramesh', 'ramesh kumar sharma', 100],
      ['ramesh', 'ramesh kumar sharma singh', 99],
      ['ramesh', 'ramesh kumar sharma singh yadav', 99],
      ['ram', 'ramesh', 92],
      ['r sharma', 'ramesh sharma', 77],
      ['sharma r', 'ramesh sharma', 75],
      ['r k', 'rakesh kumar', 52],
      ['ramesh suresh', 'ramesh kumar', 0],
      ['ramesh ramesh', 'ramesh kumar', 0],
      ['ramesh kumar sharma', 'ramesh kumar', 0],
      ['ramesh', 'ram', 0],
      ['', 'ramesh', 0],
    ];
    for (const [query, name, score] of cases) assert.equal(scoreName(nameTokens(query), nameTokens(name)), score, `${query} / ${name}`);
  });

  it('pairs each query token with the name token it matches best, the best pairs first', () => {
    // "ram", typed last, is a prefix of both (0.9); "ramdas" exactly (1) takes ramdas first and leaves ramesh
    // to "ram": a mean of 95, out of the name's order.
    assert.equal(scoreName(nameTokens('ramdas ram'), nameTokens('ramesh ramdas')), 95);
    // Not typed last, "ram" is no prefix: it matches nothing.
    assert.equal(scoreName(nameTokens('ram ramdas'), nameTokens('ramdas ramesh')), 0);
  });
});
