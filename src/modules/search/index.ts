/** The search module's front door: the drug and lab catalogue, its route, and the import commands. */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { Catalogue, LARGE_CATALOGUE_DRUGS } from './catalogue/catalogue.ts';
import { snapshotFileFor } from './catalogue/snapshots.ts';
import { createSearchRateLimiter } from './ratelimit.ts';
import { searchRoutes } from './routes.ts';
import { SearchService } from './search.ts';

export { refreshIndexSnapshot, runImport } from './import-command.ts';

export interface SearchModule extends Module {
  /** The catalogue this app serves (tests import into it and refresh it). */
  readonly catalogue: Catalogue;
}

export function searchModule(ctx: AppContext): SearchModule {
  const { config } = ctx;
  const catalogue = new Catalogue(ctx.storage.db, ctx.logger, {
    snapshotFile: snapshotFileFor(config.dataDir, config.databaseUrl),
    builder: { databaseUrl: config.databaseUrl, dataDir: config.dataDir, minDrugs: LARGE_CATALOGUE_DRUGS, logLevel: config.logLevel },
    storedSnapshotMinDrugs: LARGE_CATALOGUE_DRUGS,
  });
  const search = new SearchService({ catalogue, cacheBytes: config.searchCacheBytes });
  const limiter = createSearchRateLimiter({
    rate: config.searchRateLimit,
    burst: config.searchRateBurst,
    redisUrl: config.redisUrl,
    logger: ctx.logger,
  });
  let loading: Promise<void> | null = null;
  return {
    name: 'search',
    catalogue,
    routes: searchRoutes(ctx, search, limiter),
    // The slowest part of a start (reading the index snapshot, or building the index in the builder
    // process). A failed load is logged here: the process still starts, /ready says 503, and the
    // next search retries it.
    start: () => (loading ??= catalogue.start().catch((error: unknown) => ctx.logger.error({ err: error }, 'search catalogue failed to load'))),
    ready: () => catalogue.loaded,
    stop: async () => {
      await catalogue.stop();
      await limiter.close();
    },
  };
}
