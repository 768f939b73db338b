/**
 * The search index's text rules without a catalogue: how text splits into words, which words name a dosage
 * form, a unit or a filler, how a query is read (what must match, by prefix, with slips, by sound), and what
 * a hit highlights. Expectations are written out here, never taken from the module's own tables.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Hit } from '../../../src/modules/search/index/engine.ts';
import { drugHighlights, escapeHtml, highlight, highlightRanges, lookAlikeWarning } from '../../../src/modules/search/index/highlight.ts';
import type { DrugRecord } from '../../../src/modules/search/index/model.ts';
import { clean, compact, fold, formOfWord, normalizedName, spans, unitOfForm, words } from '../../../src/modules/search/index/normalize.ts';
import { parseQuery, soundAlikes, type QueryWord } from '../../../src/modules/search/index/query.ts';
import { joinedNamesIn, synonymsOf } from '../../../src/modules/search/index/synonyms.ts';

describe('words of a text', () => {
  it('folds a word to lower case without diacritics', () => {
    const cases: Array<[string, string]> = [
      ['PARACETAMOL', 'paracetamol'],
      ['Crème', 'creme'],
      ['ÅNGSTRÖM', 'angstrom'],
      ['ﬁlm', 'film'],
      ['naïve', 'naive'],
      ['plain', 'plain'],
    ];
    for (const [word, folded] of cases) assert.equal(fold(word), folded, word);
  });

  it('reads runs of letters and numbers (decimals kept) as words, everything else as a separator', () => {
    const cases: Array<[string, string[]]> = [
      ['PAN40', ['pan', '40']],
      ['Zerodol-SP Tablet', ['zerodol', 'sp', 'tablet']],
      ['Paracetamol (500mg) + Caffeine 32.5 MG', ['paracetamol', '500', 'mg', 'caffeine', '32.5', 'mg']],
      ['1.5.3 2. .5 5..5', ['1.5', '3', '2', '5', '5', '5']],
      ['12.50mg', ['12.50', 'mg']],
      ['a.5', ['a', '5']],
      ['az AZ 09', ['az', 'az', '09']],
      ['`a{z@A[Z/0:9', ['a', 'z', 'a', 'z', '0', '9']],
      ['Crème Café 5ml', ['creme', 'cafe', '5', 'ml']],
      ['abcé 5', ['abce', '5']],
      ['5 é', ['5', 'e']],
      ['Abc\u212Adef', ['abckdef']],
      ['٣٤ mg', ['mg']],
      ['x\u0301y', ['x', 'y']],
      ['', []],
      [' - ', []],
    ];
    for (const [text, expected] of cases) assert.deepEqual(words(text), expected, text);
  });

  it('gives each word with its place in the text, for highlighting', () => {
    assert.deepEqual(spans('Pan-D 40mg'), [
      { start: 0, end: 3, word: 'pan' },
      { start: 4, end: 5, word: 'd' },
      { start: 6, end: 8, word: '40' },
      { start: 8, end: 10, word: 'mg' },
    ]);
    assert.deepEqual(spans('Crème 1.5'), [
      { start: 0, end: 5, word: 'creme' },
      { start: 6, end: 9, word: '1.5' },
    ]);
  });

  it('joins the words without separators for name matching and with one space for de-duplication', () => {
    assert.equal(compact('Pan-D 40'), 'pand40');
    assert.equal(normalizedName('  Pan-D   40 '), 'pan d 40');
  });

  it('cleans imported values: whitespace runs as one space, trimmed; a value that is no text as empty', () => {
    const cases: Array<[unknown, string]> = [
      ['  Dolo \n 650\t', 'Dolo 650'],
      ['x', 'x'],
      [5, ''],
      [null, ''],
      [undefined, ''],
    ];
    for (const [value, cleaned] of cases) assert.equal(clean(value), cleaned, String(value));
  });
});

describe('dosage forms', () => {
  /** Every word of a pack or prescription that names a form, with the form; the form's dose unit. */
  const FORMS: Array<[string, string[], string | undefined]> = [
    ['tablet', ['tablet', 'tablets', 'tab', 'tabs', 'tabl', 'caplet', 'caplets'], 'tablet'],
    ['capsule', ['capsule', 'capsules', 'cap', 'caps', 'capsul', 'transcaps', 'softgel', 'softgels', 'liquigel'], 'capsule'],
    ['syrup', ['syrup', 'syrups', 'syp', 'syr', 'expectorant', 'linctus', 'elixir', 'tonic'], 'ml'],
    ['suspension', ['suspension', 'susp'], 'ml'],
    [
      'injection',
      [
        'injection',
        'injections',
        'inj',
        'injectable',
        'vial',
        'vials',
        'ampoule',
        'ampoules',
        'amp',
        'penfill',
        'flexpen',
        'kwikpen',
        'cartridge',
        'prefilled',
        'syringe',
      ],
      'ml',
    ],
    ['infusion', ['infusion', 'infusions', 'iv'], 'ml'],
    ['vaccine', ['vaccine', 'vaccines'], undefined],
    ['cream', ['cream', 'creams', 'crm'], undefined],
    ['ointment', ['ointment', 'ointments', 'oint'], undefined],
    ['gel', ['gel', 'gels', 'jelly'], undefined],
    ['lotion', ['lotion', 'lotions'], undefined],
    ['solution', ['solution', 'solutions', 'sol', 'soln', 'liquid', 'mouthwash', 'gargle', 'paint'], 'ml'],
    ['drops', ['drops', 'drop', 'gtt', 'gtts'], 'drop'],
    ['spray', ['spray', 'sprays', 'nasal'], undefined],
    [
      'inhaler',
      ['inhaler', 'inhalers', 'mdi', 'transhaler', 'evohaler', 'autohaler', 'inhalation', 'rotacap', 'rotacaps', 'respicap', 'respicaps'],
      'puff',
    ],
    ['respules', ['respules', 'respule', 'nebuliser', 'nebulizer'], undefined],
    ['powder', ['powder', 'powders', 'dusting'], undefined],
    ['granules', ['granules', 'granule'], undefined],
    ['sachet', ['sachet', 'sachets'], undefined],
    ['suppository', ['suppository', 'suppositories', 'pessary', 'pessaries'], undefined],
    ['emulsion', ['emulsion'], 'ml'],
    ['lozenges', ['lozenges', 'lozenge'], undefined],
    ['soap', ['soap'], undefined],
    ['shampoo', ['shampoo'], undefined],
    ['wash', ['wash', 'cleanser'], undefined],
    ['patch', ['patch', 'patches'], undefined],
    ['kit', ['kit', 'combipack', 'combikit'], undefined],
  ];

  it('reads each word written for a form as that form, with the unit a dose of it is counted in', () => {
    for (const [form, written, unit] of FORMS) {
      for (const word of written) assert.equal(formOfWord(word), form, word);
      assert.equal(unitOfForm(form), unit, form);
    }
    for (const word of ['paracetamol', 'mg', 'tablett', '']) assert.equal(formOfWord(word), undefined, word);
  });
});

