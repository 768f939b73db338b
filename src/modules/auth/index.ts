/** The auth module's front door: login, refresh and the public keys, with login throttling. */
import type { AppContext } from '../../context.ts';
import type { BusinessService } from '../businesses/service.ts';
import type { Module } from '../module.ts';
import { authRoutes } from './routes.ts';
import { AuthService } from './service.ts';
import { LoginGuard } from './throttle.ts';

/** Revokes a disabled client's refresh tokens: the businesses service runs it in the transaction that disables the client. */
export { revokeClientTokens } from './repo.ts';

export interface AuthModule extends Module {
  /** The app's login throttling (tests reach its clock). */
  readonly guard: LoginGuard;
  /** Checks client credentials (the console's sign-in uses it). */
  readonly service: AuthService;
}

export function authModule(ctx: AppContext, businesses: BusinessService): AuthModule {
  const { config } = ctx;
  const guard = new LoginGuard({
    clientFailures: config.loginClientFailures,
    addressFailures: config.loginAddressFailures,
    windowSeconds: config.loginFailureWindowSeconds,
    hashConcurrency: config.loginHashConcurrency,
    hashQueue: config.loginHashQueue,
    redisUrl: config.redisUrl,
    logger: ctx.logger,
    metrics: ctx.metrics,
  });
  const db = ctx.storage.db;
  const service = new AuthService({
    db,
    tokens: ctx.tokens,
    refreshTtlSeconds: config.refreshTokenTtl,
    guard,
    businesses,
  });
  return { name: 'auth', routes: authRoutes(service, ctx.tokens), guard, service, stop: () => guard.close() };
}
