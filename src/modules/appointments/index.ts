/** The appointments module's front door. */
import { parsedJson } from '../../compartment.ts';
import type { AppContext } from '../../context.ts';
import { appointmentKey } from '../../jobs/outbox.ts';
import type { ClinicService } from '../clinics/service.ts';
import type { Module } from '../module.ts';
import type { PatientService } from '../patients/service.ts';
import type { ScheduleService } from '../schedules/service.ts';
import { appointmentRoutes, patientAppointmentRoutes, schedulingRoutes } from './routes.ts';
import * as repo from './repo.ts';
import { Scheduling } from './scheduling.ts';
import { AppointmentService } from './service.ts';

export { AppointmentRecordSchema } from './routes.ts';

/** The services of other modules appointments use: the app's one instance of each, from the list of modules. */
export interface AppointmentsShared {
  patients: PatientService;
  clinics: ClinicService;
  schedules: ScheduleService;
}

/** The appointment service over the context and the shared services, and the scheduling it books with. */
function appointmentServices(ctx: AppContext, { patients, clinics, schedules }: AppointmentsShared) {
  const { db, dialect } = ctx.storage;
  const scheduling = new Scheduling({ db, clinics, schedules });
  const service = new AppointmentService({
    db,
    dialect,
    timezone: ctx.config.timezone,
    publicUrl: ctx.config.publicUrl,
    clinics,
    patients,
    scheduling,
  });
  return { service, scheduling };
}

/**
 * `patientAppointments` lists a patient's appointments under the doctor tool's patient paths: the module list
 * registers it right after the patients module's doctor-tool routes, so those paths stay together in the API
 * reference.
 */
export function appointmentsModule(ctx: AppContext, shared: AppointmentsShared): Module & { patientAppointments: Module['routes'] } {
  ctx.compartment.register({
    name: 'appointments',
    tables: [{ table: 'appointments', column: 'patient_id', by: 'id' }],
    lockById: repo.lockAppointmentsOfPatient,
    moveById: async (trx, merge) => ({ appointments: await repo.moveAppointments(trx, merge.businessId, merge.from.id, merge.to.id, merge.now) }),
    references: async (db, scope) => {
      const ids = (await repo.appointmentsOfPatients(db, scope.businessId, scope.patientIds)).map((row) => row.id);
      return { ids, eventKeys: ids.map(appointmentKey) };
    },
    // event_sequence is the service's own count of the appointment's events, not data about the patient.
    export: async (db, scope) => ({
      appointments: (await repo.appointmentsOfPatients(db, scope.businessId, scope.patientIds)).map(({ event_sequence: _, ...row }) => ({
        ...row,
        patient_details: parsedJson(row.patient_details),
        custom_attributes: parsedJson(row.custom_attributes),
        video_connect: parsedJson(row.video_connect),
        display_meta: parsedJson(row.display_meta),
        partner_meta: parsedJson(row.partner_meta),
        prev_aids: parsedJson(row.prev_aids),
      })),
    }),
    erase: (trx, scope, now) => repo.anonymiseAppointmentsOfPatients(trx, scope.businessId, scope.patientIds, now),
  });
  const { service, scheduling } = appointmentServices(ctx, shared);
  const routes = appointmentRoutes(service);
  const scheduled = schedulingRoutes(scheduling, service);
  return {
    name: 'appointments',
    patientAppointments: patientAppointmentRoutes(service, shared.patients),
    routes: async (app) => {
      await routes(app);
      await scheduled(app);
    },
  };
}
