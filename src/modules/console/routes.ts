/**
 * The console: its page and files, and its sessions (sign in, who am I, sign out). None of these is
 * part of the API (hidden from /openapi.json); what the console shows and changes it reads and changes
 * through the API's own routes, authorised by the session cookie (http/auth.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../../config.ts';
import type { App } from '../../http/app-type.ts';
import { CSRF_HEADER, cookieOf } from '../../http/auth.ts';
import { constantTimeEqual } from '../../security/secrets.ts';
import { AppError } from '../../errors.ts';
import { CONSOLE_HEADERS, type Asset } from './assets.ts';
import type { ConsoleService, OpenedSession } from './service.ts';

const Session = Type.Object({
  kind: Type.Union([Type.Literal('operator'), Type.Literal('client')]),
  business_id: Type.Union([Type.String(), Type.Null()]),
  business_name: Type.Union([Type.String(), Type.Null()]),
  client_id: Type.Union([Type.String(), Type.Null()]),
  scopes: Type.Array(Type.String()),
  csrf_token: Type.String(),
  idle_seconds: Type.Integer(),
  timezone: Type.String(),
});

export function consoleRoutes(service: ConsoleService, assets: Map<string, Asset>, config: Config) {
  return async function plugin(app: App): Promise<void> {
    const family = 'standard' as const;

    /** Secure whenever the browser came over https, and always in production behind an https address. */
    const cookie = (request: FastifyRequest, value: string, maxAge?: number): string => {
      const secure = request.protocol === 'https' || (config.env === 'production' && config.publicUrl.startsWith('https:'));
      return [
        `${service.cookieName}=${value}`,
        'Path=/',
        'HttpOnly',
        'SameSite=Strict',
        ...(secure ? ['Secure'] : []),
        ...(maxAge !== undefined ? [`Max-Age=${maxAge}`] : []),
      ].join('; ');
    };
    const opened = (request: FastifyRequest, reply: FastifyReply, session: OpenedSession) => {
      reply.header('set-cookie', cookie(request, session.token));
      return session.view;
    };

    const send = (request: FastifyRequest, reply: FastifyReply, asset: Asset) => {
      reply.headers(CONSOLE_HEADERS).header('etag', asset.etag).header('cache-control', 'no-cache').type(asset.type);
      if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
      return reply.send(asset.body);
    };
    const page = assets.get('index.html');
    if (!page) throw new Error('the console page (static/index.html) is missing');
    const pageHandler = async (request: FastifyRequest, reply: FastifyReply) => send(request, reply, page);
    const pageConfig = { config: { auth: 'public', family }, schema: { hide: true } } as const;
    app.get('/console', pageConfig, pageHandler);
    // Every path of the console is its one page; the page's script reads the path.
    app.get('/console/*', pageConfig, pageHandler);
    app.get(
      '/console/assets/:file',
      { config: { auth: 'public', family }, schema: { hide: true, params: Type.Object({ file: Type.String({ maxLength: 100 }) }) } },
      async (request, reply) => {
        const asset = assets.get(request.params.file);
        if (!asset || request.params.file === 'index.html') throw new AppError(404, 'No such file');
        return send(request, reply, asset);
      },
    );

    app.post(
      '/console/session/operator',
      { config: { auth: 'admin', family }, schema: { hide: true, response: { 200: Session } } },
      async (request, reply) => opened(request, reply, await service.signInOperator()),
    );
    app.post(
      '/console/session/client',
      {
        config: { auth: 'public', family },
        schema: {
          hide: true,
          body: Type.Object({
            client_id: Type.String({ minLength: 1, maxLength: 200 }),
            client_secret: Type.String({ minLength: 1, maxLength: 500 }),
          }),
          response: { 200: Session },
        },
      },
      async (request, reply) => opened(request, reply, await service.signInClient(request.body.client_id, request.body.client_secret, request.ip)),
    );
    app.get('/console/session', { config: { auth: 'public', family }, schema: { hide: true, response: { 200: Session } } }, async (request) => {
      const token = cookieOf(request, service.cookieName);
      const found = token === null ? null : await service.find(token);
      if (!found) throw new AppError(401, 'Not signed in to the console');
      return found.view;
    });
    app.delete('/console/session', { config: { auth: 'public', family }, schema: { hide: true } }, async (request, reply) => {
      const token = cookieOf(request, service.cookieName);
      const found = token === null ? null : await service.find(token);
      if (token !== null && found) {
        const sent = request.headers[CSRF_HEADER];
        if (typeof sent !== 'string' || !constantTimeEqual(sent, found.csrf)) {
          throw new AppError(403, "Signing out needs the session's X-CSRF-Token");
        }
        await service.signOut(token);
      }
      reply.header('set-cookie', cookie(request, '', 0));
      return reply.code(204).send();
    });
  };
}
