/**
 * `npm run mutate`: mutation testing (Stryker) of the pure modules, each module against its own pure test files
 * (no database, no HTTP, so one mutant costs one short node process), and of the retention rules against their
 * test on SQLite (a fresh database per mutant, some seconds each). Writes bench/MUTATION.md: per module its
 * mutants, killed, survived, score and goal, and every surviving mutant, with why when it is equivalent.
 *
 *   npm run mutate                      every module, one after the other
 *   npm run mutate -- outbound signer   some modules (the others keep their last figures)
 *   MUTATE_CONCURRENCY=2 npm run mutate test processes at once (default 1)
 *   npm run mutate -- --report          the table again from the stored figures (after editing equivalents)
 *
 * Figures of the modules not run come from bench/mutation-results.json, which each run rewrites, so the table
 * always shows every module. Stryker's incremental file (reports/mutation/<module>.incremental.json) lets a
 * re-run test only the mutants whose code or tests changed.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { LogLevel } from '@stryker-mutator/api/core';
import { Stryker } from '@stryker-mutator/core';
import { MODULES, UNLISTED, type MutationModule, type Equivalent } from './mutation-modules.ts';

const root = path.resolve(import.meta.dirname, '..');
const resultsFile = path.join(root, 'bench/mutation-results.json');
const reportFile = path.join(root, 'bench/MUTATION.md');

interface Survivor {
  file: string;
  line: number;
  mutator: string;
  original: string;
  replacement: string;
  /** The whole source line, which an equivalent may name part of (`Equivalent.line`) to tell like mutants apart. */
  source: string;
  /** Why the mutant cannot be told apart from the code, when it is equivalent. */
  equivalent?: string;
}

interface ModuleResult {
  name: string;
  measured: string;
  mutants: number;
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  errors: number;
  survivors: Survivor[];
}

type StrykerResult = Awaited<ReturnType<Stryker['runMutationTest']>>[number];

/** The mutated source text (one line at most, shortened), the key an equivalent is listed under. */
function originalText(source: string[], result: StrykerResult): string {
  const { start, end } = result.location;
  const line = source[start.line - 1] ?? '';
  const text = start.line === end.line ? line.slice(start.column - 1, end.column - 1) : `${line.slice(start.column - 1)} …`;
  return text.trim();
}

function oneLine(text: string, max = 90): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function matchEquivalent(list: readonly Equivalent[], survivor: Survivor): Equivalent | undefined {
  return list.find(
    (e) =>
      e.file === survivor.file &&
      e.mutator === survivor.mutator &&
      oneLine(e.original) === oneLine(survivor.original) &&
      oneLine(e.replacement) === oneLine(survivor.replacement) &&
      (e.line === undefined || (survivor.source ?? '').includes(e.line)),
  );
}

async function measure(module: MutationModule, concurrency: number): Promise<ModuleResult> {
  const stryker = new Stryker({
    testRunner: 'tap',
    plugins: ['@stryker-mutator/tap-runner'],
    mutate: module.mutate ?? module.files,
    tap: { testFiles: module.tests },
    coverageAnalysis: 'perTest',
    concurrency,
    // The sandbox needs only the sources, tests and the catalogue's data files (synonyms); without tsconfig.json Stryker does not reach for the
    // TypeScript compiler API (TypeScript 7 has none), and Node strips the types itself.
    ignorePatterns: ['/*', '!/src', '!/test', '!/catalogue', '!/package.json'],
    tempDirName: '.stryker-tmp',
    cleanTempDir: 'always',
    incremental: true,
    incrementalFile: `reports/mutation/${module.name}.incremental.json`,
    reporters: ['progress-append-only'],
    logLevel: 'warn' as LogLevel,
  });
  const results = await stryker.runMutationTest();
  const sources = new Map(module.files.map((file) => [file, readFileSync(path.join(root, file), 'utf8').split('\n')]));
  const count = (status: string) => results.filter((r) => r.status === status).length;
  const survivors: Survivor[] = [];
  for (const result of results) {
    if (result.status !== 'Survived' && result.status !== 'NoCoverage') continue;
    const file = path.relative(root, path.resolve(root, result.fileName));
    const survivor: Survivor = {
      file,
      line: result.location.start.line,
      mutator: result.mutatorName,
      original: originalText(sources.get(file) ?? [], result),
      replacement: oneLine(result.replacement ?? ''),
      source: (sources.get(file)?.[result.location.start.line - 1] ?? '').trim(),
    };
    survivors.push(survivor);
  }
  survivors.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
  return {
    name: module.name,
    measured: new Date().toISOString().slice(0, 10),
    mutants: results.filter((r) => r.status !== 'Ignored' && r.status !== 'CompileError').length,
    killed: count('Killed'),
    timeout: count('Timeout'),
    survived: count('Survived'),
    noCoverage: count('NoCoverage'),
    errors: count('RuntimeError') + count('CompileError'),
    survivors,
  };
}

function percent(part: number, whole: number): string {
  return whole === 0 ? '–' : `${(Math.floor((part / whole) * 1000) / 10).toFixed(1)} %`;
}

