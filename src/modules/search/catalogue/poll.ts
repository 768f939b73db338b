/**
 * The catalogue's poll: a refresh every interval, each one after the previous one settled. A failing
 * refresh (the database is away) is logged once per outage, and so is its recovery.
 */
import type { Logger } from 'pino';
import { errorLogFields } from '../../../db/unavailable.ts';

export class Poller {
  private readonly refresh: () => Promise<void>;
  private readonly intervalMs: number;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | null = null;
  /** The last refresh failed: its recovery is logged. */
  private failing = false;
  private stopped = false;

  constructor(refresh: () => Promise<void>, intervalMs: number, logger: Logger) {
    this.refresh = refresh;
    this.intervalMs = intervalMs;
    this.logger = logger;
  }

  start(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.refresh()
        .then(
          () => {
            if (this.failing) this.logger.info('catalogue refresh works again');
            this.failing = false;
          },
          (error: unknown) => {
            // Once per outage: the poll goes on at its interval until the database answers.
            if (!this.failing) this.logger.warn(errorLogFields(error), 'catalogue refresh failed; will retry');
            this.failing = true;
          },
        )
        .finally(() => this.start());
    }, this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
