import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { after, before, beforeEach, describe, it } from 'node:test';
import { inTransaction } from '../../src/db/index.ts';
import { enqueue, getJob, listJobs } from '../../src/jobs/queue-repo.ts';
import { DIALECT } from '../support.ts';
import { createJobsFixture, until, type JobsFixture } from './support.ts';

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url));

interface Child {
  process: ChildProcess;
  stdout: string[];
  stderr: string[];
  ran(): string[];
}

describe(`jobs across processes (${DIALECT})`, () => {
  let f: JobsFixture;
  const children: Child[] = [];
  before(async () => {
    f = await createJobsFixture({ lockTtlMs: 1000 });
  });
  beforeEach(async () => f.reset());
  after(async () => {
    for (const child of children) if (child.process.exitCode === null) child.process.kill('SIGKILL');
    await f.close();
  });

  function startChild(env: Record<string, string> = {}): Child {
    const proc = spawn(process.execPath, [CHILD], {
      env: {
        ...process.env,
        CHILD_DATABASE_URL: f.database.databaseUrl ?? '',
        CHILD_DATA_DIR: f.database.dataDir,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const child: Child = {
      process: proc,
      stdout: [],
      stderr: [],
      ran: () => child.stdout.filter((line) => line.startsWith('ran ')).map((line) => line.slice(4)),
    };
    const collect = (stream: NodeJS.ReadableStream, lines: string[]) => {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const parts = (rest + chunk).split('\n');
        rest = parts.pop()!;
        lines.push(...parts);
      });
    };
    collect(proc.stdout!, child.stdout);
    collect(proc.stderr!, child.stderr);
    children.push(child);
    return child;
  }

  const seen = (lines: string[], pattern: RegExp) => until(() => lines.some((line) => pattern.test(line)));

  async function stopChild(child: Child, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (child.process.exitCode !== null || child.process.signalCode !== null) return;
    const exited = once(child.process, 'exit');
    child.process.kill(signal);
    await exited;
  }

  it('a worker killed with SIGKILL mid-job has its job run again after the lease', async () => {
    const id = await enqueue(f.storage.db, { kind: 'test.block', payload: {} });
    const doomed = startChild({ CHILD_LEASE_MS: '1000' });
    await seen(doomed.stdout, new RegExp(`^started ${id}$`));
    await stopChild(doomed, 'SIGKILL');
    assert.equal((await getJob(f.storage.db, id))?.status, 'running');

    const ranHere: number[] = [];
    f.queue.register('test.block', async ({ job }) => {
      ranHere.push(job.attempts);
    });
    await f.queue.start();
    await until(async () => (await getJob(f.storage.db, id))?.status === 'succeeded');
    assert.deepEqual(ranHere, [2], 'run once more, as the second attempt');
  });

  it('two processes on PostgreSQL with 1,000 jobs run each exactly once', { skip: DIALECT !== 'postgres' && 'PostgreSQL only' }, async () => {
    const workers = [startChild(), startChild()];
    for (const worker of workers) await seen(worker.stdout, /^ready working=true$/);
    const ids = new Set<string>();
    for (let batch = 0; batch < 10; batch++) {
      await inTransaction(f.storage.db, async (trx) => {
        for (let i = 0; i < 100; i++) ids.add(await enqueue(trx, { kind: 'test.count', payload: { i } }));
      });
    }
    await until(() => workers.reduce((n, worker) => n + worker.ran().length, 0) >= 1000, 50);
    for (const worker of workers) await stopChild(worker);
    assert.equal((await listJobs(f.storage.db, { status: 'succeeded', limit: 1000 })).length, 1000);

    const ran = workers.flatMap((worker) => worker.ran());
    assert.equal(ran.length, 1000, 'no job ran twice');
    assert.deepEqual(new Set(ran), ids);
    assert.ok(
      workers.every((worker) => worker.ran().length > 0),
      `both processes took work: ${workers.map((w) => w.ran().length)}`,
    );
    const attempts = await f.storage.db.selectFrom('jobs').select('attempts').distinct().execute();
    assert.deepEqual(
      attempts.map((row) => row.attempts),
      [1],
    );
  });

  it('on SQLite a second process does not run workers, says so, and takes over when the first stops', {
    skip: DIALECT !== 'sqlite' && 'SQLite only',
  }, async () => {
    const first = startChild();
    await seen(first.stdout, /^ready working=true$/);
    const second = startChild();
    await seen(second.stdout, /^ready working=false$/);
    await seen(second.stderr, /another process runs the job workers for this SQLite database; this one does not/);

    const ids = await inTransaction(f.storage.db, async (trx) => {
      const added: string[] = [];
      for (let i = 0; i < 20; i++) added.push(await enqueue(trx, { kind: 'test.count', payload: { i } }));
      return added;
    });
    await until(() => first.ran().length === 20);
    assert.deepEqual(new Set(first.ran()), new Set(ids));
    assert.deepEqual(second.ran(), []);

    await stopChild(first);
    await seen(second.stderr, /took over the job workers/);
    const last = await enqueue(f.storage.db, { kind: 'test.count', payload: {} });
    await until(() => second.ran().includes(last));
    await stopChild(second);
  });
});
