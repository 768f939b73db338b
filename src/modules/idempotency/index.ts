/**
 * The idempotency module's front door: the key store behind the Idempotency-Key header (the HTTP
 * layer's src/http/idempotency.ts uses it for the routes whose config says `idempotent: true`). It has
 * no routes of its own; expired keys are deleted by the retention module.
 */
import type { AppContext } from '../../context.ts';
import type { Module } from '../module.ts';
import { IdempotencyService } from './service.ts';

export function idempotencyModule(ctx: AppContext): Module & { keys: IdempotencyService } {
  const keys = new IdempotencyService({
    db: ctx.storage.db,
    masterKey: ctx.keys.masterKey,
    waitMs: ctx.config.idempotencyWaitMs,
  });
  return { name: 'idempotency', routes: async () => {}, keys };
}
