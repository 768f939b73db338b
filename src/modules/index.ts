/** Every module, in one list: a new module adds one line. app.ts and server.ts iterate over it. */
import type { AppContext } from '../context.ts';
import { appointmentsModule } from './appointments/index.ts';
import { auditModule } from './audit/index.ts';
import { authModule, revokeClientTokens } from './auth/index.ts';
import { businessService, businessesModule } from './businesses/index.ts';
import { casesModule } from './cases/index.ts';
import { clinicService, clinicsModule } from './clinics/index.ts';
import { consoleModule } from './console/index.ts';
import { documentsModule } from './documents/index.ts';
import { idempotencyModule, idempotencyService } from './idempotency/index.ts';
import { opsModule } from './ops/index.ts';
import { patientService, patientsModule } from './patients/index.ts';
import { privacyModule } from './privacy/index.ts';
import { pushModule } from './push/index.ts';
import { retentionModule } from './retention/index.ts';
import { reviewsModule } from './reviews/index.ts';
import { scheduleService, schedulesModule } from './schedules/index.ts';
import { searchModule } from './search/index.ts';
import { webhooksModule } from './webhooks/index.ts';

export type { Module } from './module.ts';

/**
 * The modules of one app (tests build many apps in one process, so nothing here is a singleton). A service
 * other modules use is built once here and handed to each front door that needs it.
 */
export function createModules(ctx: AppContext) {
  const businesses = businessService(ctx, revokeClientTokens);
  const clinics = clinicService(ctx);
  const schedules = scheduleService(ctx, clinics);
  const patients = patientService(ctx);
  const idempotency = idempotencyService(ctx);
  const appointments = appointmentsModule(ctx, { patients, clinics, schedules });
  const auth = authModule(ctx, businesses);
  return {
    ops: opsModule(ctx),
    idempotency: idempotencyModule(idempotency),
    auth,
    console: consoleModule(ctx, auth.service),
    businesses: businessesModule(businesses),
    clinics: clinicsModule(ctx, clinics, businesses),
    appointments,
    schedules: schedulesModule(schedules),
    patients: patientsModule(ctx, patients, appointments.patientAppointments),
    search: searchModule(ctx),
    webhooks: webhooksModule(ctx),
    cases: casesModule(ctx, patients),
    documents: documentsModule(ctx, patients),
    reviews: reviewsModule(ctx),
    push: pushModule(ctx, patients),
    audit: auditModule(ctx, patients),
    retention: retentionModule(ctx),
    privacy: privacyModule(ctx, patients, idempotency),
  };
}

export type Modules = ReturnType<typeof createModules>;
