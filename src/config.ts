/**
 * Environment, parsed and validated once. Every missing or bad value is collected, and one
 * ConfigError lists them all (a line per variable), which the entry points print before exiting.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import { OutboundAllowList } from './security/outbound.ts';

export class ConfigError extends Error {
  /** The first variable at fault. */
  readonly variable: string;
  /** Every problem found, one per variable at fault (this error alone when it is one). */
  readonly problems: readonly ConfigError[];
  constructor(variable: string, message: string, problems?: readonly ConfigError[]) {
    super(`${variable}: ${message}`);
    this.variable = variable;
    this.problems = problems ?? [this];
  }

  static all(problems: readonly ConfigError[]): ConfigError {
    if (problems.length === 1) return problems[0]!;
    const [first, ...rest] = problems;
    return new ConfigError(first!.variable, [first!.message.slice(first!.variable.length + 2), ...rest.map((p) => p.message)].join('\n'), problems);
  }
}

/** The problems of the loadConfig call running now (it is synchronous): helpers report here and go on. */
let collecting: ConfigError[] | null = null;

/** A parser that throws ConfigError, with its problem reported and the fallback used instead. */
function attempt<T>(parse: () => T, fallback: T): T {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    report(error);
    return fallback;
  }
}

/** Records a problem while loadConfig runs (and goes on with a fallback); throws otherwise. */
function report(problem: ConfigError): void {
  if (collecting === null) throw problem;
  if (!collecting.some((known) => known.variable === problem.variable)) collecting.push(problem);
}

export type Environment = 'development' | 'production';

export interface Config {
  env: Environment;
  host: string;
  port: number;
  /** `postgres://...`, or null for the embedded SQLite database in dataDir. */
  databaseUrl: string | null;
  /** PostgreSQL connections this process may hold (CPS_DB_POOL_SIZE). */
  dbPoolSize: number;
  dataDir: string;
  /** PKCS#8 PEM; null means "generate or reuse the development key in dataDir". */
  jwtPrivateKey: string | null;
  /**
   * The signing key replaced in a rotation (CPS_JWT_PREVIOUS_PUBLIC_KEY): a public PEM, or the old private
   * PEM, of which only the public half is kept. Its tokens are still accepted and it is in the JWKS.
   */
  jwtPreviousPublicKey: string | null;
  /** 32 bytes; null means "generate or reuse the development key in dataDir". */
  masterKey: Buffer | null;
  adminToken: string | null;
  /** Wrong admin tokens one source address may send per login window before 429 (CPS_ADMIN_FAILURES; 0: no such budget). */
  adminFailures: number;
  publicUrl: string;
  timezone: string;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  searchRateLimit: number;
  searchRateBurst: number;
  /** Bytes of serialized search responses kept per process (0: no cache). */
  searchCacheBytes: number;
  redisUrl: string | null;
  /**
   * Proxies whose X-Forwarded-For is believed (CPS_TRUST_PROXY): addresses and CIDR ranges, or false.
   * The login budget per source address needs the client's address, not the proxy's.
   */
  trustProxy: string[] | false;
  /** Failed logins a client id may have per window before 429 (CPS_LOGIN_CLIENT_FAILURES; 0: no such budget). */
  loginClientFailures: number;
  /** Failed logins one source address may have per window before 429 (CPS_LOGIN_ADDRESS_FAILURES; 0: none). */
  loginAddressFailures: number;
  /** The window over which a failure budget refills completely, in seconds. */
  loginFailureWindowSeconds: number;
  /** Secret verifications (scrypt) running at once in this process (0: unbounded). */
  loginHashConcurrency: number;
  /** Logins waiting for a verification slot before more are refused with 503. */
  loginHashQueue: number;
  casesPageSize: number;
  /** Minutes a browser console session lasts without a request (CPS_CONSOLE_IDLE_MINUTES). */
  consoleIdleMinutes: number;
  /** Documents on patient records (src/modules/documents/): limits and link lifetimes. */
  documents: DocumentsConfig;
  /** Seconds a patient's data export (and its download link) lasts once ready (CPS_PRIVACY_EXPORT_TTL). */
  privacyExportTtl: number;
  /** How long a request waits for a running request with its Idempotency-Key before a 409 (CPS_IDEMPOTENCY_WAIT_MS). */
  idempotencyWaitMs: number;
  fcmUrl: string;
  /**
   * Destinations production may reach although not public (CPS_OUTBOUND_ALLOW): addresses, CIDR
   * ranges and host names, over http or https (src/security/outbound.ts).
   */
  outboundAllow: string[];
  webhookRetrySchedule: number[];
  /** A subscription whose every attempt failed for this long is disabled; 0: never. */
  webhookDisableAfterSeconds: number;
  /** Seconds before each retry of a push delivery (CPS_PUSH_RETRY_SCHEDULE). */
  pushRetrySchedule: number[];
  logLevel: string;
  /** Background job workers in this process (CPS_WORKERS=0 turns them off). */
  workers: boolean;
  /**
   * Seconds a client has to send a whole request, head and body (CPS_REQUEST_TIMEOUT_SECONDS); past it,
   * 408 and the connection closes, before authentication too, so a dripped body cannot hold a socket.
   */
  requestTimeoutSeconds: number;
  /** Seconds SIGTERM waits for requests and running jobs before closing anyway. */
  shutdownGraceSeconds: number;
  /** The access log (CPS_AUDIT=off only to measure its cost). */
  audit: boolean;
  /** The access log's batches: written every auditFlushMs, or once auditFlushEntries wait. */
  auditFlushMs: number;
  auditFlushEntries: number;
  /** CPS_AUDIT_SYNC: 'write' (default) or 'fsync' before an answer is sent (src/access-log/log.ts). */
  auditSync: 'write' | 'fsync';
  /** How long each kind of row is kept before the retention job deletes it (src/modules/retention/). */
  retention: RetentionConfig;
}

