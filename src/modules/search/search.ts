/**
 * Drug and lab-test search as the route runs it: the query checked and parsed, the catalogue searched,
 * drug hits highlighted, and the serialized answer cached by query for the catalogue's version.
 */
import { AppError } from '../../errors.ts';
import type { Catalogue } from './catalogue/catalogue.ts';
import { drugHighlights, lookAlikeWarning } from './index/highlight.ts';
import { drugResponse, labResponse, type DrugResponse, type LabResponse } from './index/model.ts';
import { parseQuery } from './index/query.ts';
import { ResponseCache, type CachedResponse } from './response-cache.ts';

export interface SearchRequest {
  /** The search text as given (checked here: 1 to 200 characters after trimming). */
  q: string;
  limit: number;
  s_type: 'drug' | 'lab';
}

export interface SearchResult {
  drugs: DrugResponse[];
  lab_tests: LabResponse[];
}

/** The answer's body, from the result and its status (the route's response serializer). */
export type SerializeResult = (status: 200 | 404, result: SearchResult) => string;

export interface SearchServiceDeps {
  catalogue: Catalogue;
  /** The response cache's budget; no cache when 0. */
  cacheBytes: number;
}

export class SearchService {
  readonly #catalogue: Catalogue;
  readonly #cache: ResponseCache | null;

  constructor(deps: SearchServiceDeps) {
    this.#catalogue = deps.catalogue;
    this.#cache = deps.cacheBytes > 0 ? new ResponseCache(deps.cacheBytes) : null;
  }

  /**
   * The answer to a search: 200 with what matched, or 404 with empty lists. The same text again is
   * answered synchronously from the cache, before it is parsed (no promise for the caller to wait on);
   * other texts with the same words (other case, spacing, punctuation) share the answer stored under
   * the words. Keys of the two kinds differ in their separators, so a text never reads a words key.
   */
  answer(request: SearchRequest, serialize: SerializeResult): CachedResponse | Promise<CachedResponse> {
    const { q: text, limit, s_type: type } = request;
    const catalogue = this.#catalogue;
    const textKey = `${type}:${limit}:${text}`;
    const cached = catalogue.loaded ? this.#cache?.get(catalogue.version, textKey) : undefined;
    if (cached !== undefined) return cached;
    return this.#search(textKey, text, limit, type, serialize);
  }

  async #search(textKey: string, text: string, limit: number, type: SearchRequest['s_type'], serialize: SerializeResult): Promise<CachedResponse> {
    const catalogue = this.#catalogue;
    const cache = this.#cache;
    const q = text.trim();
    if (q.length === 0) throw new AppError(400, 'q: must not be empty');
    if ([...q].length > 200) throw new AppError(400, 'q: must be at most 200 characters');
    if (!catalogue.loaded) await catalogue.start();
    const version = catalogue.version;
    const query = parseQuery(q);
    // The answer depends only on the query's words, the type and the limit (and the catalogue version).
    const wordsKey = `${type} ${limit} ${query.words.map((word) => word.text).join(' ')}`;
    let answer = cache?.get(version, wordsKey);
    if (answer === undefined) {
      const result: SearchResult =
        type === 'lab'
          ? { drugs: [], lab_tests: catalogue.labs.search(query, limit).map((hit) => labResponse(hit.record)) }
          : {
              drugs: catalogue.drugs.search(query, limit).map((hit) => {
                const highlighted = drugHighlights(hit, query);
                // A known look-alike/sound-alike name rides in highlighted_fields, whose keys are free-form (interface 2.1).
                const lookAlike = lookAlikeWarning(hit.record, (word) => catalogue.drugs.hasWord(word));
                return drugResponse(hit.record, hit.exact, lookAlike === null ? highlighted : { ...highlighted, look_alike: lookAlike });
              }),
              lab_tests: [],
            };
      const status = result.drugs.length + result.lab_tests.length === 0 ? 404 : 200;
      answer = { status, body: Buffer.from(serialize(status, result)) };
      cache?.set(version, wordsKey, answer);
    }
    cache?.set(version, textKey, answer);
    return answer;
  }
}
