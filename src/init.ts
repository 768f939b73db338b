/**
 * `cps init`: a complete production environment file with fresh keys, written 0600, and what in it
 * to keep safe. The file is read by systemd (EnvironmentFile=), `node --env-file` or `cps --env-file`:
 * the PEM key is one single-quoted line with \n escapes, which all three keep as written and
 * loadConfig turns back into lines.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, constants, openSync, writeSync } from 'node:fs';
import path from 'node:path';

export interface InitOptions {
  file: string;
  publicUrl: string;
  databaseUrl?: string;
  dataDir: string;
  host: string;
  port: number;
  force: boolean;
}

export interface InitReport {
  file: string;
  mode: '0600';
  keep_safe: Record<string, string>;
  next: string[];
}

export class InitError extends Error {}

const KEEP_SAFE: Record<string, string> = {
  CPS_MASTER_KEY:
    'encrypts stored credentials (webhook signing keys, push service accounts, sealed tokens): without it they cannot be read, so keep a copy apart from the backups; anyone with it and a backup reads them',
  CPS_JWT_PRIVATE_KEY: 'signs access tokens: anyone with it can sign tokens for any business',
  CPS_ADMIN_TOKEN: 'the admin API password: creates businesses and API clients',
};

export function environmentFile(options: Omit<InitOptions, 'file' | 'force'>, now = new Date()): string {
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString().trim();
  const lines = [
    `# OpenCPS production settings, written by \`cps init\` on ${now.toISOString().slice(0, 10)}.`,
    '# KEEP THIS FILE SAFE: it is readable by its owner only (0600); never commit it or copy it into a backup.',
    ...Object.entries(KEEP_SAFE).map(([variable, why]) => `#   ${variable} ${why}.`),
    '# Every variable is described in docs/2-production.md, "Configuration".',
    'CPS_ENV=production',
    `HOST=${options.host}`,
    `PORT=${options.port}`,
    '# The address clients and review links use: https behind a TLS reverse proxy (docs/2-production.md).',
    `CPS_PUBLIC_URL=${options.publicUrl}`,
    options.databaseUrl
      ? `DATABASE_URL=${options.databaseUrl}`
      : '# DATABASE_URL=postgres://cps@127.0.0.1:5432/cps   (unset: SQLite in CPS_DATA_DIR)',
    `CPS_DATA_DIR=${options.dataDir}`,
    `CPS_MASTER_KEY=${randomBytes(32).toString('base64')}`,
    `CPS_ADMIN_TOKEN=${randomBytes(32).toString('base64url')}`,
    `CPS_JWT_PRIVATE_KEY='${pem.replaceAll('\n', '\\n')}'`,
    '# Behind a reverse proxy on this host: CPS_TRUST_PROXY=127.0.0.1',
    '# Webhook receivers on the clinic network: CPS_OUTBOUND_ALLOW=192.168.1.20 (docs/7-security.md, "Outbound connections")',
  ];
  return `${lines.join('\n')}\n`;
}

/** Writes the file 0600; refuses to replace one unless forced (its keys open what is stored). */
export function writeEnvironmentFile(options: InitOptions): InitReport {
  const file = path.resolve(options.file);
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | (options.force ? constants.O_TRUNC : constants.O_EXCL), 0o600);
  } catch (error) {
    if ((error as { code?: string }).code === 'EEXIST') {
      throw new InitError(`${file} exists: its keys may be what opens stored data; pass --force to replace it`);
    }
    throw new InitError(`${file} cannot be written: ${(error as Error).message}`);
  }
  try {
    writeSync(fd, environmentFile(options));
  } finally {
    closeSync(fd);
  }
  // An existing file forced over keeps its mode otherwise.
  chmodSync(file, 0o600);
  return {
    file,
    mode: '0600',
    keep_safe: KEEP_SAFE,
    next: [
      `review CPS_PUBLIC_URL${options.databaseUrl ? '' : ' and DATABASE_URL'} in ${file}`,
      `start: node --env-file=${file} bin/cps.js serve (or cps --env-file ${file} serve, or systemd EnvironmentFile=${file})`,
      'keep a copy of the file somewhere safe and apart from the backups',
    ],
  };
}