/** CPS_DOCUMENTS_*: what a document upload may be, and how long its forms and links last. */
export interface DocumentsConfig {
  /** Bytes one file may have (CPS_DOCUMENTS_MAX_FILE_MB, default 25). */
  maxFileBytes: number;
  /** Bytes of files one business may keep (CPS_DOCUMENTS_MAX_BUSINESS_MB, default 10240; 0: no limit). */
  maxBusinessBytes: number;
  /** Pixels an image may declare in its header (CPS_DOCUMENTS_MAX_MEGAPIXELS, default 100): a larger one is refused as a decompression bomb. */
  maxImagePixels: number;
  /** Seconds an upload form of POST /mr/api/v1/docs lasts (CPS_DOCUMENTS_FORM_TTL, default 600). */
  formTtlSeconds: number;
  /** Seconds a download link lasts (CPS_DOCUMENTS_LINK_TTL, default 300). */
  linkTtlSeconds: number;
  /** Documents a page of the listing holds (CPS_DOCUMENTS_PAGE_SIZE, default 50). */
  pageSize: number;
  /**
   * The content types thumbnails are made of (CPS_DOCUMENTS_THUMBNAILS: a comma-separated list of
   * jpeg, png, heif and pdf, or none; default all four).
   */
  thumbnailTypes: ReadonlySet<string>;
  /**
   * Where new files go (CPS_DOCUMENTS_STORE): files in the data directory (`files`, the default with
   * SQLite), the database (`database`, the default with PostgreSQL) or an S3-compatible object store.
   */
  store: 'files' | 'database' | 's3';
  /** The object store (CPS_S3_*), when CPS_DOCUMENTS_STORE=s3 or files stored there remain; else null. */
  s3: S3Config | null;
}

/** CPS_S3_*: an S3-compatible object store, an address the operator configures (docs/2-production.md "Document storage"). */
export interface S3Config {
  /** CPS_S3_ENDPOINT: the store's URL (absent: AWS S3 of the region). */
  endpoint: string | null;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Keys start with this (CPS_S3_PREFIX, default "opencps/"). */
  prefix: string;
  /** Bucket in the path rather than the host name (CPS_S3_PATH_STYLE; default: yes with an endpoint). */
  pathStyle: boolean;
  /** Server-side encryption asked of the store for every object (CPS_S3_SSE: AES256 default, aws:kms, or none). */
  serverSideEncryption: 'AES256' | 'aws:kms' | null;
}

