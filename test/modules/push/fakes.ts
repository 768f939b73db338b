/**
 * Local stand-ins for Google's OAuth token endpoint and FCM HTTP v1, on port 0. The token endpoint
 * verifies the JWT-bearer assertion with the service account's public key, as Google does.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jwtVerify, type JWTPayload, type JWTHeaderParameters } from 'jose';

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function send(response: ServerResponse, reply: Reply): void {
  response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
  response.end(reply.body === undefined ? '' : JSON.stringify(reply.body));
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export interface RsaKey {
  pem: string;
  publicKey: KeyObject;
}

export function rsaKey(): RsaKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { pem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), publicKey };
}

export function saKey(key: RsaKey, tokenUri: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'service_account',
    project_id: 'demo-project',
    private_key_id: 'kid-0123456789abcdef',
    private_key: key.pem,
    client_email: 'fcm-sender@demo-project.iam.gserviceaccount.com',
    client_id: '112233445566778899',
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: tokenUri,
    auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
    client_x509_cert_url: 'https://www.googleapis.com/robot/v1/metadata/x509/fcm-sender%40demo-project.iam.gserviceaccount.com',
    universal_domain: 'googleapis.com',
    ...overrides,
  };
}

export interface Verified {
  header: JWTHeaderParameters;
  payload: JWTPayload;
}

export class FakeOAuth {
  url = '';
  readonly server: Server;
  readonly verified: Verified[] = [];
  readonly rejected: string[] = [];
  /** Lifetime of issued tokens. */
  expiresIn = 3600;
  /** Replies to give before issuing tokens again (for error cases). */
  script: Reply[] = [];
  private issued = 0;

  constructor(publicKey: KeyObject, expected: { iss: string; kid: string }) {
    this.server = createServer((request, response) => {
      void (async () => {
        const body = new URLSearchParams(await readBody(request));
        const scripted = this.script.shift();
        if (scripted) return send(response, scripted);
        if (
          request.method !== 'POST' ||
          !request.url?.startsWith('/token') ||
          request.headers['content-type'] !== 'application/x-www-form-urlencoded' ||
          body.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer'
        ) {
          this.rejected.push('bad request shape');
          return send(response, { status: 400, body: { error: 'invalid_request' } });
        }
        try {
          const { payload, protectedHeader } = await jwtVerify(body.get('assertion') ?? '', publicKey, {
            algorithms: ['RS256'],
            issuer: expected.iss,
            audience: `${this.url}/token`,
          });
          if (protectedHeader.kid !== expected.kid) throw new Error('kid');
          this.verified.push({ header: protectedHeader, payload });
        } catch (error) {
          this.rejected.push(String((error as Error).message));
          return send(response, { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } });
        }
        this.issued++;
        send(response, { status: 200, body: { access_token: `ya29.fake-${this.issued}`, expires_in: this.expiresIn, token_type: 'Bearer' } });
      })();
    });
  }

  get tokenUri(): string {
    return `${this.url}/token`;
  }

  async start(): Promise<this> {
    this.url = await listen(this.server);
    return this;
  }

  stop(): Promise<void> {
    return close(this.server);
  }
}

export interface FcmRequest {
  project: string;
  authorization: string | undefined;
  message: { token: string; notification?: { title: string; body: string }; data?: Record<string, string> };
}

export class FakeFcm {
  url = '';
  readonly server: Server;
  readonly requests: FcmRequest[] = [];
  /** Replies for a token, used in order; the last one repeats. Unlisted tokens succeed. */
  readonly byToken = new Map<string, Reply[]>();
  inFlight = 0;
  maxInFlight = 0;
  /** While set, requests wait for it before answering. */
  gate: Promise<void> | null = null;
  private count = 0;

  constructor() {
    this.server = createServer((request, response) => {
      void (async () => {
        this.inFlight++;
        this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
        try {
          const match = /^\/v1\/projects\/([^/]+)\/messages:send$/.exec(request.url ?? '');
          const raw = await readBody(request);
          if (request.method !== 'POST' || !match) return send(response, { status: 404, body: { error: { code: 404, status: 'NOT_FOUND' } } });
          const { message } = JSON.parse(raw) as { message: FcmRequest['message'] };
          this.requests.push({ project: decodeURIComponent(match[1]!), authorization: request.headers.authorization, message });
          if (this.gate) await this.gate;
          const replies = this.byToken.get(message.token);
          const reply = replies && replies.length > 1 ? replies.shift()! : replies?.[0];
          send(response, reply ?? { status: 200, body: { name: `projects/${match[1]}/messages/${++this.count}` } });
        } finally {
          this.inFlight--;
        }
      })();
    });
  }

  async start(): Promise<this> {
    this.url = await listen(this.server);
    return this;
  }

  stop(): Promise<void> {
    return close(this.server);
  }
}

export const UNREGISTERED: Reply = {
  status: 404,
  body: {
    error: {
      code: 404,
      message: 'Requested entity was not found.',
      status: 'NOT_FOUND',
      details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }],
    },
  },
};

export const INVALID_TOKEN: Reply = {
  status: 400,
  body: {
    error: {
      code: 400,
      message: 'The registration token is not a valid FCM registration token',
      status: 'INVALID_ARGUMENT',
      details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'INVALID_ARGUMENT' }],
    },
  },
};

export function unavailable(retryAfter?: string): Reply {
  return {
    status: 503,
    body: { error: { code: 503, message: 'The service is currently unavailable.', status: 'UNAVAILABLE' } },
    ...(retryAfter !== undefined ? { headers: { 'retry-after': retryAfter } } : {}),
  };
}
