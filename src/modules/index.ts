/** Every module's routes, in one list: a new module adds one line. */
import type { App } from '../http/app-type.ts';
import type { AppContext } from '../context.ts';
import { appointmentRoutes } from './appointments/routes.ts';
import { authRoutes } from './auth/routes.ts';
import { businessRoutes } from './businesses/routes.ts';
import { clinicRoutes } from './clinics/routes.ts';
import { casesRoutes } from './cases/routes.ts';
import { opsRoutes } from './ops/routes.ts';
import { searchRoutes } from './search/routes.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { reviewRoutes } from './reviews/routes.ts';
import { pushRoutes } from './push/routes.ts';

export function modules(ctx: AppContext): Array<(app: App) => Promise<void>> {
  return [
    opsRoutes(ctx),
    authRoutes(ctx),
    businessRoutes(ctx),
    clinicRoutes(ctx),
    appointmentRoutes(ctx),
    searchRoutes(ctx),
    webhookRoutes(ctx),
    casesRoutes(ctx),
    reviewRoutes(ctx),
    pushRoutes(ctx),
  ];
}
