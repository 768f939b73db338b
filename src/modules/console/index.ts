/** The browser console's front door (/console): its page and files, and the sessions the auth hook reads. */
import type { AppContext } from '../../context.ts';
import type { AuthService } from '../auth/service.ts';
import type { Module } from '../module.ts';
import { loadAssets } from './assets.ts';
import { consoleRoutes } from './routes.ts';
import { ConsoleService } from './service.ts';

export interface ConsoleModule extends Module {
  /** The sessions whose cookie authorises API calls (buildApp hands them to the auth hook). */
  readonly sessions: ConsoleService;
}

export function consoleModule(ctx: AppContext, auth: AuthService): ConsoleModule {
  const sessions = new ConsoleService({
    db: ctx.storage.db,
    auth,
    idleMinutes: ctx.config.consoleIdleMinutes,
    timezone: ctx.config.timezone,
    adminToken: ctx.config.adminToken,
  });
  return { name: 'console', routes: consoleRoutes(sessions, loadAssets(), ctx.config), sessions };
}
