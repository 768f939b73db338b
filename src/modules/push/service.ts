/**
 * Push notifications (contract 7): service-account credentials sealed under the master key, devices
 * per business (optionally tied to a patient), and notifications delivered per device by jobs.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import type { Environment } from '../../config.ts';
import type { Kysely } from 'kysely';
import { inTransaction, type Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { Database, PushDeliveryStatus } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { decrypt, encrypt } from '../../security/encryption.ts';
import { canonicalHost, classifyLiteral, type OutboundPolicy } from '../../security/outbound.ts';
import { credentialsVersion, type FcmClient, type ServiceAccount } from './fcm.ts';
import * as repo from './repo.ts';
import { RetryableError } from '../../jobs/queue-repo.ts';
import type { FailedAttempt } from '../../jobs/queue.ts';
import type { Static } from 'typebox';
import type { DevicePayload as DevicePayloadSchema, SendBody } from './schemas.ts';

export interface PushDeps {
  db: Kysely<Database>;
  masterKey: Buffer;
  env: Environment;
  /** Checks token_uri when credentials are saved (connections are checked again by the FCM client). */
  outbound: OutboundPolicy;
  fcm: FcmClient;
  logger: Logger;
  outcomes: Counter<'outcome'>;
  /** Adds the delivery jobs of a notification in the transaction that stores it. */
  enqueueDeliveries: (trx: Db, businessId: string, notificationId: string, dids: string[]) => Promise<void>;
}

// ---- Credentials -----------------------------------------------------------------------------

export const SA_KEY_MEMBERS = [
  'type',
  'project_id',
  'private_key_id',
  'private_key',
  'client_email',
  'client_id',
  'auth_uri',
  'token_uri',
  'auth_provider_x509_cert_url',
  'client_x509_cert_url',
  'universal_domain',
] as const;

export type SaKey = Record<(typeof SA_KEY_MEMBERS)[number], string>;

/** Input as the schema let it through: the members are strings when present. */
export type SaKeyInput = Partial<Record<(typeof SA_KEY_MEMBERS)[number] | 'universe_domain', string>>;

function isLoopback(hostname: string): boolean {
  return canonicalHost(hostname) === 'localhost' || classifyLiteral(hostname) === 'loopback';
}

/** The PEM as parsed key, or null. Google's files have real newlines; a pasted `\n` is accepted too. */
export function parseRsaPrivateKey(pem: string): KeyObject | null {
  try {
    const key = createPrivateKey({ key: pem.replace(/\\n/g, '\n'), format: 'pem' });
    return key.asymmetricKeyType === 'rsa' ? key : null;
  } catch {
    return null;
  }
}

/**
 * Checks an sa_key (contract 7) and returns it complete, with `universal_domain` filled from
 * `universe_domain` when only that was sent. Every problem is reported at once (400).
 */
export function validateSaKey(input: SaKeyInput, env: Environment): SaKey {
  const fields: Record<string, string[]> = Object.create(null);
  const problem = (member: string, message: string) => (fields[`sa_key.${member}`] ??= []).push(message);
  const domain = nonEmpty(input.universal_domain) ? input.universal_domain : input.universe_domain;
  // Only the members a service account key has are kept: nothing else a client sends is stored.
  const key = Object.fromEntries(SA_KEY_MEMBERS.map((member) => [member, member === 'universal_domain' ? domain : input[member]])) as Partial<SaKey>;

  for (const member of SA_KEY_MEMBERS) {
    if (!nonEmpty(key[member])) {
      problem(member, member === 'universal_domain' ? 'This field is required (universal_domain or universe_domain).' : 'This field is required.');
    }
  }
  if (nonEmpty(key.type) && key.type !== 'service_account') problem('type', 'must be "service_account"');
  if (nonEmpty(key.private_key) && parseRsaPrivateKey(key.private_key) === null) {
    problem('private_key', 'must be a PEM-encoded RSA private key');
  }
  if (nonEmpty(key.client_email) && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(key.client_email)) problem('client_email', 'must be an email address');
  if (nonEmpty(key.token_uri)) {
    const reason = tokenUriProblem(key.token_uri, env);
    if (reason) problem('token_uri', reason);
  }
  if (Object.keys(fields).length > 0) throw AppError.badRequest('Invalid sa_key', fields);
  return key as SaKey;
}

