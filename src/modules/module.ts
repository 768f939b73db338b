/**
 * A module's front door (its index.ts returns one): what the application needs of it. Job kinds and
 * event hooks are registered when the module is created, so they exist before any worker starts.
 */
import type { App } from '../http/app-type.ts';

export interface Module {
  readonly name: string;
  /** Its routes, as a Fastify plugin. */
  readonly routes: (app: App) => Promise<void>;
  /** Begins slow work, once (loading the search index); the app is ready when it settles. */
  readonly start?: () => Promise<void>;
  /** Whether it can serve now: one of the checks of /ready. */
  readonly ready?: () => boolean | Promise<boolean>;
  /** Releases its timers and connections when the app closes, after the jobs have stopped. */
  readonly stop?: () => Promise<void>;
}