describe('query parsing', () => {
  const word = (parsed: QueryWord[], text: string) => parsed.find((w) => w.text === text)!;

  it('requires the substance words; form, unit and filler words only rank', () => {
    const optional = ['mg', 'mcg', 'ug', 'ml', 'g', 'gm', 'gms', 'kg', 'iu', 'l', 'w', 'v', 'unit', 'units', 'mmol', 'meq'];
    const fillers = ['and', 'with', 'of', 'in', 'for', 'the', 'plus', 'test'];
    for (const text of [...optional, ...fillers, 'tab', 'syrup']) {
      const parsed = parseQuery(`dolo ${text}`);
      assert.deepEqual(
        parsed.words.map((w) => [w.text, w.required]),
        [
          ['dolo', true],
          [text, false],
        ],
        text,
      );
      assert.equal(parsed.compactCore, optional.includes(text) || fillers.includes(text) ? 'dolo' : `dolo${text}`, text);
    }
  });

  it('requires form and unit words when the query has nothing else', () => {
    assert.deepEqual(
      parseQuery('tab mg').words.map((w) => [w.text, w.required]),
      [
        ['tab', true],
        ['mg', true],
      ],
    );
  });

  it('matches a form word as the form too, and a shorthand or official name as the substance’s other names', () => {
    assert.deepEqual(word(parseQuery('dolo tab').words, 'tab').exact, ['tab', 'tablet']);
    assert.deepEqual(word(parseQuery('tablet').words, 'tablet').exact, ['tablet']);
    const shorthand: Array<[string, string[]]> = [
      ['pcm', ['pcm', 'paracetamol', 'acetaminophen']],
      ['apap', ['apap', 'paracetamol', 'acetaminophen']],
      ['asa', ['asa', 'aspirin', 'acetylsalicylicacid', 'acetylsalicylic']],
      ['hcq', ['hcq', 'hydroxychloroquine']],
      ['hctz', ['hctz', 'hydrochlorothiazide']],
      ['cpm', ['cpm', 'chlorpheniramine', 'chlorphenamine']],
      ['inh', ['inh', 'isoniazid']],
      ['mtx', ['mtx', 'methotrexate']],
      ['vit', ['vit', 'vitamin']],
      ['adrenaline', ['adrenaline', 'epinephrine']],
      ['dolo', ['dolo']],
    ];
    for (const [text, exact] of shorthand) assert.deepEqual(parseQuery(text).words[0]!.exact, exact, text);
  });

  it('reads an official name of several words as one word, run together as the index holds it, whatever words it is written in', () => {
    const slots = (q: string) => parseQuery(q).words.map((w) => [w.text, w.exact, w.required, w.fuzzy]);
    assert.deepEqual(slots('acetylsalicylic acid 75'), [
      ['acetylsalicylicacid', ['acetylsalicylicacid', 'aspirin'], true, 0],
      ['75', ['75'], true, 0],
    ]);
    assert.deepEqual(slots('acetyl salicylic acid'), slots('acetylsalicylic acid'));
    assert.deepEqual(slots('glyceryl trinitrate'), [['glyceryltrinitrate', ['glyceryltrinitrate', 'nitroglycerin'], true, 0]]);
    assert.deepEqual(
      parseQuery('ethinyl estradiol levonorgestrel').words.map((w) => w.exact[0]),
      ['ethinylestradiol', 'levonorgestrel'],
    );
    // An acid goes by its first word too, and its other names by the acid's.
    assert.deepEqual(parseQuery('clavulanate').words[0]!.exact, ['clavulanate', 'clavulanicacid', 'clavulanic']);
    assert.deepEqual(parseQuery('clavulanic').words[0]!.exact, ['clavulanic', 'clavulanate']);
    // Half typed, the words stay words; words that spell no official name too.
    assert.deepEqual(
      parseQuery('glyceryl trinit').words.map((w) => w.text),
      ['glyceryl', 'trinit'],
    );
    assert.deepEqual(
      parseQuery('folic acid').words.map((w) => w.text),
      ['folic', 'acid'],
    );
    assert.deepEqual(synonymsOf('aspirin'), ['acetylsalicylicacid', 'acetylsalicylic']);
    assert.deepEqual(joinedNamesIn(['aspirin', 'or', 'acetyl', 'salicylic', 'acid', 'and', 'glyceryl', 'trinitrate']), [
      'acetylsalicylic',
      'acetylsalicylicacid',
      'glyceryltrinitrate',
    ]);
    assert.deepEqual(joinedNamesIn(['ethinyl', 'estradiol']), ['ethinylestradiol']);
    assert.deepEqual(joinedNamesIn(['estradiol', 'valerate']), []);
  });

  it('allows slips by length: none up to 3 letters, one from 4, two from 5; none in numbers', () => {
    const cases: Array<[string, number]> = [
      ['pan', 0],
      ['dolo', 1],
      ['crocn', 2],
      ['amoxycillin', 2],
      ['4000', 0],
      ['12345', 0],
    ];
    for (const [text, fuzzy] of cases) assert.equal(parseQuery(text).words[0]!.fuzzy, fuzzy, text);
  });

  it('matches by prefix a number or a word of two letters or more, and a single letter only when it is the whole query', () => {
    const cases: Array<[string, string, boolean]> = [
      ['pan 40', 'pan', true],
      ['pan 40', '40', true],
      ['pan d', 'd', false],
      ['ab d', 'ab', true],
      ['x', 'x', true],
      ['d 5', '5', true],
    ];
    for (const [query, text, prefix] of cases) assert.equal(word(parseQuery(query).words, text).prefix, prefix, `${query}: ${text}`);
  });

  it('marks the last word, unless a number, as the one being typed', () => {
    assert.deepEqual(
      parseQuery('dolo tab 650').words.map((w) => w.typing),
      [false, false, false],
    );
    assert.deepEqual(
      parseQuery('650 dol').words.map((w) => w.typing),
      [false, true],
    );
  });

  it('reads the first 8 words and writes the query compact, and without units and fillers', () => {
    const parsed = parseQuery('a b c d e f g h i j');
    assert.deepEqual(
      parsed.words.map((w) => w.text),
      ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'],
    );
    assert.equal(parsed.compact, 'abcdefgh');
    assert.equal(parsed.compactCore, 'abcdefh');
    assert.equal(parsed.raw, 'a b c d e f g h i j');
    assert.deepEqual(parseQuery('  '), { raw: '  ', compact: '', compactCore: '', words: [] });
  });

  it('spells words of 3 letters or more as they sound, never numbers or the word’s exact names', () => {
    assert.deepEqual(parseQuery('troksip').words[0]!.sounds.slice(0, 2), ['troxip', 'trocksip']);
    assert.deepEqual(parseQuery('ab').words[0]!.sounds, []);
    assert.deepEqual(parseQuery('cip').words[0]!.sounds, ['ceep', 'kip', 'cyp', 'keep', 'ckip', 'kyp']);
    assert.deepEqual(parseQuery('500').words[0]!.sounds, []);
    assert.ok(!parseQuery('pcm').words[0]!.sounds.includes('pcm'));
  });

  it('respells each sound-alike letter group both ways, once or twice, the word itself excluded', () => {
    const cases: Array<[string, string[]]> = [
      ['phase', ['fase', 'phaze', 'faze']],
      ['fax', ['faks', 'phax', 'phaks', 'facks', 'fakz', 'facs']],
      ['wee', ['wi', 'vee', 'vi', 'wy']],
      ['kv', ['ckv', 'kw', 'cv', 'cckv', 'ckw', 'kkv', 'ccv', 'cw']],
      ['yi', ['yee', 'ii', 'yy', 'iee', 'eei', 'iy']],
      ['bz', ['bs']],
      ['lmn', []],
    ];
    for (const [text, sounds] of cases) assert.deepEqual(soundAlikes(text), sounds, text);
  });

  it('offers at most 16 respellings of a word with many sound-alike groups', () => {
    assert.equal(soundAlikes('ckzwyeeou').length, 15);
    assert.equal(soundAlikes('ckzwyeeouphckzwy').length, 16);
  });
});

