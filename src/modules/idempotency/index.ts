/**
 * The idempotency module's front door: the key store behind the Idempotency-Key header (the HTTP
 * layer's src/http/idempotency.ts uses it for the routes whose config says `idempotent: true`). It has
 * no routes of its own; expired keys are deleted by the retention module.
 */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { IdempotencyService } from './service.ts';

/** The app's one IdempotencyService (the HTTP layer's key store; privacy erases stored answers through it). */
export function idempotencyService(ctx: AppContext): IdempotencyService {
  return new IdempotencyService({
    db: ctx.storage.db,
    masterKey: ctx.keys.masterKey,
    waitMs: ctx.config.idempotencyWaitMs,
  });
}

export function idempotencyModule(keys: IdempotencyService): Module & { keys: IdempotencyService } {
  return { name: 'idempotency', routes: async () => {}, keys };
}
