/** Liveness, readiness and Prometheus metrics (contract section 9). */
import type { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { App } from '../../http/app-type.ts';
import type { AppContext } from '../../context.ts';

/** Each readiness check gets this long: /ready answers within it even when the database does not. */
export const READY_CHECK_TIMEOUT_MS = 2000;

/** False when `check` fails, or has not answered within the timeout. */
async function passes(check: () => boolean | Promise<boolean>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), READY_CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      Promise.resolve()
        .then(check)
        .catch(() => false),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function opsRoutes(ctx: AppContext, redis: Redis | null) {
  return async function plugin(app: App): Promise<void> {
    const config = { auth: 'public' } as const;

    app.get('/health', { config, schema: { tags: ['operations'], summary: 'Liveness' } }, async () => ({ status: 'ok' }));

    app.get(
      '/ready',
      {
        config,
        schema: { tags: ['operations'], summary: 'Readiness: the database (and the Redis of CPS_REDIS_URL) answers and every module is loaded' },
      },
      async (_request, reply) => {
        const names = ['database', ...(redis ? ['redis'] : []), ...ctx.readiness.keys()];
        const results = await Promise.all([
          passes(async () => {
            await sql`select 1`.execute(ctx.storage.db);
            return true;
          }),
          ...(redis ? [passes(async () => (await redis.ping()) === 'PONG')] : []),
          ...[...ctx.readiness.values()].map(passes),
        ]);
        const checks: Record<string, boolean> = Object.fromEntries(names.map((name, i) => [name, results[i]!]));
        const ready = Object.values(checks).every(Boolean);
        return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
      },
    );

    app.get('/metrics', { config, schema: { hide: true } }, async (_request, reply) => {
      reply.header('content-type', ctx.metrics.contentType);
      return ctx.metrics.metrics();
    });
  };
}
