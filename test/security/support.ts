/**
 * Stubs for outbound tests: DNS answers from a table (recording every question), a loopback
 * listener that counts connections (the "must receive nothing" side of a refusal), and the
 * environment of a production app. Nothing here reaches past loopback.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { isIP } from 'node:net';
import type { Resolver } from '../../src/security/outbound.ts';

export interface StubResolver {
  resolve: Resolver;
  /** Every name asked, in order. */
  asked: string[];
  /** Replaces the answers for a name (e.g. after "registration", as in DNS rebinding). */
  answer(name: string, addresses: string[]): void;
  /**
   * From now on every name answers 127.0.0.1 (DNS rebinding for all): called once registrations
   * are done, so no socket can ever be sent to the public addresses used for them.
   */
  rebindAll(): void;
}

/** Names not in the table do not resolve (ENOTFOUND). */
export function stubResolver(table: Record<string, string[]> = {}): StubResolver {
  const answers = new Map(Object.entries(table));
  const asked: string[] = [];
  let rebound = false;
  return {
    asked,
    answer: (name, addresses) => answers.set(name, addresses),
    rebindAll: () => {
      rebound = true;
    },
    resolve: async (name) => {
      asked.push(name);
      const found = rebound ? ['127.0.0.1'] : answers.get(name);
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return found.map((address): LookupAddress => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
    },
  };
}

export interface CountingListener {
  port: number;
  connections(): number;
  close(): Promise<void>;
}

/** A TCP listener on 127.0.0.1 that accepts and counts connections, and answers nothing. */
export async function countingListener(): Promise<CountingListener> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What loadConfig requires of a production app, beside the test defaults. */
export function productionEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    CPS_ENV: 'production',
    CPS_JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    CPS_MASTER_KEY: randomBytes(32).toString('base64'),
    CPS_PUBLIC_URL: 'https://cps.test',
    ...extra,
  };
}