/** Days each kind of row is kept (CPS_RETENTION_*_DAYS), how often the retention job runs and its batch size. */
export interface RetentionConfig {
  /** Access log entries (at least a year: the DPDP Rules' minimum). */
  accessLogDays: number;
  /** Succeeded jobs, after they finished. */
  jobsDays: number;
  /** Failed jobs, after they finished. */
  failedJobsDays: number;
  /** Events and their webhook delivery rows, once every delivery is settled. */
  eventsDays: number;
  /** Push notifications and their delivery rows, once every delivery is settled. */
  pushDays: number;
  /** Refresh tokens, after they expired or were revoked. */
  refreshTokensDays: number;
  /** Idempotency keys, after they expired. */
  idempotencyKeysDays: number;
  /** Deleted cases' tombstones, after the delete. */
  caseTombstonesDays: number;
  /** Deleted documents' tombstones, after the delete (once their files are removed). */
  documentTombstonesDays: number;
  /** OPD token counters, after their session began. */
  scheduleTokensDays: number;
  /** Minutes between two runs of the retention job. */
  intervalMinutes: number;
  /** Rows deleted per statement (each its own short transaction). */
  batchSize: number;
}

/** The access log is kept at least this long: the DPDP Rules ask for a year of access logs. */
export const MIN_ACCESS_LOG_DAYS = 365;

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/** PostgreSQL connections per process: the HTTP load and the job workers' concurrency (16 + 8) share them. */
export const DEFAULT_DB_POOL_SIZE = 20;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw)) {
    report(new ConfigError(name, `must be an integer, got "${raw}"`));
    return fallback;
  }
  const value = Number(raw);
  if (value < min || value > max) {
    report(new ConfigError(name, `must be between ${min} and ${max}, got ${value}`));
    return fallback;
  }
  return value;
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    report(new ConfigError(name, 'must be an absolute URL'));
    return undefined;
  }
  if (!protocols.includes(parsed.protocol)) {
    report(new ConfigError(name, `must use ${protocols.join(' or ')}, got ${parsed.protocol}`));
    return undefined;
  }
  return raw.replace(/\/+$/, '');
}

/**
 * The least strength of a production admin token, as zxcvbn estimates it (log10 of the guesses): about
 * 80 bits. Length alone says nothing (`aaaaaaaaaaaaaaaa`); 32 random bytes as hex or base64 pass easily.
 */
export const MIN_ADMIN_TOKEN_GUESSES_LOG10 = 24;

/** zxcvbn's estimate of the guesses a token takes, as log10 (sequences, repeats, keyboard runs and dates count as little). */
export function tokenGuessesLog10(token: string): number {
  return new ZxcvbnFactory().check(token).guessesLog10;
}

export function parseMasterKey(raw: string, variable = 'CPS_MASTER_KEY'): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError(variable, 'must be 32 bytes, as base64 or 64 hex digits');
  return key;
}

/** The longest delay of a retry schedule: 30 days. */
export const MAX_RETRY_DELAY_SECONDS = 30 * 86_400;

export function parseRetrySchedule(raw: string, variable = 'CPS_WEBHOOK_RETRY_SCHEDULE'): number[] {
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.some((part) => !/^\d+$/.test(part))) {
    throw new ConfigError(variable, 'must be a comma-separated list of whole seconds, e.g. 5,300,1800');
  }
  const delays = parts.map(Number);
  if (delays.some((delay) => delay > MAX_RETRY_DELAY_SECONDS)) {
    throw new ConfigError(variable, `each delay is at most ${MAX_RETRY_DELAY_SECONDS} seconds (30 days)`);
  }
  return delays;
}

export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5,300,1800,7200,18000,36000,36000';
export const DEFAULT_PUSH_RETRY_SCHEDULE = '5,30,120,600,1800';

export function loadConfig(env: Env = process.env, readFile: (file: string) => string = defaultReadFile): Config {
  const outer = collecting;
  collecting = [];
  try {
    const config = readConfig(env, readFile);
    if (collecting.length > 0) throw ConfigError.all(collecting);
    return config;
  } finally {
    collecting = outer;
  }
}