describe('highlighting', () => {
  it('escapes HTML and wraps the matched ranges in <em>, merging those that overlap or touch', () => {
    const cases: Array<[string, Array<[number, number]>, string]> = [
      ['a<b>&"c\'', [], 'a&lt;b&gt;&amp;&quot;c&#39;'],
      ['Dolo 650', [[0, 4]], '<em>Dolo</em> 650'],
      [
        'Dolo 650',
        [
          [5, 8],
          [0, 4],
        ],
        '<em>Dolo</em> <em>650</em>',
      ],
      [
        'abcdef',
        [
          [0, 3],
          [2, 5],
        ],
        '<em>abcde</em>f',
      ],
      [
        'abcdef',
        [
          [0, 2],
          [2, 4],
        ],
        '<em>abcd</em>ef',
      ],
      [
        'abcdef',
        [
          [0, 5],
          [1, 2],
        ],
        '<em>abcde</em>f',
      ],
      ['a&b', [[1, 2]], 'a<em>&amp;</em>b'],
    ];
    for (const [text, ranges, html] of cases) assert.equal(highlight(text, ranges), html, `${text} ${JSON.stringify(ranges)}`);
    assert.equal(escapeHtml('<&>'), '&lt;&amp;&gt;');
  });

  it('marks whole words matched exactly or with a slip, the typed part of a prefix, and the name’s leading part', () => {
    const none: ReadonlyArray<ReadonlySet<string>> = [];
    const cases: Array<[string, string, ReadonlyArray<ReadonlySet<string>>, boolean, Array<[number, number]>]> = [
      [
        'Dolo 650 Tablet',
        'dolo 650',
        none,
        false,
        [
          [0, 4],
          [5, 8],
        ],
      ],
      ['Dolo 650 Tablet', 'dol', none, false, [[0, 3]]],
      ['Dolo 650 Tablet', 'tab', none, false, [[9, 15]]],
      ['Crocin Advance', 'crocn', [new Set(['crocin'])], false, [[0, 6]]],
      [
        'Crocin Advance',
        'crocn adv',
        [new Set(['crocin']), new Set()],
        false,
        [
          [0, 6],
          [7, 10],
        ],
      ],
      [
        'Pan-D 40',
        'pand',
        none,
        true,
        [
          [0, 3],
          [4, 5],
        ],
      ],
      [
        'Pan-D 40',
        'pand4',
        none,
        true,
        [
          [0, 3],
          [4, 5],
          [6, 7],
          [6, 7],
        ],
      ],
      [
        'Pan-D 40',
        'pan 40mg',
        none,
        true,
        [
          [0, 3],
          [4, 5],
          [6, 7],
          [0, 3],
          [6, 8],
        ],
      ],
      [
        'Pan 40',
        'pan',
        none,
        true,
        [
          [0, 3],
          [0, 3],
        ],
      ],
      [
        'Crème 5',
        'creme',
        none,
        true,
        [
          [0, 5],
          [0, 5],
        ],
      ],
      ['Paracetamol', 'pcm', none, false, [[0, 11]]],
      ['Dolo', 'xyz', none, false, []],
      ['Dolo', 'xyz', none, true, [[0, 3]]],
    ];
    for (const [text, query, typos, namePrefix, ranges] of cases) {
      assert.deepEqual(highlightRanges(text, parseQuery(query), typos, namePrefix), ranges, `${text} / ${query}`);
    }
    assert.deepEqual(highlightRanges('Dolo', parseQuery(''), [], true), []);
  });

  const record = (name: string, generic: string, common: string) => ({ name, generic_name: generic, common_name: common }) as DrugRecord;
  const hit = (r: DrugRecord, namePrefix = false): Hit<DrugRecord> => ({ record: r, exact: false, namePrefix, typoMatches: [] });

  it('highlights a drug’s name, generic name and common name where the query matched, and says null when none did', () => {
    const dolo = record('Dolo 650', 'Paracetamol', 'paracetamol 650mg');
    assert.deepEqual(drugHighlights(hit(dolo), parseQuery('dolo')), { name: '<em>Dolo</em> 650' });
    assert.deepEqual(drugHighlights(hit(dolo), parseQuery('paracetamol')), {
      generic_name: '<em>Paracetamol</em>',
      common_name: '<em>paracetamol</em> 650mg',
    });
    assert.deepEqual(drugHighlights(hit(record('Dolo 650', 'x', 'y'), true), parseQuery('dolo6')), { name: '<em>Dolo</em> <em>6</em>50' });
    assert.equal(drugHighlights(hit(dolo), parseQuery('ibuprofen')), null);
  });

  it('highlights the words of an official name of several words that the query named otherwise, or wrote in other words', () => {
    const gtn = record('Angised 0.5', 'Glyceryl Trinitrate', 'glyceryl trinitrate 0.5mg');
    assert.deepEqual(drugHighlights(hit(gtn), parseQuery('nitroglycerin')), {
      generic_name: '<em>Glyceryl Trinitrate</em>',
      common_name: '<em>glyceryl trinitrate</em> 0.5mg',
    });
    const aspirin = record('Acetyl Salicylic Acid 75', 'Aspirin', 'aspirin 75mg');
    assert.deepEqual(drugHighlights(hit(aspirin), parseQuery('acetylsalicylic acid')), {
      name: '<em>Acetyl Salicylic Acid</em> 75',
      generic_name: '<em>Aspirin</em>',
      common_name: '<em>aspirin</em> 75mg',
    });
  });

  it('warns of a look-alike name when the catalogue holds its twin under any official name', () => {
    const inCatalogue = (held: string[]) => (word: string) => held.includes(word);
    const hydroxyzine = record('Atarax', 'x', 'Hydroxyzine 25mg');
    const cases: Array<[DrugRecord, string[], string | null]> = [
      [hydroxyzine, ['hydralazine'], 'hydrOXYzine: may be confused with hydrALAZINE (ISMP)'],
      [hydroxyzine, ['hydralazine', 'hydrochlorothiazide'], 'hydrOXYzine: may be confused with hydrALAZINE, hydroCHLOROthiazide (ISMP)'],
      [hydroxyzine, [], null],
      [record('Glipizide 5', 'x', 'glipizide glipizide'), ['glibenclamide'], 'glipiZIDE: may be confused with glyBURIDE (ISMP)'],
      [
        record('Hydroxyzine', 'x', 'hydroxyzine; glipizide'),
        ['hydralazine', 'glyburide'],
        'hydrOXYzine: may be confused with hydrALAZINE (ISMP); glipiZIDE: may be confused with glyBURIDE (ISMP)',
      ],
      [record('Dolo', 'x', 'paracetamol'), ['paracetamol'], null],
    ];
    for (const [r, held, warning] of cases) assert.equal(lookAlikeWarning(r, inCatalogue(held)), warning, `${r.name} ${held}`);
    assert.equal(
      lookAlikeWarning(record('Hydroxyzine <b>', 'x', ''), inCatalogue(['hydralazine'])),
      'hydrOXYzine: may be confused with hydrALAZINE (ISMP)',
    );
  });
});