function writeReport(results: Map<string, ModuleResult>): void {
  const lines = [
    '# Mutation testing of the pure modules',
    '',
    'Written by `npm run mutate` (`bench/mutate.ts`; modules, their tests and goals in `bench/mutation-modules.ts`).',
    'Stryker changes one thing at a time in a module (an operator, a condition, a literal, a regular expression, a',
    'statement removed) and runs the module’s own test files against each change (pure ones, no database and no server,',
    'but for the retention rules, which only a database evaluates: their test runs on SQLite): a change no test notices',
    '*survives*. Score: killed and timed out over all mutants (survivors and mutants no test reaches count against it);',
    'a mutant times out when its tests take longer than their own time × 1.5 + 5 s (Stryker counts it as detected).',
    'Goal: 90 % for the security-relevant modules, 80 % for the rest, of the mutants that are not equivalent: survivors',
    'that cannot change behaviour (equivalent mutants) are listed with why below, and counted in the first score too.',
    '',
    '| module | files | mutants | killed | timed out | survived | no coverage | score | equivalent | score, equivalents aside | goal | measured |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|',
  ];
  // Equivalents are matched when the report is written, so a reason added to the list shows without a re-run.
  for (const module of MODULES) {
    for (const survivor of results.get(module.name)?.survivors ?? []) survivor.equivalent = matchEquivalent(module.equivalent ?? [], survivor)?.why;
  }
  for (const module of MODULES) {
    const result = results.get(module.name);
    const files = module.files.map((f) => `\`${f.replace(/^src\//, '')}\`${module.mutate ? ' (part)' : ''}`).join(', ');
    if (!result) {
      lines.push(`| ${module.name} | ${files} | | | | | | not measured yet | | | ${module.goal} % | |`);
      continue;
    }
    const equivalents = result.survivors.filter((s) => s.equivalent).length;
    const detected = result.killed + result.timeout;
    const met = (detected / (result.mutants - equivalents)) * 100 >= module.goal ? 'met' : 'missed';
    lines.push(
      `| ${module.name} | ${files} | ${result.mutants} | ${result.killed} | ${result.timeout} | ${result.survived} | ${result.noCoverage} | ${percent(detected, result.mutants)} | ${equivalents} | ${percent(detected, result.mutants - equivalents)} | ${module.goal} % (${met}) | ${result.measured} |`,
    );
  }
  if (UNLISTED.length > 0) lines.push('', 'Not measured yet:', '');
  for (const item of UNLISTED) lines.push(`- ${item.what} (${item.files.map((f) => `\`${f}\``).join(', ')}): ${item.why}.`);
  lines.push('', 'Test files per module:', '');
  for (const module of MODULES) lines.push(`- ${module.name}: ${module.tests.map((t) => `\`${t}\``).join(', ')}`);
  for (const module of MODULES) {
    const result = results.get(module.name);
    if (!result || result.survivors.length === 0) continue;
    const equivalents = result.survivors.filter((s) => s.equivalent);
    const open = result.survivors.filter((s) => !s.equivalent);
    lines.push('', `## ${module.name}`, '');
    if (module.note) lines.push(module.note, '');
    if (equivalents.length > 0) {
      lines.push('Equivalent (no test can tell them apart from the code):', '');
      for (const s of equivalents)
        lines.push(`- \`${s.file}:${s.line}\` ${s.mutator} \`${oneLine(s.original, 70)}\` → \`${oneLine(s.replacement, 50)}\`: ${s.equivalent}`);
      lines.push('');
    }
    if (open.length > 0) {
      lines.push('Not yet killed (a test could notice them):', '');
      for (const s of open) lines.push(`- \`${s.file}:${s.line}\` ${s.mutator} \`${oneLine(s.original, 70)}\` → \`${oneLine(s.replacement, 50)}\``);
    }
  }
  writeFileSync(reportFile, `${lines.join('\n').replaceAll('`` ', '` ` ').trimEnd()}\n`);
}

const reportOnly = process.argv.includes('--report');
const wanted = process.argv.slice(2).filter((arg) => arg !== '--report');
const unknown = wanted.filter((name) => !MODULES.some((m) => m.name === name));
if (unknown.length > 0) {
  console.error(`unknown module(s): ${unknown.join(', ')}; known: ${MODULES.map((m) => m.name).join(', ')}`);
  process.exit(2);
}
const concurrency = Number(process.env.MUTATE_CONCURRENCY ?? 1);
const stored: ModuleResult[] = existsSync(resultsFile) ? JSON.parse(readFileSync(resultsFile, 'utf8')) : [];
const results = new Map(stored.filter((r) => MODULES.some((m) => m.name === r.name)).map((r) => [r.name, r]));
for (const module of MODULES) {
  if (reportOnly || (wanted.length > 0 && !wanted.includes(module.name))) continue;
  console.log(`== ${module.name}: ${module.files.join(', ')}`);
  const result = await measure(module, concurrency);
  results.set(module.name, result);
  console.log(
    `   ${result.mutants} mutants, ${result.killed + result.timeout} killed, ${result.survived} survived, ${result.noCoverage} not covered: ${percent(result.killed + result.timeout, result.mutants)}`,
  );
  writeFileSync(resultsFile, `${JSON.stringify([...results.values()], (key, value) => (key === 'equivalent' ? undefined : value), 1)}\n`);
  writeReport(results);
}
writeReport(results);