/** The content types of each kind CPS_DOCUMENTS_THUMBNAILS names. */
const THUMBNAIL_KINDS: Readonly<Record<string, readonly string[]>> = {
  jpeg: ['image/jpeg'],
  png: ['image/png'],
  heif: ['image/heic', 'image/heif'],
  pdf: ['application/pdf'],
};

function thumbnailTypes(env: Env): ReadonlySet<string> {
  const raw = str(env, 'CPS_DOCUMENTS_THUMBNAILS') ?? Object.keys(THUMBNAIL_KINDS).join(',');
  if (raw.trim() === 'none') return new Set();
  const kinds = raw.split(',').map((kind) => kind.trim());
  const unknown = kinds.filter((kind) => !Object.hasOwn(THUMBNAIL_KINDS, kind));
  if (unknown.length > 0) {
    report(
      new ConfigError('CPS_DOCUMENTS_THUMBNAILS', `must be "none" or a comma-separated list of jpeg, png, heif and pdf, got "${unknown.join(',')}"`),
    );
    return new Set();
  }
  return new Set(kinds.flatMap((kind) => THUMBNAIL_KINDS[kind]!));
}

function documentStore(env: Env, databaseUrl: string | null): Pick<DocumentsConfig, 'store' | 's3'> {
  // Several processes on one PostgreSQL may share no disk: there, the files go in the database.
  const embedded = databaseUrl === null ? 'files' : 'database';
  let store = str(env, 'CPS_DOCUMENTS_STORE') ?? embedded;
  if (store !== 'files' && store !== 'database' && store !== 's3') {
    report(new ConfigError('CPS_DOCUMENTS_STORE', `must be "files", "database" or "s3", got "${store}"`));
    store = embedded;
  }
  const bucket = str(env, 'CPS_S3_BUCKET');
  if (store !== 's3' && bucket === undefined) return { store: store as 'files' | 'database', s3: null };
  const required = (name: string) => {
    const value = str(env, name);
    if (value === undefined) report(new ConfigError(name, 'is required when CPS_DOCUMENTS_STORE=s3 or CPS_S3_BUCKET is set'));
    return value ?? '';
  };
  const endpoint = url(env, 'CPS_S3_ENDPOINT', ['http:', 'https:']) ?? null;
  let sse = str(env, 'CPS_S3_SSE') ?? 'AES256';
  if (sse !== 'AES256' && sse !== 'aws:kms' && sse !== 'none') {
    report(new ConfigError('CPS_S3_SSE', `must be "AES256", "aws:kms" or "none", got "${sse}"`));
    sse = 'AES256';
  }
  const pathStyle = str(env, 'CPS_S3_PATH_STYLE');
  if (pathStyle !== undefined && pathStyle !== 'true' && pathStyle !== 'false') report(new ConfigError('CPS_S3_PATH_STYLE', 'must be true or false'));
  return {
    store: store as 'files' | 'database' | 's3',
    s3: {
      endpoint,
      region: str(env, 'CPS_S3_REGION') ?? 'us-east-1',
      bucket: required('CPS_S3_BUCKET'),
      accessKeyId: required('CPS_S3_ACCESS_KEY_ID'),
      secretAccessKey: required('CPS_S3_SECRET_ACCESS_KEY'),
      prefix: str(env, 'CPS_S3_PREFIX') ?? 'opencps/',
      pathStyle: pathStyle === undefined ? endpoint !== null : pathStyle === 'true',
      serverSideEncryption: sse === 'none' ? null : (sse as 'AES256' | 'aws:kms'),
    },
  };
}

