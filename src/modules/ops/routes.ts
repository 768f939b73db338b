/** Liveness, readiness and Prometheus metrics (contract section 9). */
import type { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { App } from '../../http/app-type.ts';
import type { AppContext } from '../../context.ts';
import { lastFinished, queueDepth } from '../../jobs/queue-repo.ts';
import { StandardError } from '../../http/schemas.ts';
import { Type } from 'typebox';
import { RETENTION_JOB } from '../retention/index.ts';
import { BACKUP_RUNS_LISTED, lastBackupRuns } from './backup-runs.ts';

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

const BackupRun = Type.Object({
  command: Type.Union([Type.Literal('backup'), Type.Literal('restore')]),
  started_at: Type.Integer({ description: 'epoch ms' }),
  finished_at: Type.Integer({ description: 'epoch ms' }),
  outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
  bytes: Type.Union([Type.Integer({ description: 'the size of the copy written (backup) or put in place (restore)' }), Type.Null()]),
  file: Type.Union([Type.String({ description: "the file's name, without its directory" }), Type.Null()]),
  error: Type.Union([Type.String({ description: 'why it failed, each path cut to its file name' }), Type.Null()]),
});

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

    app.get(
      '/admin/v1/operations',
      {
        config: { family: 'standard', auth: 'admin' },
        schema: {
          tags: ['admin'],
          summary:
            "The job queue's depth (jobs pending, running and failed, by kind, as the cps_jobs metric counts them), retention's last run and the last runs of cps backup and cps restore",
          description: `Each run of cps backup and cps restore is recorded by the command in the database it copies or restores (on PostgreSQL, whose backups are pg_dump's, the commands' refusals): the last ${BACKUP_RUNS_LISTED}, newest first, and the last backup that succeeded.`,
          response: {
            200: Type.Object({
              queue: Type.Array(
                Type.Object({
                  kind: Type.String(),
                  status: Type.String(),
                  count: Type.Integer(),
                }),
              ),
              retention: Type.Object({
                last_run: Type.Union([
                  Type.Object({
                    status: Type.String(),
                    finished_at: Type.Integer({ description: 'epoch ms' }),
                    last_error: Type.Union([Type.String(), Type.Null()]),
                  }),
                  Type.Null(),
                ]),
              }),
              backups: Type.Object({ runs: Type.Array(BackupRun), last_succeeded: Type.Union([BackupRun, Type.Null()]) }),
            }),
            401: StandardError,
          },
        },
      },
      async () => ({
        queue: await queueDepth(ctx.storage.db),
        retention: { last_run: await lastFinished(ctx.storage.db, RETENTION_JOB) },
        backups: await lastBackupRuns(ctx.storage.db),
      }),
    );

    app.get('/metrics', { config, schema: { hide: true } }, async (_request, reply) => {
      reply.header('content-type', ctx.metrics.contentType);
      return ctx.metrics.metrics();
    });
  };
}