function tokenUriProblem(value: string, env: Environment): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute https URL';
  }
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && env === 'development' && isLoopback(url.hostname)) return null;
  return env === 'development' ? 'must be https (http only to a loopback host)' : 'must be https';
}

function nonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

export interface CredentialsInfo {
  project_id: string;
  client_email: string;
  private_key_id: string;
  updated_at: number;
}

export interface LoadedAccount {
  account: ServiceAccount;
  version: string;
}

// ---- Devices ---------------------------------------------------------------------------------

export type DevicePayload = Static<typeof DevicePayloadSchema>;

// ---- Sending ---------------------------------------------------------------------------------

export type SendInput = Static<typeof SendBody>;

/** FCM rejects these data keys (reserved words and prefixes). */
const RESERVED_DATA_KEY = /^(from|notification|message_type|collapse_key)$|^(google|gcm)/i;
/** FCM's limit on a message's payload. */
const MAX_PAYLOAD_BYTES = 4096;

/**
 * A patient's devices: registering one more drops the least recently registered, and a send to the
 * patient reaches at most this many (a merge may join more), so one send's fan-out stays bounded.
 */
export const MAX_DEVICES_PER_PATIENT = 20;

export type NotificationStatus = 'pending' | 'sent' | 'partial' | 'failed';

/** pending while any device is; then sent (all sent), failed (none sent) or partial. */
export function overallStatus(statuses: PushDeliveryStatus[]): NotificationStatus {
  if (statuses.some((s) => s === 'pending')) return 'pending';
  const sent = statuses.filter((s) => s === 'sent').length;
  if (sent === statuses.length) return 'sent';
  return sent === 0 ? 'failed' : 'partial';
}

export interface NotificationReport {
  notification_id: string;
  status: NotificationStatus;
  devices: Array<{ did: string; status: PushDeliveryStatus; error: string | null }>;
}

// ---- Delivery (one device of one notification; run by a job) -----------------------------------

export interface DeliveryJob {
  notificationId: string;
  did: string;
}

export type DeliveryStep = { kind: 'done'; status: PushDeliveryStatus | 'skipped' };

/** A transient FCM failure: the job queue decides whether and when the device is tried again. */
export class PushRetry extends RetryableError {
  constructor(message: string, retryAfterSeconds: number | null) {
    super(message, { retryAfterSeconds });
  }
}

export class PushService {
  readonly #deps: PushDeps;

  constructor(deps: PushDeps) {
    this.#deps = deps;
  }

