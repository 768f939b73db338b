/**
 * Highlighting: the parts of a hit's fields that the query matched, wrapped in <em> with the rest
 * HTML-escaped. It reads what the search returned (the hit's name-prefix match and typo matches).
 */
import type { Hit } from './engine.ts';
import type { DrugRecord } from './model.ts';
import { spans, words } from './normalize.ts';
import type { ParsedQuery } from './query.ts';
import { confusableOf, isJoinedName, joinedNamesIn, synonymsOf } from './synonyms.ts';

/**
 * Highlight ranges in `text` for a parsed query: whole words that matched exactly or by typo
 * tolerance (`typoMatches`, per query word, as the search returned them), the typed part of prefix
 * matches, and (when the name matched by starting with the query) the leading part of the name that
 * the query covers.
 */
export function highlightRanges(
  text: string,
  query: ParsedQuery,
  typoMatches: ReadonlyArray<ReadonlySet<string>>,
  namePrefix: boolean,
): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  const list = spans(text);
  if (namePrefix && query.compact !== '') {
    const nameCompact = list.map((span) => span.word).join('');
    let remaining = (nameCompact.startsWith(query.compact) ? query.compact : query.compactCore).length;
    for (const span of list) {
      if (remaining <= 0) break;
      const take = Math.min(span.word.length, remaining);
      ranges.push([span.start, span.start + Math.min(take, span.end - span.start)]);
      remaining -= span.word.length;
    }
  }
  // Official names of several words matched as one (synonyms.ts): the run of words that spells one.
  const joined = query.words.flatMap((word) => word.exact).filter(isJoinedName);
  if (joined.length > 0) {
    const names = joinedNamesIn(list.map((span) => span.word));
    for (let i = 0; names.length > 0 && i < list.length; i++) {
      let text = list[i]!.word;
      for (let j = i + 1; j < list.length && j < i + 4; j++) {
        text += list[j]!.word;
        if (joined.includes(text)) ranges.push([list[i]!.start, list[j]!.end]);
      }
    }
  }
  for (const span of list) {
    for (const [slot, word] of query.words.entries()) {
      if (word.exact.includes(span.word) || typoMatches[slot]?.has(span.word)) {
        ranges.push([span.start, span.end]);
        break;
      }
      if (word.prefix && span.word.startsWith(word.text)) {
        ranges.push([span.start, Math.min(span.end, span.start + word.text.length)]);
        break;
      }
    }
  }
  return ranges;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** Wraps [start, end) ranges of `text` in <em>..</em>, escaping everything else. Ranges may overlap. */
export function highlight(text: string, ranges: Array<[number, number]>): string {
  if (ranges.length === 0) return escapeHtml(text);
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else merged.push([range[0], range[1]]);
  }
  let out = '';
  let at = 0;
  for (const [start, end] of merged) {
    out += `${escapeHtml(text.slice(at, start))}<em>${escapeHtml(text.slice(start, end))}</em>`;
    at = end;
  }
  return out + escapeHtml(text.slice(at));
}

/** The highlighted name and composition of a drug hit; null when nothing in them matched. */
export function drugHighlights(hit: Hit<DrugRecord>, query: ParsedQuery): Record<string, string> | null {
  const record = hit.record;
  const out: Record<string, string> = {};
  const fields: Array<[string, string, boolean]> = [
    ['name', record.name, hit.namePrefix],
    ['generic_name', record.generic_name, false],
    ['common_name', record.common_name, false],
  ];
  for (const [field, text, prefix] of fields) {
    const ranges = highlightRanges(text, query, hit.typoMatches, prefix);
    if (ranges.length > 0) out[field] = highlight(text, ranges);
  }
  return Object.keys(out).length > 0 ? out : null;
}

/**
 * The look-alike/sound-alike warning of a drug: each name of its name or composition that ISMP lists as
 * confused with another name the catalogue holds (`inCatalogue`), in tall-man letters, as
 * "hydrOXYzine: may be confused with hydrALAZINE (ISMP)"; null when there is none.
 */
export function lookAlikeWarning(record: DrugRecord, inCatalogue: (word: string) => boolean): string | null {
  const warnings: string[] = [];
  const seen = new Set<string>();
  for (const word of [...words(record.name), ...words(record.common_name)]) {
    if (seen.has(word)) continue;
    seen.add(word);
    const confusable = confusableOf(word);
    if (!confusable) continue;
    // A twin counts when the catalogue holds it under any of its official names (glyBURIDE as glibenclamide).
    const twins = confusable.twins.filter((twin) => [twin.toLowerCase(), ...synonymsOf(twin.toLowerCase())].some(inCatalogue));
    if (twins.length > 0) warnings.push(`${confusable.written}: may be confused with ${twins.join(', ')} (ISMP)`);
  }
  return warnings.length > 0 ? escapeHtml(warnings.join('; ')) : null;
}
