/**
 * What every module receives: configuration, storage, keys, metrics and the readiness checks.
 * Built once per app (tests build many), so nothing here is a process-wide singleton.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { AuditLog } from './access-log/log.ts';
import type { AccessTokens } from './auth/tokens.ts';
import type { PatientCompartment } from './compartment.ts';
import type { Config } from './config.ts';
import type { Storage } from './db/index.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { Keys } from './security/keys.ts';
import type { OutboundClient } from './security/outbound-client.ts';

export interface AppContext {
  config: Config;
  storage: Storage;
  keys: Keys;
  tokens: AccessTokens;
  logger: Logger;
  metrics: Registry;
  /** Background jobs: modules register handlers while the app is built; the server starts the workers. */
  jobs: JobQueue;
  /** Named checks that must pass for /ready (the database check is built in). */
  readiness: Map<string, () => boolean | Promise<boolean>>;
  /** Every connection made on a client's word or a stored value goes through it (tests may replace it before buildApp). */
  outbound: OutboundClient;
  /** Where every module keeps rows about a patient (src/compartment.ts): modules register in their front doors. */
  compartment: PatientCompartment;
  /** The access log of operations on patient data (src/access-log/). */
  audit: AuditLog;
}