/** Reads every variable, reporting each problem and going on with a fallback, so all are found at once. */
function readConfig(env: Env, readFile: (file: string) => string): Config {
  let cpsEnv = str(env, 'CPS_ENV') ?? 'development';
  if (cpsEnv !== 'development' && cpsEnv !== 'production') {
    report(new ConfigError('CPS_ENV', `must be "development" or "production", got "${cpsEnv}"`));
    cpsEnv = 'production';
  }
  const production = cpsEnv === 'production';
  const host = str(env, 'HOST') ?? '127.0.0.1';
  const port = int(env, 'PORT', 8080, 0, 65535);
  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']) ?? null;
  const dataDir = path.resolve(str(env, 'CPS_DATA_DIR') ?? './data');

  let jwtPrivateKey = str(env, 'CPS_JWT_PRIVATE_KEY') ?? null;
  const jwtKeyFile = str(env, 'CPS_JWT_PRIVATE_KEY_FILE');
  let jwtKeyUnreadable = false;
  if (jwtPrivateKey === null && jwtKeyFile !== undefined) {
    try {
      jwtPrivateKey = readFile(jwtKeyFile);
    } catch (error) {
      report(new ConfigError('CPS_JWT_PRIVATE_KEY_FILE', `cannot be read: ${(error as Error).message}`));
      jwtKeyUnreadable = true;
    }
  }
  if (jwtPrivateKey !== null) {
    jwtPrivateKey = jwtPrivateKey.replace(/\\n/g, '\n');
    if (!jwtPrivateKey.includes('-----BEGIN PRIVATE KEY-----')) {
      report(
        new ConfigError(
          jwtKeyFile && !str(env, 'CPS_JWT_PRIVATE_KEY') ? 'CPS_JWT_PRIVATE_KEY_FILE' : 'CPS_JWT_PRIVATE_KEY',
          'must be a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----), Ed25519 or P-256',
        ),
      );
    }
  }
  const jwtPreviousPublicKey = str(env, 'CPS_JWT_PREVIOUS_PUBLIC_KEY')?.replace(/\\n/g, '\n') ?? null;
  if (jwtPreviousPublicKey !== null && !/-----BEGIN (PUBLIC|PRIVATE) KEY-----/.test(jwtPreviousPublicKey)) {
    report(
      new ConfigError('CPS_JWT_PREVIOUS_PUBLIC_KEY', 'must be a PEM public key (-----BEGIN PUBLIC KEY-----) or the previous PKCS#8 private key'),
    );
  }
  const masterKeyRaw = str(env, 'CPS_MASTER_KEY');
  const masterKey = masterKeyRaw === undefined ? null : attempt(() => parseMasterKey(masterKeyRaw), Buffer.alloc(32));
  const adminToken = str(env, 'CPS_ADMIN_TOKEN') ?? null;
  if (adminToken !== null && adminToken.length < 16) {
    report(new ConfigError('CPS_ADMIN_TOKEN', 'must be at least 16 characters'));
  }
  const publicUrlRaw = str(env, 'CPS_PUBLIC_URL');
  const publicUrl = url(env, 'CPS_PUBLIC_URL', ['http:', 'https:']);

  if (production) {
    if (jwtPrivateKey === null && !jwtKeyUnreadable) {
      report(new ConfigError('CPS_JWT_PRIVATE_KEY', 'is required in production (or CPS_JWT_PRIVATE_KEY_FILE); `cps init` writes one'));
    }
    if (masterKeyRaw === undefined) report(new ConfigError('CPS_MASTER_KEY', 'is required in production; `cps init` writes one'));
    if (adminToken === null) report(new ConfigError('CPS_ADMIN_TOKEN', 'is required in production; `cps init` writes one'));
    if (publicUrlRaw === undefined) {
      report(
        new ConfigError('CPS_PUBLIC_URL', 'is required in production: the address clients reach the service at, e.g. https://cps.clinic.example'),
      );
    }
    if (adminToken !== null && tokenGuessesLog10(adminToken) < MIN_ADMIN_TOKEN_GUESSES_LOG10) {
      report(new ConfigError('CPS_ADMIN_TOKEN', 'is too easy to guess for production: use 32 random bytes, e.g. `openssl rand -base64 32`'));
    }
  }

  let timezone = str(env, 'CPS_TIMEZONE') ?? 'Asia/Kolkata';
  try {
    new Intl.DateTimeFormat('en-CA', { timeZone: timezone });
  } catch {
    report(new ConfigError('CPS_TIMEZONE', `is not a known IANA time zone: "${timezone}"`));
    timezone = 'Asia/Kolkata';
  }

  const logLevel = str(env, 'LOG_LEVEL') ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    report(new ConfigError('LOG_LEVEL', 'must be one of fatal, error, warn, info, debug, trace, silent'));
  }
  const workersRaw = str(env, 'CPS_WORKERS') ?? '1';
  if (workersRaw !== '0' && workersRaw !== '1') report(new ConfigError('CPS_WORKERS', 'must be 0 or 1'));
  const auditRaw = str(env, 'CPS_AUDIT') ?? 'on';
  if (auditRaw !== 'on' && auditRaw !== 'off') report(new ConfigError('CPS_AUDIT', 'must be on or off'));
  const auditSync = str(env, 'CPS_AUDIT_SYNC') ?? 'write';
  if (auditSync !== 'write' && auditSync !== 'fsync') report(new ConfigError('CPS_AUDIT_SYNC', 'must be write or fsync'));

  return {
    env: cpsEnv as Environment,
    host,
    port,
    databaseUrl,
    dbPoolSize: int(env, 'CPS_DB_POOL_SIZE', DEFAULT_DB_POOL_SIZE, 1, 1000),
    dataDir,
    jwtPrivateKey,
    jwtPreviousPublicKey,
    masterKey,
    adminToken,
    adminFailures: int(env, 'CPS_ADMIN_FAILURES', 10, 0, 1_000_000),
    publicUrl: publicUrl ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    timezone,
    accessTokenTtl: int(env, 'CPS_ACCESS_TOKEN_TTL', 1800, 60, 86_400),
    refreshTokenTtl: int(env, 'CPS_REFRESH_TOKEN_TTL', 30 * 86_400, 300, 365 * 86_400),
    searchRateLimit: int(env, 'CPS_SEARCH_RATE_LIMIT', 50, 1, 1_000_000),
    searchRateBurst: int(env, 'CPS_SEARCH_RATE_BURST', 100, 1, 1_000_000),
    searchCacheBytes: int(env, 'CPS_SEARCH_CACHE_MB', 32, 0, 4096) * 1024 * 1024,
    redisUrl: url(env, 'CPS_REDIS_URL', ['redis:', 'rediss:']) ?? null,
    trustProxy: trustedProxies(env),
    loginClientFailures: int(env, 'CPS_LOGIN_CLIENT_FAILURES', 10, 0, 1_000_000),
    loginAddressFailures: int(env, 'CPS_LOGIN_ADDRESS_FAILURES', 100, 0, 1_000_000),
    loginFailureWindowSeconds: int(env, 'CPS_LOGIN_FAILURE_WINDOW_SECONDS', 60, 1, 86_400),
    loginHashConcurrency: int(env, 'CPS_LOGIN_HASH_CONCURRENCY', 4, 0, 1024),
    loginHashQueue: int(env, 'CPS_LOGIN_HASH_QUEUE', 64, 0, 100_000),
    casesPageSize: int(env, 'CPS_CASES_PAGE_SIZE', 50, 1, 1000),
    consoleIdleMinutes: int(env, 'CPS_CONSOLE_IDLE_MINUTES', 30, 1, 24 * 60),
    documents: {
      maxFileBytes: int(env, 'CPS_DOCUMENTS_MAX_FILE_MB', 25, 1, 5120) * 1024 * 1024,
      maxBusinessBytes: int(env, 'CPS_DOCUMENTS_MAX_BUSINESS_MB', 10_240, 0, 1_000_000_000) * 1024 * 1024,
      maxImagePixels: int(env, 'CPS_DOCUMENTS_MAX_MEGAPIXELS', 100, 1, 10_000) * 1_000_000,
      formTtlSeconds: int(env, 'CPS_DOCUMENTS_FORM_TTL', 600, 10, 86_400),
      linkTtlSeconds: int(env, 'CPS_DOCUMENTS_LINK_TTL', 300, 10, 86_400),
      pageSize: int(env, 'CPS_DOCUMENTS_PAGE_SIZE', 50, 1, 1000),
      thumbnailTypes: thumbnailTypes(env),
      ...documentStore(env, databaseUrl),
    },
    privacyExportTtl: int(env, 'CPS_PRIVACY_EXPORT_TTL', 86_400, 60, 30 * 86_400),
    idempotencyWaitMs: int(env, 'CPS_IDEMPOTENCY_WAIT_MS', 5000, 0, 60_000),
    fcmUrl: url(env, 'CPS_FCM_URL', ['http:', 'https:']) ?? 'https://fcm.googleapis.com',
    outboundAllow: outboundAllowList(env),
    webhookRetrySchedule: attempt(() => parseRetrySchedule(str(env, 'CPS_WEBHOOK_RETRY_SCHEDULE') ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE), []),
    webhookDisableAfterSeconds: int(env, 'CPS_WEBHOOK_DISABLE_AFTER_SECONDS', 5 * 86_400, 0, 365 * 86_400),
    pushRetrySchedule: attempt(
      () => parseRetrySchedule(str(env, 'CPS_PUSH_RETRY_SCHEDULE') ?? DEFAULT_PUSH_RETRY_SCHEDULE, 'CPS_PUSH_RETRY_SCHEDULE'),
      [],
    ),
    logLevel,
    workers: workersRaw === '1',
    requestTimeoutSeconds: int(env, 'CPS_REQUEST_TIMEOUT_SECONDS', 30, 1, 3600),
    shutdownGraceSeconds: int(env, 'CPS_SHUTDOWN_GRACE_SECONDS', 25, 0, 600),
    audit: auditRaw === 'on',
    auditFlushMs: int(env, 'CPS_AUDIT_FLUSH_MS', 1000, 1, 3_600_000),
    auditFlushEntries: int(env, 'CPS_AUDIT_FLUSH_ENTRIES', 5000, 1, 100_000),
    auditSync: auditSync as Config['auditSync'],
    retention: retentionConfig(env),
  };
}

