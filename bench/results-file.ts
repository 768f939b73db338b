/**
 * bench/RESULTS.md across runs: a run (often `BENCH_ONLY=a,b`) replaces the tables of the sections it measured and
 * keeps everything else (other sections, the notes written under a table), so a partial run never erases figures.
 */
import type { Figure } from './lib.ts';

export interface MeasuredSection {
  title: string;
  figures: Figure[];
}

/** The line above a table naming its run; replaced with the table. */
const MEASURED = 'Measured by `npm run bench` on ';

function table(section: MeasuredSection): string[] {
  return [
    '| scenario | value | unit | ratio to hello-world | note |',
    '|---|---:|---|---:|---|',
    ...section.figures.map((f) => `| ${f.name} | ${f.value} | ${f.unit} | ${f.ratio ?? ''} | ${f.note ?? ''} |`),
  ];
}

/**
 * RESULTS.md after a run: `preamble` above the first section; each measured section's table (and the line naming
 * its run, `run`) in place of the one it had, or the section appended; all other lines as they were.
 */
export function mergeResults(previous: string, preamble: string[], run: string, measured: MeasuredSection[]): string {
  const lines = previous.split('\n');
  const firstSection = lines.findIndex((line) => line.startsWith('## '));
  const body = firstSection === -1 ? [] : lines.slice(firstSection);
  while (body.length > 0 && body.at(-1) === '') body.pop();
  for (const section of measured) {
    const block = [`${MEASURED}${run}.`, '', ...table(section)];
    const heading = body.indexOf(`## ${section.title}`);
    if (heading === -1) {
      body.push(...(body.length > 0 ? [''] : []), `## ${section.title}`, '', ...block);
      continue;
    }
    const next = body.findIndex((line, at) => at > heading && line.startsWith('## '));
    const end = next === -1 ? body.length : next;
    let at = heading + 1;
    while (at < end && body[at] === '') at++;
    const from = at;
    if (body[at]?.startsWith(MEASURED)) {
      at++;
      while (at < end && body[at] === '') at++;
    }
    if (!body[at]?.startsWith('|')) {
      // No table right under the heading (and its run's line): the new one goes there, the text after it stays.
      body.splice(from, at - from, ...block, '');
      continue;
    }
    let tableEnd = at;
    while (tableEnd < end && body[tableEnd]!.startsWith('|')) tableEnd++;
    body.splice(from, tableEnd - from, ...block);
  }
  return `${[...preamble, ...body].join('\n')}\n`;
}
