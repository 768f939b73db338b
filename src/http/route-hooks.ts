/**
 * Hooks attached to single routes from an onRoute hook, built once per route with what that route
 * needs (its metric labels, its rate limit), and only on the routes that need them, instead of
 * instance hooks that run everywhere and look the route up on every request (`request.routeOptions`
 * builds a new object per access).
 */
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  onResponseHookHandler,
  onSendHookHandler,
  preHandlerHookHandler,
  preValidationHookHandler,
  RouteOptions,
} from 'fastify';

interface RouteHooks {
  onRequest: onRequestHookHandler;
  preValidation: preValidationHookHandler;
  preHandler: preHandlerHookHandler;
  onSend: onSendHookHandler;
  onResponse: onResponseHookHandler;
}

/** Appends `hook` after the route's own hooks of that name. */
export function addRouteHook<K extends keyof RouteHooks>(route: RouteOptions, name: K, hook: RouteHooks[K]): void {
  setRouteHooks(route, name, (existing) => [...existing, hook]);
}

/** Puts `hook` before the route's own hooks of that name (and those added so far). */
export function prependRouteHook<K extends keyof RouteHooks>(route: RouteOptions, name: K, hook: RouteHooks[K]): void {
  setRouteHooks(route, name, (existing) => [hook, ...existing]);
}

function setRouteHooks<K extends keyof RouteHooks>(
  route: RouteOptions,
  name: K,
  change: (existing: Array<RouteHooks[K]>) => Array<RouteHooks[K]>,
): void {
  const hooks = route as unknown as Record<K, RouteHooks[K] | RouteHooks[K][] | undefined>;
  const existing: RouteHooks[K] | RouteHooks[K][] | undefined = hooks[name];
  // A new array each time: the HEAD route Fastify adds for a GET starts from the GET's options.
  hooks[name] = change(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]);
}

type ResponseObserver = (request: FastifyRequest, reply: FastifyReply) => void;

/**
 * Runs an observer on every response: each route's own, made once from its template (never the raw
 * URL), and `unmatched` for requests no route matched, which run only the instance's hooks.
 */
export function observeResponses(app: FastifyInstance, forRoute: (url: string) => ResponseObserver, unmatched: ResponseObserver): void {
  app.addHook('onRoute', (route) => {
    const observe = forRoute(route.url);
    addRouteHook(route, 'onResponse', (request, reply, done) => {
      observe(request, reply);
      done();
    });
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched(request, reply);
    done();
  });
}
