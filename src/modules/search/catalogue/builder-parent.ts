/**
 * The builder process, seen from the catalogue (its parent): forks builder-child.ts (or takes the spare
 * that `cps serve` forked first thing), which builds the index from the database and writes its
 * snapshot file, and settles once the file is written. A first load of a large catalogue builds there,
 * and so do later rebuilds of it (after many changes) until one fails.
 */
import { fork, type ChildProcess } from 'node:child_process';
import module from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';

const BUILDER_SCRIPT = fileURLToPath(new URL('./builder-child.ts', import.meta.url));

let spare: ChildProcess | null = null;

/**
 * Forks builder-child.ts before its task is known: `cps serve` does it first thing, so that the
 * builder's start (Node and its modules, about 0.2 s) goes on while the server loads its own, and a
 * start that has to build hands the task to a process ready for it. Unused, it waits without holding
 * this process open, and exits once released (releaseSpareBuilder) or once this process is gone.
 */
export function forkSpareBuilder(): void {
  if (spare) return;
  const child = forkBuilder();
  child.unref();
  child.channel?.unref();
  child.once('exit', () => {
    if (spare === child) spare = null;
  });
  spare = child;
}

/** Lets the spare builder process go: the catalogue loaded without it. */
export function releaseSpareBuilder(): void {
  const child = spare;
  spare = null;
  if (child?.connected) child.disconnect();
}

/** The spare builder process waiting for a task, if any (tests watch it). */
export function spareBuilder(): ChildProcess | null {
  return spare;
}

/** The spare builder process, if it is still there, now held like one forked for its task. */
function takeSpare(): ChildProcess | null {
  const child = spare;
  spare = null;
  if (!child?.connected || child.exitCode !== null) return null;
  child.ref();
  child.channel?.ref();
  return child;
}

/**
 * Forks builder-child.ts with Node's memory flags (npm start's), not a test runner's; the task (with
 * the database URL) goes over IPC, not argv; this process's compile cache (bin/cps.js), if any, serves
 * its modules.
 */
function forkBuilder(): ChildProcess {
  const cacheDir = module.getCompileCacheDir?.();
  return fork(BUILDER_SCRIPT, [], {
    execArgv: process.execArgv.filter((flag) => flag.startsWith('--max-')),
    env: cacheDir ? { ...process.env, NODE_COMPILE_CACHE: cacheDir } : process.env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** The task the catalogue sends to the builder process (builder-child.ts), as its one IPC message. */
export interface IndexBuilderData {
  databaseUrl: string | null;
  dataDir: string;
  snapshotFile: string;
  logLevel: string;
  storedSnapshotMinDrugs: number | null;
}

export interface IndexBuilderOptions {
  databaseUrl: string | null;
  dataDir: string;
  /** Catalogues from this many drugs up are built in the builder process. */
  minDrugs: number;
  logLevel: string;
}

export class IndexBuilder {
  readonly minDrugs: number;
  private readonly data: IndexBuilderData;
  private readonly logger: Logger;
  private child: ChildProcess | null = null;
  /** A rebuild running in the builder process (see rebuild). */
  private rebuilding: Promise<void> | null = null;
  /** A rebuild finished: the next refresh reads its snapshot first. */
  private rebuilt = false;
  /** A rebuild failed: later rebuilds run in the serving process. */
  private failed = false;
  private stopped = false;

  constructor(options: IndexBuilderOptions, snapshot: { file: string; storedSnapshotMinDrugs: number | null }, logger: Logger) {
    this.minDrugs = options.minDrugs;
    this.data = {
      databaseUrl: options.databaseUrl,
      dataDir: options.dataDir,
      snapshotFile: snapshot.file,
      logLevel: options.logLevel,
      storedSnapshotMinDrugs: snapshot.storedSnapshotMinDrugs,
    };
    this.logger = logger;
  }

  /** Whether rebuilds of a catalogue of `drugs` drugs run here: large enough, and no failure so far. */
  rebuilds(drugs: number): boolean {
    return !this.failed && !this.stopped && drugs >= this.minDrugs;
  }

  /** Later rebuilds run in the serving process (the builder's snapshot was not usable). */
  fail(): void {
    this.failed = true;
  }

  /** Whether a rebuild finished since the last call: its snapshot is to be read. */
  takeRebuilt(): boolean {
    const rebuilt = this.rebuilt;
    this.rebuilt = false;
    return rebuilt;
  }

  /**
   * Starts a rebuild unless one is running; `apply` (the catalogue's refresh) then takes the result
   * at once rather than at the next poll.
   */
  rebuild(apply: () => Promise<void>): void {
    this.rebuilding ??= (async () => {
      const started = performance.now();
      try {
        await this.run();
        this.rebuilt = true;
        this.logger.info({ build_ms: Math.round(performance.now() - started) }, 'search index rebuilt in the builder process');
      } catch (error) {
        if (this.stopped) return;
        this.failed = true;
        this.logger.warn({ err: error }, 'search index rebuild in the builder process failed; rebuilding here from now on');
      } finally {
        this.rebuilding = null;
      }
      // A refresh already running did not see the result.
      if (!this.stopped) await apply();
      if (this.rebuilt && !this.stopped) await apply();
    })().catch((error: unknown) => this.logger.warn({ err: error }, 'catalogue refresh failed; will retry'));
  }

  /**
   * Runs builder-child.ts in a process of its own: it builds from the database and writes the snapshot
   * file. Settles once the file is written: the builder may go on storing it in the database.
   */
  async run(): Promise<void> {
    try {
      await new Promise<void>((resolve, reject) => {
        const child = takeSpare() ?? forkBuilder();
        this.child = child;
        child.once('error', reject);
        child.once('message', () => resolve());
        child.once('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`index builder exited with ${signal ?? `code ${code}`}`))));
        child.send(this.data);
      });
    } finally {
      this.child = null;
    }
  }

  /** Kills a running builder; settles once a rebuild in progress has. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.child?.kill();
    await Promise.allSettled([this.rebuilding]);
  }
}
