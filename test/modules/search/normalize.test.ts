/**
 * Tokenising: the character scan that reads ASCII text gives exactly the words of the general
 * expression (letters in runs, numbers with their decimals), on edge cases and on every text of the
 * catalogues the service ships and reads.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { BUILTIN_DIR } from '../../../src/modules/search/ingest/builtin.ts';
import { fold, words } from '../../../src/modules/search/index/normalize.ts';
import { HAS_SHARED_DATA, shared } from './support.ts';

const WORD = /\p{L}+|\d+(?:\.\d+)?/gu;
const byExpression = (text: string) => [...text.matchAll(WORD)].map((match) => fold(match[0]));

describe('words', () => {
  it('splits letters from digits and treats punctuation as a separator', () => {
    assert.deepEqual(words('PAN40'), ['pan', '40']);
    assert.deepEqual(words('Zerodol-SP Tablet'), ['zerodol', 'sp', 'tablet']);
    assert.deepEqual(words('Paracetamol (500mg) + Caffeine 32.5 MG'), ['paracetamol', '500', 'mg', 'caffeine', '32.5', 'mg']);
    assert.deepEqual(words('1.5.3 2. .5 5..5'), ['1.5', '3', '2', '5', '5', '5']);
    assert.deepEqual(words('Crème Café 5ml'), ['creme', 'cafe', '5', 'ml']);
    assert.deepEqual(words(''), []);
  });

  it('gives the words of the general expression, ASCII or not', () => {
    const edge = ['a1b2', 'Abc\u212Adef', 'ÀB cd', 'İstanbul 5', 'ab ünï 5', 'x\u0301y', '٣٤ mg', 'K-Ras 12.0.1x', 'tab.', '..', ' 7 '];
    for (const text of edge) assert.deepEqual(words(text), byExpression(text), text);
  });

  it('gives the words of the general expression for every text of the catalogues', () => {
    const files = [
      path.join(BUILTIN_DIR, 'drugs.ndjson'),
      path.join(BUILTIN_DIR, 'labs.ndjson'),
      ...(HAS_SHARED_DATA ? [shared('az_medicines_india_sample500.csv'), shared('medicine_details_1mg_11k.csv'), shared('onemg_drugs_2k.csv')] : []),
    ];
    let texts = 0;
    for (const file of files) {
      // Every line, cut at quotes and commas: names, compositions, makers and packs as the importers see them.
      for (const text of readFileSync(file, 'utf8').split(/["\n,]/)) {
        texts++;
        assert.deepEqual(words(text), byExpression(text), text);
      }
    }
    assert.ok(texts > 1000);
  });
});
