/** bench/RESULTS.md across runs (bench/results-file.ts): a partial run replaces its sections' tables and keeps the rest. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergeResults } from '../../bench/results-file.ts';

const PREAMBLE = ['# Benchmark results', '', 'How the figures are measured.', ''];
const previous = [
  '# Benchmark results',
  '',
  'Written by an older run.',
  '',
  '## Baseline',
  '',
  '| scenario | value | unit | ratio to hello-world | note |',
  '|---|---:|---|---:|---|',
  '| hello-world GET / (bare Fastify) | 50000 | req/s | 1 | p99 2 ms |',
  '',
  '## Appointments',
  '',
  '| scenario | value | unit | ratio to hello-world | note |',
  '|---|---:|---|---:|---|',
  '| GET | 7000 | req/s | 0.14 |  |',
  '| PATCH | 3000 | req/s | 0.06 |  |',
  '',
  'A note written by hand about these rows.',
  '',
  '## Figures moved from the guide',
  '',
  'Prose only, kept as it is.',
  '',
].join('\n');

const run = '2026-11-29T07:45:00.000Z (2 × test CPU, hello-world 40000 req/s)';
const baseline = {
  title: 'Baseline',
  figures: [{ name: 'hello-world GET / (bare Fastify)', value: 40000, unit: 'req/s', ratio: 1, note: 'p99 3 ms' }],
};

describe('RESULTS.md after a partial run', () => {
  const merged = mergeResults(previous, PREAMBLE, run, [baseline]);

  it('replaces the measured section’s table, with its run named above it', () => {
    assert.ok(merged.includes(`## Baseline\n\nMeasured by \`npm run bench\` on ${run}.\n\n| scenario |`));
    assert.ok(merged.includes('| hello-world GET / (bare Fastify) | 40000 | req/s | 1 | p99 3 ms |'));
    assert.ok(!merged.includes('| 50000 |'), 'the old row is gone');
  });

  it('keeps the sections it did not measure, their notes, and prose-only sections', () => {
    assert.ok(merged.includes('| GET | 7000 | req/s | 0.14 |  |\n| PATCH | 3000 | req/s | 0.06 |  |\n\nA note written by hand about these rows.'));
    assert.ok(merged.includes('## Figures moved from the guide\n\nProse only, kept as it is.\n'));
  });

  it('puts the new preamble above the first section', () => {
    assert.ok(merged.startsWith('# Benchmark results\n\nHow the figures are measured.\n\n## Baseline\n'));
    assert.ok(!merged.includes('Written by an older run.'));
  });

  it('replaces the table and the run’s line again on the next run, keeping the note under it', () => {
    const first = mergeResults(previous, PREAMBLE, run, [
      { title: 'Appointments', figures: [{ name: 'GET', value: 7100, unit: 'req/s', ratio: 0.15 }] },
    ]);
    const second = mergeResults(first, PREAMBLE, 'a later run', [
      { title: 'Appointments', figures: [{ name: 'GET', value: 7200, unit: 'req/s', ratio: 0.16 }] },
    ]);
    const section = second.slice(second.indexOf('## Appointments'), second.indexOf('## Figures moved'));
    assert.equal(
      section,
      '## Appointments\n\nMeasured by `npm run bench` on a later run.\n\n| scenario | value | unit | ratio to hello-world | note |\n|---|---:|---|---:|---|\n| GET | 7200 | req/s | 0.16 |  |\n\nA note written by hand about these rows.\n\n',
    );
  });

  it('adds a section it has not seen at the end, and puts a table into a section that had only text', () => {
    const added = mergeResults(previous, PREAMBLE, run, [
      { title: 'Slots', figures: [{ name: 'GET slots', value: 21, unit: 'ms' }] },
      { title: 'Figures moved from the guide', figures: [{ name: 'x', value: 1, unit: 'ms' }] },
    ]);
    assert.ok(
      added.endsWith(
        `## Slots\n\nMeasured by \`npm run bench\` on ${run}.\n\n| scenario | value | unit | ratio to hello-world | note |\n|---|---:|---|---:|---|\n| GET slots | 21 | ms |  |  |\n`,
      ),
    );
    assert.ok(added.includes('| x | 1 | ms |  |  |\n\nProse only, kept as it is.'));
  });

  it('writes a first file from nothing', () => {
    assert.equal(
      mergeResults('', PREAMBLE, run, [baseline]),
      `${PREAMBLE.join('\n')}\n## Baseline\n\nMeasured by \`npm run bench\` on ${run}.\n\n| scenario | value | unit | ratio to hello-world | note |\n|---|---:|---|---:|---|\n| hello-world GET / (bare Fastify) | 40000 | req/s | 1 | p99 3 ms |\n`,
    );
  });
});
