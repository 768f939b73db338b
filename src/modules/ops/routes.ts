/** Liveness, readiness and Prometheus metrics (contract section 9). */
import { sql } from 'kysely';
import type { App } from '../../app.ts';
import type { AppContext } from '../../context.ts';

export function opsRoutes(ctx: AppContext) {
  return async function plugin(app: App): Promise<void> {
    const config = { auth: 'public' } as const;

    app.get('/health', { config, schema: { tags: ['operations'], summary: 'Liveness' } }, async () => ({ status: 'ok' }));

    app.get('/ready', { config, schema: { tags: ['operations'], summary: 'Readiness: the database answers and every module is loaded' } }, async (_request, reply) => {
      const checks: Record<string, boolean> = {};
      try {
        await sql`select 1`.execute(ctx.storage.db);
        checks.database = true;
      } catch {
        checks.database = false;
      }
      for (const [name, check] of ctx.readiness) {
        try {
          checks[name] = await check();
        } catch {
          checks[name] = false;
        }
      }
      const ready = Object.values(checks).every(Boolean);
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
    });

    app.get('/metrics', { config, schema: { hide: true } }, async (_request, reply) => {
      reply.header('content-type', ctx.metrics.contentType);
      return ctx.metrics.metrics();
    });
  };
}
