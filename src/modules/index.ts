/** Every module, in one list: a new module adds one line. app.ts and server.ts iterate over it. */
import type { AppContext } from '../context.ts';
import { appointmentsModule } from './appointments/index.ts';
import { auditModule } from './audit/index.ts';
import { authModule } from './auth/index.ts';
import { businessesModule } from './businesses/index.ts';
import { casesModule } from './cases/index.ts';
import { clinicsModule } from './clinics/index.ts';
import { documentsModule } from './documents/index.ts';
import { idempotencyModule } from './idempotency/index.ts';
import { opsModule } from './ops/index.ts';
import { patientsModule } from './patients/index.ts';
import { privacyModule } from './privacy/index.ts';
import { pushModule } from './push/index.ts';
import { retentionModule } from './retention/index.ts';
import { reviewsModule } from './reviews/index.ts';
import { schedulesModule } from './schedules/index.ts';
import { searchModule } from './search/index.ts';
import { webhooksModule } from './webhooks/index.ts';

export type { Module } from './module.ts';

/** The modules of one app (tests build many apps in one process, so nothing here is a singleton). */
export function createModules(ctx: AppContext) {
  return {
    ops: opsModule(ctx),
    idempotency: idempotencyModule(ctx),
    auth: authModule(ctx),
    businesses: businessesModule(ctx),
    clinics: clinicsModule(ctx),
    appointments: appointmentsModule(ctx),
    schedules: schedulesModule(ctx),
    patients: patientsModule(ctx),
    search: searchModule(ctx),
    webhooks: webhooksModule(ctx),
    cases: casesModule(ctx),
    documents: documentsModule(ctx),
    reviews: reviewsModule(ctx),
    push: pushModule(ctx),
    audit: auditModule(ctx),
    retention: retentionModule(ctx),
    privacy: privacyModule(ctx),
  };
}

export type Modules = ReturnType<typeof createModules>;
