/**
 * Summarises V8 CPU profiles (`node --cpu-prof`, e.g. from BENCH_PG_CPU_PROF): the functions and
 * the packages (or source directories) with the most self time, as shares of the samples.
 * Usage: `node bench/cpu-profile-summary.ts dir-or-file.cpuprofile [top]`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const target = process.argv[2];
if (!target) throw new Error('usage: node bench/cpu-profile-summary.ts <dir|file.cpuprofile> [top]');
const top = Number(process.argv[3] ?? 25);
const files = statSync(target).isDirectory()
  ? readdirSync(target)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => path.join(target, f))
  : [target];

/** A package (node_modules/<name>), a source directory (src/db), node's internals, or V8's own. */
function area(url: string, name: string): string {
  if (!url) return `(${name || 'anonymous'})`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return url;
  const src = /\/(src|bench|bin)\/(.*)$/.exec(url);
  if (src) return `${src[1]}/${path.dirname(src[2]!)}`;
  return url;
}

const byFunction = new Map<string, number>();
const byArea = new Map<string, number>();
let total = 0;
for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  // Self time: each sample's delta is charged to the node it hit.
  profile.samples.forEach((id, i) => {
    const node = nodes.get(id)!;
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${url.replace(/^.*\/(node_modules|src|bench)\//, '$1/')}:${lineNumber + 1}` : '';
    const key = `${functionName || '(anonymous)'} ${where}`.trim();
    byFunction.set(key, (byFunction.get(key) ?? 0) + ms);
    const a = area(url, functionName);
    byArea.set(a, (byArea.get(a) ?? 0) + ms);
    total += ms;
  });
}
const list = (map: Map<string, number>) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, ms]) => `${((100 * ms) / total).toFixed(1).padStart(5)}%  ${key}`)
    .join('\n');
process.stdout.write(
  `${files.length} profile(s), ${(total / 1000).toFixed(1)} s sampled\n\nSelf time by package or source directory:\n${list(byArea)}\n\nSelf time by function:\n${list(byFunction)}\n`,
);