function retentionConfig(env: Env): RetentionConfig {
  const days = (name: string, fallback: number, min = 1) => int(env, `CPS_RETENTION_${name}_DAYS`, fallback, min, 36_500);
  return {
    accessLogDays: days('ACCESS_LOG', 365, MIN_ACCESS_LOG_DAYS),
    jobsDays: days('JOBS', 7),
    failedJobsDays: days('FAILED_JOBS', 30),
    eventsDays: days('EVENTS', 30),
    pushDays: days('PUSH', 30),
    refreshTokensDays: days('REFRESH_TOKENS', 7, 0),
    idempotencyKeysDays: days('IDEMPOTENCY_KEYS', 0, 0),
    caseTombstonesDays: days('CASE_TOMBSTONES', 180),
    documentTombstonesDays: days('DOCUMENT_TOMBSTONES', 180),
    scheduleTokensDays: days('SCHEDULE_TOKENS', 90),
    intervalMinutes: int(env, 'CPS_RETENTION_INTERVAL_MINUTES', 60, 1, 1440),
    batchSize: int(env, 'CPS_RETENTION_BATCH', 500, 10, 10_000),
  };
}

function trustedProxies(env: Env): string[] | false {
  const raw = str(env, 'CPS_TRUST_PROXY');
  if (raw === undefined) return false;
  const entries = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const family = isIP(address);
    const maxPrefix = family === 4 ? 32 : 128;
    if (family === 0 || (prefix !== undefined && (!/^\d+$/.test(prefix) || Number(prefix) > maxPrefix))) {
      report(new ConfigError('CPS_TRUST_PROXY', `must be a comma-separated list of proxy addresses or CIDR ranges, got "${entry}"`));
      return false;
    }
  }
  return entries.length > 0 ? entries : false;
}

/** What a start should warn about: settings that work but are likely a mistake. */
export function configWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (config.env === 'production' && config.publicUrl.startsWith('http:')) {
    warnings.push(
      `CPS_PUBLIC_URL is http (${config.publicUrl}) in production: tokens, review links and patient data cross the network unencrypted; serve it behind a TLS reverse proxy and set CPS_PUBLIC_URL to its https address`,
    );
  }
  return warnings;
}

function outboundAllowList(env: Env): string[] {
  const entries = (str(env, 'CPS_OUTBOUND_ALLOW') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  try {
    new OutboundAllowList(entries);
  } catch (error) {
    report(
      new ConfigError('CPS_OUTBOUND_ALLOW', `must be a comma-separated list of addresses, CIDR ranges and host names: ${(error as Error).message}`),
    );
    return [];
  }
  return entries;
}

function defaultReadFile(file: string): string {
  return readFileSync(file, 'utf8');
}
