/**
 * Relevance: the query set of queries.ts, each with the results a prescriber expects at the top, run
 * through the endpoint against the built-in catalogue plus the shared real catalogues (A-Z medicines,
 * both 1mg sets, LOINC lab orders) and the test fixtures.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../../src/logger.ts';
import { Catalogue } from '../../../src/modules/search/catalogue/catalogue.ts';
import { parseQuery } from '../../../src/modules/search/index/query.ts';
import { judge, QUERIES } from './queries.ts';
import { createSearchApp, FIXTURES, HAS_SHARED_DATA, shared, type SearchApp } from './support.ts';

const count = Object.values(QUERIES).reduce((n, list) => n + list.length, 0);

describe(`relevance: ${count} queries`, { skip: !HAS_SHARED_DATA && 'no ../shared/data' }, () => {
  let t: SearchApp;
  before(async () => {
    t = await createSearchApp({
      files: [
        ['drugs', shared('az_medicines_india_sample500.csv')],
        ['drugs', shared('onemg_drugs_2k.csv')],
        ['drugs', shared('medicine_details_1mg_11k.csv')],
        ['labs', shared('loinc_universal_lab_orders.csv')],
        ['labs', path.join(FIXTURES, 'labs.ndjson')],
        ['drugs', path.join(FIXTURES, 'drugs.ndjson')],
      ],
    });
  });
  after(() => t.close());

  it('has at least 60 queries', () => assert.ok(count >= 60, `${count}`));

  for (const [group, cases] of Object.entries(QUERIES)) {
    it(group, async () => {
      const failures: string[] = [];
      for (const c of cases) {
        const { status, body } = await t.search({ q: c.q, s_type: c.lab ? 'lab' : 'drug', limit: 10 });
        const names: string[] = (c.lab ? body.lab_tests : body.drugs).map((r: { name: string }) => r.name);
        if (status !== 200) failures.push(`"${c.q}" -> ${status}`);
        else failures.push(...judge(c, names, c.lab ? undefined : body.drugs[0]?.drug_name_match === true));
      }
      assert.deepEqual(failures, []);
    });
  }

  it('holds for an index built afresh from the same database, whatever history the app index has', async () => {
    // The app's index took the imports as updates (and maybe rebuilt); a new process builds from the rows.
    const fresh = new Catalogue(t.ctx.storage.db, createLogger('silent'), { builtin: false, pollIntervalMs: 3_600_000 });
    await fresh.start();
    try {
      const failures: string[] = [];
      for (const c of Object.values(QUERIES).flat()) {
        const hits = c.lab ? fresh.labs.search(parseQuery(c.q), 10) : fresh.drugs.search(parseQuery(c.q), 10);
        failures.push(
          ...judge(
            c,
            hits.map((hit) => hit.record.name),
            c.lab ? undefined : hits[0]?.exact === true,
          ),
        );
      }
      assert.deepEqual(failures, []);
    } finally {
      await fresh.stop();
    }
  });

  it('ranks whole-word matches above partial ones and exact names first', async () => {
    const { body } = await t.search({ q: 'pan', limit: 20 });
    const names: string[] = body.drugs.map((d: { name: string }) => d.name);
    const firstPartial = names.findIndex((n) => !/^pan\b/i.test(n));
    const lastWhole = names.findLastIndex((n) => /^pan\b/i.test(n));
    assert.ok(firstPartial === -1 || firstPartial > lastWhole, names.join(' | '));
    assert.equal(body.drugs.filter((d: { drug_name_match: boolean }) => d.drug_name_match).length, 0);
  });

  it('puts discontinued products after active ones', async () => {
    const { body } = await t.search({ q: 'tablet', limit: 100 });
    const flags: boolean[] = body.drugs.map((d: { include_suggestion: boolean }) => d.include_suggestion);
    const firstDiscontinued = flags.indexOf(false);
    assert.ok(firstDiscontinued === -1 || flags.slice(firstDiscontinued).every((f) => !f));
  });
});