  async saveCredentials(businessId: string, input: SaKeyInput): Promise<void> {
    const key = validateSaKey(input, this.#deps.env);
    // The service will POST to token_uri: in production it must be, and resolve to, a public address.
    if (await this.#deps.outbound.check(new URL(key.token_uri))) {
      throw AppError.badRequest('Invalid sa_key', {
        'sa_key.token_uri': ['must not be or resolve to a loopback, private, link-local, metadata or other non-public address'],
      });
    }
    const now = Date.now();
    await repo.upsertCredentials(this.#deps.db, {
      business_id: businessId,
      // A fresh nonce per write (encrypt draws one); the business id binds the row to its owner.
      sealed: encrypt(this.#deps.masterKey, JSON.stringify(key), businessId),
      project_id: key.project_id,
      client_email: key.client_email,
      private_key_id: key.private_key_id,
      created_at: now,
      updated_at: now,
    });
    this.#deps.fcm.forget(businessId);
  }

  async credentialsInfo(businessId: string): Promise<CredentialsInfo> {
    const db = this.#deps.db;
    const row = await repo.getCredentials(db, businessId);
    if (!row) throw AppError.notFound('No push credentials are stored for this business');
    return {
      project_id: row.project_id,
      client_email: row.client_email,
      private_key_id: row.private_key_id,
      updated_at: Math.floor(row.updated_at / 1000),
    };
  }

  async removeCredentials(businessId: string): Promise<void> {
    if (!(await repo.deleteCredentials(this.#deps.db, businessId))) throw AppError.notFound('No push credentials are stored for this business');
    this.#deps.fcm.forget(businessId);
  }

  /** The business's service account, decrypted; null when none is stored. Throws when it cannot be opened. */
  async loadAccount(businessId: string): Promise<LoadedAccount | null> {
    const row = await repo.getCredentials(this.#deps.db, businessId);
    return row ? this.openAccount(businessId, row) : null;
  }

  /** Stored credentials, decrypted and parsed; throws when they cannot be opened (another master key). */
  openAccount(businessId: string, row: { sealed: string; updated_at: number }): LoadedAccount {
    const key = JSON.parse(decrypt(this.#deps.masterKey, row.sealed, businessId)) as SaKey;
    const privateKey = parseRsaPrivateKey(key.private_key);
    if (!privateKey) throw new Error('stored private key does not parse');
    const account: ServiceAccount = {
      project_id: key.project_id,
      private_key_id: key.private_key_id,
      client_email: key.client_email,
      token_uri: key.token_uri,
      privateKey,
    };
    return { account, version: credentialsVersion(account, row.updated_at) };
  }

  /** Upsert by did: a device registering again replaces what was stored, patient tie included. */
  async addDevice(businessId: string, payload: DevicePayload, patientRef: string | null): Promise<void> {
    const now = Date.now();
    // In a transaction: a request's audit entry commits with its change.
    await inTransaction(this.#deps.db, async (trx) => {
      await repo.upsertDevice(trx, {
        id: newId('dev'),
        business_id: businessId,
        did: payload.did,
        fcm_token: payload['fcm-id'],
        app_version: payload['app-version'],
        app_id: payload['app-id'] ?? null,
        app_platform: payload['app-platform'] ?? null,
        lang: payload.lang ?? null,
        os_version: payload['os-version'] ?? null,
        user_hash: payload['user-hash'] ?? null,
        patient_ref: patientRef,
        created_at: now,
        updated_at: now,
      });
      if (patientRef !== null) await repo.dropDevicesBeyond(trx, businessId, patientRef, MAX_DEVICES_PER_PATIENT);
    });
  }

  async removeDevice(businessId: string, did: string): Promise<void> {
    const removed = await inTransaction(this.#deps.db, (trx) => repo.deleteDevice(trx, businessId, did));
    if (!removed) throw AppError.notFound(`Unknown device: ${did}`);
  }

  async sendNotification(businessId: string, clientId: string, input: SendInput): Promise<string> {
    const hasPatient = input.patient_id !== undefined;
    const hasDevices = input.device_ids !== undefined;
    if (hasPatient === hasDevices) {
      throw AppError.badRequest('Give exactly one of patient_id or device_ids', { message: ['Give exactly one of patient_id or device_ids'] });
    }
    const reserved = Object.keys(input.data ?? {}).filter((key) => RESERVED_DATA_KEY.test(key));
    if (reserved.length > 0)
      throw AppError.badRequest(`data: reserved key ${reserved.join(', ')}`, { data: reserved.map((k) => `reserved key "${k}"`) });
    const size = Buffer.byteLength(JSON.stringify({ title: input.title, body: input.body, data: input.data ?? {} }));
    if (size > MAX_PAYLOAD_BYTES) throw AppError.badRequest(`title, body and data together exceed FCM's ${MAX_PAYLOAD_BYTES} bytes`);

    return inTransaction(this.#deps.db, async (trx) => {
      // Sending needs credentials; checked now so the caller learns it at once rather than per device.
      if (!(await repo.getCredentials(trx, businessId)))
        throw AppError.badRequest('Push credentials are not configured: POST /notification/push-creds first');
      let dids: string[];
      if (hasDevices) {
        const wanted = [...new Set(input.device_ids!)];
        const known = new Set(await repo.devicesByDid(trx, businessId, wanted));
        const unknown = wanted.filter((did) => !known.has(did));
        if (unknown.length > 0) throw AppError.notFound(`Unknown device: ${unknown.join(', ')}`);
        dids = wanted;
      } else {
        dids = await repo.devicesOfPatient(trx, businessId, input.patient_id!, MAX_DEVICES_PER_PATIENT);
        if (dids.length === 0) throw AppError.notFound('No devices are registered for this patient');
      }
      const id = newId('ntf');
      await repo.insertNotification(
        trx,
        {
          id,
          business_id: businessId,
          title: input.title,
          body: input.body,
          data: input.data && Object.keys(input.data).length > 0 ? JSON.stringify(input.data) : null,
          patient_ref: input.patient_id ?? null,
          created_by: clientId,
          created_at: Date.now(),
        },
        dids,
      );
      await this.#deps.enqueueDeliveries(trx, businessId, id, dids);
      return id;
    });
  }

  async notificationReport(businessId: string, id: string): Promise<NotificationReport> {
    const db = this.#deps.db;
    const notification = await repo.getNotification(db, businessId, id);
    if (!notification) throw AppError.notFound(`Unknown notification: ${id}`);
    const deliveries = await repo.listDeliveries(db, businessId, id);
    return {
      notification_id: id,
      status: overallStatus(deliveries.map((d) => d.status)),
      devices: deliveries.map((d) => ({ did: d.did, status: d.status, error: d.error })),
    };
  }

  /**
   * One attempt at one device. Idempotent: a delivery that is no longer pending is left alone, so a
   * job that runs again after a crash does not send twice what was recorded as sent. A transient
   * failure is thrown (PushRetry) for the job queue to decide on; `recordFailedAttempt` writes it.
   */
  async deliver(businessId: string, job: DeliveryJob, signal?: AbortSignal): Promise<DeliveryStep> {
    const db = this.#deps.db;
    const { notificationId, did } = job;
    const settle = async (status: PushDeliveryStatus, error: string | null, fcmMessage: string | null = null): Promise<DeliveryStep> => {
      await repo.settleDelivery(db, businessId, notificationId, did, { status, error, fcmMessage });
      this.#deps.outcomes.inc({ outcome: status });
      const log = { notification_id: notificationId, did, business_id: businessId, status };
      if (status === 'sent') this.#deps.logger.debug(log, 'push delivered');
      else this.#deps.logger.info({ ...log, error }, `push ${status}`);
      return { kind: 'done', status };
    };

    const delivery = await repo.getDelivery(db, businessId, notificationId, did);
    if (delivery?.status !== 'pending') return { kind: 'done', status: 'skipped' };
    const notification = await repo.getNotification(db, businessId, notificationId);
    if (!notification) return { kind: 'done', status: 'skipped' };
    const device = await repo.getDevice(db, businessId, did);
    if (!device) return settle('dropped', 'device removed');

    // A failure to read them (the database) is thrown, for the queue to retry; only credentials that
    // cannot be opened fail the delivery for good.
    const credentials = await repo.getCredentials(db, businessId);
    if (!credentials) return settle('failed', 'push credentials are not configured');
    let loaded: LoadedAccount;
    try {
      loaded = this.openAccount(businessId, credentials);
    } catch {
      // Typically CPS_MASTER_KEY changed since the credentials were saved.
      return settle('failed', 'stored push credentials cannot be decrypted; save them again');
    }

    const outcome = await this.#deps.fcm.send(
      businessId,
      loaded.account,
      loaded.version,
      {
        token: device.fcm_token,
        title: notification.title,
        body: notification.body,
        data: notification.data ? (JSON.parse(notification.data) as Record<string, string>) : null,
      },
      signal,
    );

    switch (outcome.kind) {
      case 'sent':
        return settle('sent', null, outcome.name);
      case 'drop':
        await repo.dropDevice(db, businessId, did, device.fcm_token);
        return settle('dropped', outcome.error);
      case 'fail':
        return settle('failed', outcome.error);
      case 'retry':
        // The queue logs the retry itself; this adds which device it was.
        this.#deps.logger.debug(
          { notification_id: notificationId, did, business_id: businessId, error: outcome.error, retry_after: outcome.retryAfterSeconds },
          'push attempt failed',
        );
        throw new PushRetry(outcome.error, outcome.retryAfterSeconds);
    }
  }

  /**
   * Writes on the delivery what the queue decided about an attempt that did not succeed, in the
   * transaction that settles its job: a retry notes the failure; the end of the attempts fails it.
   * A failure before FCM answered (the database) leaves no message the partner would see.
   */
  async recordFailedAttempt(db: Db, businessId: string, job: DeliveryJob, outcome: FailedAttempt, cause: unknown): Promise<void> {
    const { notificationId, did } = job;
    const error = cause instanceof PushRetry ? cause.message : 'the delivery could not be attempted';
    if (outcome.status === 'pending') {
      if (!(cause instanceof PushRetry)) return;
      await repo.noteRetry(db, businessId, notificationId, did, error);
      this.#deps.outcomes.inc({ outcome: 'retried' });
      return;
    }
    if (await repo.settleDelivery(db, businessId, notificationId, did, { status: 'failed', error })) {
      this.#deps.outcomes.inc({ outcome: 'failed' });
      this.#deps.logger.info({ notification_id: notificationId, did, business_id: businessId, status: 'failed', error }, 'push failed');
    }
  }
}
