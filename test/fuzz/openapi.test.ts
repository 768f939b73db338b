/**
 * Fuzz test driven by the app's own OpenAPI document (GET /openapi.json): for every operation, valid
 * requests generated from its schemas (addressing stored records) and hostile ones (wrong types, sizes,
 * nesting, NUL and lone surrogates, duplicate and prototype keys, odd numbers, other content types,
 * malformed JSON and URLs, over-long ids). Every response must be below 500, carry x-request-id and
 * Cache-Control: no-store, and an error must be in its path's family body (contract section 0); a
 * refused write must leave the database as it was.
 *
 * In the suite: a fixed seed and a small size. `npm run fuzz`: a longer run, FUZZ_SEED or a random
 * seed (printed); FUZZ_VALID_RUNS / FUZZ_HOSTILE_RUNS set the runs per operation, FUZZ_ONLY a
 * substring of "METHOD /path" to fuzz only matching operations; FUZZ_TRACE=1 prints every exchange;
 * FUZZ_COLLECT=FILE appends every failing exchange to FILE and goes on (to survey failure classes).
 */
import { appendFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { createTestApp, type TestApp } from '../support.ts';
import {
  Big,
  controlString,
  controlUrlText,
  encodeAny,
  Entries,
  hostileHeaderText,
  hostileUrlText,
  hostileValue,
  malformedBody,
  METHODS,
  nesting,
  otherContentType,
  PROTOTYPE_KEYS,
  prototypeObject,
  toJsonText,
  toText,
} from './hostile.ts';
import { checkResponse, describeExchange, type Exchange } from './oracle.ts';
import { ADMIN_BEARER, changedTables, createFixtures, FRESH_REFRESH_TOKEN, mintRefreshToken, NOWHERE, StoredState, type Fixtures } from './stored.ts';
import { businessRules, freeFormPaths, propertyPaths, stringPaths, valueFor, type JsonSchema, type Pools } from './valid.ts';

const LONG = process.env.FUZZ_LONG === '1';
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : LONG ? Math.floor(Math.random() * 2 ** 31) : 20261125;
const VALID_RUNS = Number(process.env.FUZZ_VALID_RUNS ?? (LONG ? 100 : 6));
const HOSTILE_RUNS = Number(process.env.FUZZ_HOSTILE_RUNS ?? (LONG ? 400 : 20));
const ONLY = process.env.FUZZ_ONLY ?? '';
/** A file to append every failing exchange to (one JSON line each) instead of stopping at the first per property. */
const COLLECT = process.env.FUZZ_COLLECT ?? '';
/** Prints every exchange in one line, to see what the generators reach. */
const TRACE = process.env.FUZZ_TRACE === '1';

/** Over-long bodies are refused after reading 1 MiB; the padding makes a valid body just larger than that. */
const OVERSIZE_PADDING = 1024 * 1024 + 1;

interface Operation {
  method: string;
  path: string;
  pathParams: Array<{ name: string; schema: JsonSchema }>;
  queryParams: Array<{ name: string; required: boolean; schema: JsonSchema }>;
  headerParams: Array<{ name: string; required: boolean; schema: JsonSchema }>;
  body: { type: 'json' | 'form'; schema: JsonSchema; required: boolean } | null;
  auth: 'public' | 'admin' | 'client';
  /** Responses documented as HTML pages (the review page): its errors are pages too. */
  html: boolean;
}

/** A request before it is written: values, and markers for hostile parts written raw. */
interface Plan {
  method: string;
  path: string;
  params: Record<string, unknown>;
  query: Array<[string, unknown]>;
  headers: Record<string, unknown>;
  body:
    | { kind: 'none' }
    | { kind: 'json'; value: unknown }
    | { kind: 'form'; value: Record<string, unknown> }
    | { kind: 'raw'; data: string | Uint8Array };
  /** Overrides the body's own content type; null sends none. */
  contentType?: string | null;
}

/** The fixtures' credentials, written into the request when it is sent (and kept short in reports). */
class Credential {
  readonly form: 'admin' | 'bearer' | 'raw';
  constructor(form: 'admin' | 'bearer' | 'raw') {
    this.form = form;
  }
  text(token: string): string {
    return this.form === 'admin' ? ADMIN_BEARER : this.form === 'bearer' ? `Bearer ${token}` : token;
  }
  [fc.toStringMethod](): string {
    return `Credential(${this.form})`;
  }
}

/** A URL part written as is: already percent-encoded, or malformed on purpose. */
class UrlRaw {
  readonly value: unknown;
  constructor(value: unknown) {
    this.value = value;
  }
  [fc.toStringMethod](): string {
    return `UrlRaw(${fc.stringify(this.value)})`;
  }
}

function operationsOf(document: any): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const parameters: any[] = op.parameters ?? [];
      const content = op.requestBody?.content ?? {};
      const bodyType = content['application/json'] ? 'json' : content['application/x-www-form-urlencoded'] ? 'form' : null;
      const responses = Object.values<any>(op.responses ?? {});
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        queryParams: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, required: Boolean(p.required), schema: p.schema ?? {} })),
        headerParams: parameters
          .filter((p) => p.in === 'header')
          .map((p) => ({ name: p.name.toLowerCase(), required: Boolean(p.required), schema: p.schema ?? {} })),
        body: bodyType
          ? {
              type: bodyType,
              schema: content[bodyType === 'json' ? 'application/json' : 'application/x-www-form-urlencoded'].schema,
              required: Boolean(op.requestBody.required),
            }
          : null,
        auth: !op.security ? 'public' : path.startsWith('/admin/') ? 'admin' : 'client',
        html:
          responses.length > 0 &&
          responses.every((response) => response.content && Object.keys(response.content).every((type) => type === 'text/html')),
      });
    }
  }
  // Deletions last, so the other operations find the records they address.
  return operations.sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
}

/** The pool a path parameter draws from: the kind of record the path addresses. */
function pathPool(path: string, name: string): string {
  if (name !== 'id') return name === 'token' ? 'review_token' : name;
  if (path.startsWith('/cdr/v1/clinic')) return 'clinic_id';
  if (path.startsWith('/cdr/v1/doctor')) return 'doctor_id';
  if (path.startsWith('/mr/')) return 'case_id';
  if (path.includes('/webhook/subscriptions')) return 'subscription_id';
  return name;
}

function validPlan(op: Operation, fixtures: Fixtures): fc.Arbitrary<Plan> {
  // `?partner_id=1` makes the path's id the partner's own: generate both ways of addressing a record.
  if (op.queryParams.some((p) => p.name === 'partner_id') && op.pathParams.length > 0) {
    return fc.oneof(validPlanAddressing(op, fixtures, 'service'), validPlanAddressing(op, fixtures, 'partner'));
  }
  return validPlanAddressing(op, fixtures, 'service');
}

function validPlanAddressing(op: Operation, fixtures: Fixtures, addressing: 'service' | 'partner'): fc.Arbitrary<Plan> {
  const pools: Pools = (name) => {
    if (name === 'partner_id?') return addressing === 'partner' ? ['1'] : ['0'];
    return fixtures.pools[name];
  };
  const params = fc.record(
    Object.fromEntries(
      op.pathParams.map((p) => {
        const pool = pathPool(op.path, p.name);
        return [p.name, valueFor(p.schema, addressing === 'partner' ? `partner_${pool}` : pool, pools)];
      }),
    ),
  );
  const query = fc
    .tuple(
      fc.record(
        // The query's partner_id is a flag; a body's partner_id is the partner's own id.
        Object.fromEntries(op.queryParams.map((p) => [p.name, valueFor(p.schema, p.name === 'partner_id' ? 'partner_id?' : p.name, pools)])),
        { requiredKeys: op.queryParams.filter((p) => p.required || (addressing === 'partner' && p.name === 'partner_id')).map((p) => p.name) },
      ),
      fc.boolean(),
    )
    .map(([values, keepFirst]) => Object.entries(businessRules(values, keepFirst)) as Array<[string, unknown]>);
  const declaredHeaders = fc.record(Object.fromEntries(op.headerParams.map((p) => [p.name, valueFor(p.schema, p.name, pools)])), {
    requiredKeys: op.headerParams.filter((p) => p.required).map((p) => p.name),
  });
  const auth: fc.Arbitrary<Record<string, Credential>> =
    op.auth === 'admin'
      ? fc.constant({ authorization: new Credential('admin') })
      : op.auth === 'client'
        ? fc.constantFrom({ authorization: new Credential('bearer') }, { auth: new Credential('raw') })
        : fc.constant({});
  const headers = fc.tuple(declaredHeaders, auth).map(([declared, credentials]) => ({ ...declared, ...credentials }));
  const body: fc.Arbitrary<{ body: Plan['body']; contentType?: string | null }> = !op.body
    ? // No body, or an empty one that says it is JSON: both accepted (contract section 0).
      fc.constantFrom({ body: { kind: 'none' as const } }, { body: { kind: 'none' as const }, contentType: 'application/json' })
    : valueFor(op.body.schema, undefined, pools).map((value) =>
        op.body!.type === 'form'
          ? { body: { kind: 'form' as const, value: value as Record<string, unknown> } }
          : { body: { kind: 'json' as const, value } },
      );
  return fc.record({ params, query, headers, body }).map(({ params: p, query: q, headers: h, body: b }) => ({
    method: op.method,
    path: op.path,
    params: p,
    query: q,
    headers: h,
    ...b,
  }));
}

type Mutation =
  | { kind: 'body'; value: unknown }
  | { kind: 'field'; path: string[]; value: unknown }
  | { kind: 'duplicate-key'; path: string[]; value: unknown; hostileFirst: boolean }
  | { kind: 'raw-body'; data: string | Uint8Array }
  | { kind: 'content-type'; value: string | null }
  | { kind: 'oversize' }
  | { kind: 'param'; name: string; value: unknown }
  | { kind: 'query'; name: string; value: unknown; append: boolean }
  | { kind: 'header'; name: string; value: unknown }
  | { kind: 'method'; value: string };

function mutationOf(op: Operation): fc.Arbitrary<Mutation> {
  const fieldPaths = [...propertyPaths(op.body?.schema), ...PROTOTYPE_KEYS.map((key) => [key]), ['unknown_field']];
  const nestedPrototype = propertyPaths(op.body?.schema)
    .filter((path) => path.length === 1)
    .map((path) => [...path, '__proto__']);
  const paths = fc.constantFrom(...fieldPaths, ...nestedPrototype);
  const queryNames = [...op.queryParams.map((p) => p.name), 'unknown', '__proto__', 'constructor', 'q[]', 'page_no[]'];
  const headerNames = [
    ...op.headerParams.map((p) => p.name),
    'authorization',
    'auth',
    'x-request-id',
    'x-pt-id',
    'device-id',
    'accept',
    'content-encoding',
  ];
  const choices: Array<fc.WeightedArbitrary<Mutation>> = [
    { weight: 2, arbitrary: hostileValue.map((value) => ({ kind: 'body' as const, value })) },
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('field' as const), path: paths, value: hostileValue }) },
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant('duplicate-key' as const), path: paths, value: hostileValue, hostileFirst: fc.boolean() }),
    },
    { weight: 2, arbitrary: malformedBody.map((data) => ({ kind: 'raw-body' as const, data })) },
    { weight: 2, arbitrary: otherContentType.map((value) => ({ kind: 'content-type' as const, value })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'oversize' as const }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('query' as const),
        name: fc.constantFrom(...queryNames),
        value: hostileUrlText,
        append: fc.boolean(),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('header' as const), name: fc.constantFrom(...headerNames), value: hostileHeaderText }) },
    { weight: 1, arbitrary: fc.constantFrom(...METHODS.filter((m) => m !== op.method)).map((value) => ({ kind: 'method' as const, value })) },
  ];
  const strings = stringPaths(op.body?.schema);
  if (strings.length > 0) {
    choices.push({
      weight: 3,
      arbitrary: fc.record({ kind: fc.constant('field' as const), path: fc.constantFrom(...strings), value: controlString }),
    });
  }
  if (op.queryParams.length > 0) {
    choices.push({
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('query' as const),
        name: fc.constantFrom(...op.queryParams.map((p) => p.name)),
        value: controlUrlText,
        append: fc.constant(false),
      }),
    });
  }
  if (op.pathParams.length > 0) {
    choices.push({
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('param' as const),
        name: fc.constantFrom(...op.pathParams.map((p) => p.name)),
        value: controlUrlText,
      }),
    });
  }
  const freeForm = freeFormPaths(op.body?.schema);
  if (freeForm.length > 0) {
    // Free-form objects take any JSON: their depth, width and keys are what the service must bound.
    const inside = fc.oneof({ weight: 2, arbitrary: nesting }, { weight: 1, arbitrary: prototypeObject }, { weight: 1, arbitrary: hostileValue });
    choices.push({
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('field' as const),
        path: fc.constantFrom(...freeForm).chain((path) => fc.constantFrom(path, [...path, 'nested'])),
        value: inside,
      }),
    });
  }
  if (op.pathParams.length > 0) {
    choices.push({
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('param' as const),
        name: fc.constantFrom(...op.pathParams.map((p) => p.name)),
        value: hostileUrlText,
      }),
    });
  }
  return fc.oneof(...choices);
}

/** Sets `value` at `path` as an own property (so __proto__ is a key, not the prototype). */
function setAt(root: Record<string, unknown>, path: string[], value: unknown): void {
  let node = root;
  for (const [i, key] of path.entries()) {
    if (i === path.length - 1) {
      Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
      return;
    }
    const next = Object.hasOwn(node, key) ? node[key] : undefined;
    if (next === null || typeof next !== 'object' || Array.isArray(next) || next.constructor !== Object) {
      const fresh: Record<string, unknown> = {};
      Object.defineProperty(node, key, { value: fresh, enumerable: true, writable: true, configurable: true });
      node = fresh;
    } else {
      node = next as Record<string, unknown>;
    }
  }
}

function bodyObject(plan: Plan): Record<string, unknown> {
  const value = plan.body.kind === 'json' || plan.body.kind === 'form' ? plan.body.value : undefined;
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (structuredClone(value) as Record<string, unknown>) : {};
}

function applyMutation(plan: Plan, mutation: Mutation): Plan {
  const keepForm = (value: Record<string, unknown>): Plan['body'] => (plan.body.kind === 'form' ? { kind: 'form', value } : { kind: 'json', value });
  switch (mutation.kind) {
    case 'body':
      return { ...plan, body: { kind: 'json', value: mutation.value } };
    case 'field': {
      const root = bodyObject(plan);
      setAt(root, mutation.path, mutation.value);
      return { ...plan, body: keepForm(root) };
    }
    case 'duplicate-key': {
      const root = bodyObject(plan);
      const parentPath = mutation.path.slice(0, -1);
      const key = mutation.path[mutation.path.length - 1]!;
      let parent: Record<string, unknown> = root;
      if (parentPath.length > 0) {
        setAt(root, parentPath, {});
        parent = parentPath.reduce<Record<string, unknown>>((node, k) => node[k] as Record<string, unknown>, root);
        const original = parentPath.reduce<unknown>((node, k) => (node as Record<string, unknown> | undefined)?.[k], bodyObject(plan));
        if (original && typeof original === 'object' && !Array.isArray(original)) Object.assign(parent, original);
      }
      const entries = Object.keys(parent).map((k) => [k, parent[k]] as [string, unknown]);
      const duplicated = new Entries(mutation.hostileFirst ? [[key, mutation.value], ...entries] : [...entries, [key, mutation.value]]);
      if (parentPath.length === 0) return { ...plan, body: { kind: 'json', value: duplicated } };
      setAt(root, parentPath, duplicated);
      return { ...plan, body: { kind: 'json', value: root } };
    }
    case 'raw-body':
      return { ...plan, body: { kind: 'raw', data: mutation.data } };
    case 'content-type':
      return { ...plan, contentType: mutation.value };
    case 'oversize': {
      const root = bodyObject(plan);
      setAt(root, ['padding'], new Big('x', OVERSIZE_PADDING));
      return { ...plan, body: keepForm(root) };
    }
    case 'param':
      return { ...plan, params: { ...plan.params, [mutation.name]: new UrlRaw(mutation.value) } };
    case 'query': {
      const others = mutation.append ? plan.query : plan.query.filter(([name]) => name !== mutation.name);
      return { ...plan, query: [...others, [mutation.name, new UrlRaw(mutation.value)]] };
    }
    case 'header':
      return { ...plan, headers: { ...plan.headers, [mutation.name]: mutation.value } };
    case 'method':
      return { ...plan, method: mutation.value };
  }
}

function hostilePlan(op: Operation, fixtures: Fixtures): fc.Arbitrary<{ valid: Plan; mutations: Mutation[] }> {
  return fc.record({ valid: validPlan(op, fixtures), mutations: fc.array(mutationOf(op), { minLength: 1, maxLength: 2 }) });
}

const urlPart = (value: unknown) =>
  value instanceof UrlRaw ? toText(value.value) : encodeAny(typeof value === 'string' ? value : JSON.stringify(value));

/** The request as sent: URL, headers and payload. */
function render(plan: Plan, token: string): Exchange['request'] {
  const path = plan.path.replace(/\{([^}]+)\}/g, (_match, name: string) => urlPart(plan.params[name]));
  const query = plan.query.map(([name, value]) => `${encodeAny(name)}=${urlPart(value)}`).join('&');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(plan.headers))
    headers[name] =
      value instanceof Credential
        ? value.text(token)
        : value instanceof Big
          ? value.text()
          : typeof value === 'string'
            ? value
            : JSON.stringify(value);
  let payload: string | Buffer | undefined;
  let contentType: string | undefined;
  switch (plan.body.kind) {
    case 'none':
      if (plan.contentType) payload = '';
      break;
    case 'json':
      payload = toJsonText(plan.body.value);
      contentType = 'application/json';
      break;
    case 'form': {
      const form = new URLSearchParams();
      for (const [name, value] of Object.entries(plan.body.value))
        form.append(name, value instanceof Big ? value.text() : typeof value === 'string' ? value : toJsonText(value));
      payload = form.toString();
      contentType = 'application/x-www-form-urlencoded';
      break;
    }
    case 'raw':
      payload = typeof plan.body.data === 'string' ? plan.body.data : Buffer.from(plan.body.data);
      contentType = 'application/json';
      break;
  }
  if (plan.contentType !== undefined) contentType = plan.contentType ?? undefined;
  if (contentType !== undefined) headers['content-type'] = contentType;
  return { method: plan.method, url: query ? `${path}?${query}` : path, headers, payload };
}

/** A path template as a pattern of the paths it routes (one segment per parameter, optional trailing slash). */
function templatePattern(template: string): RegExp {
  return new RegExp(
    `^${template
      .split(/\{[^}]+\}/)
      .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
      .join('[^/]+')}/?$`,
  );
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

// One test per operation (each well inside the suite's per-test timeout); the operations come from
// the document of the app under test, so the suite is declared once that app is built.
describe(`fuzz from /openapi.json (seed ${SEED}, ${VALID_RUNS} valid and ${HOSTILE_RUNS} hostile runs per operation)`, async () => {
  // The search rate limit would answer most of the fuzz's searches 429 before they reach the engine.
  const t: TestApp = await createTestApp({ env: { CPS_SEARCH_RATE_LIMIT: '1000000', CPS_SEARCH_RATE_BURST: '1000000', CPS_FCM_URL: NOWHERE } });
  const operations = operationsOf((await t.app.inject({ method: 'GET', url: '/openapi.json' })).json()).filter((op) =>
    `${op.method} ${op.path}`.includes(ONLY),
  );
  const stored = new StoredState(t);
  let fixtures: Fixtures;
  /** The last snapshot, while nothing can have written since it was taken. */
  let cachedState: Map<string, string> | null = null;
  const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort().join();
  let requests = 0;
  let collected = 0;

  before(async () => {
    fixtures = await createFixtures(t);
    console.log(`fuzz seed ${SEED} (reproduce: FUZZ_SEED=${SEED} npm run fuzz)`);
  });

  after(async () => {
    console.log(`fuzz: ${operations.length} operations, ${requests} requests`);
    await t.close();
  });

  /** Sends one request and checks every property of its response; throws a description on failure. */
  async function exchange(plan: Plan): Promise<number> {
    const request = render(plan, fixtures.client.token);
    if (typeof request.payload === 'string' && request.payload.includes(FRESH_REFRESH_TOKEN)) {
      request.payload = request.payload.replaceAll(FRESH_REFRESH_TOKEN, await mintRefreshToken(t, fixtures.client));
      cachedState = null;
    }
    const write = WRITES.has(request.method);
    const before = write ? (cachedState ?? (await stored.snapshot())) : null;
    requests++;
    const response = await t.app.inject({
      method: request.method as 'GET',
      url: request.url,
      headers: request.headers,
      ...(request.payload === undefined ? {} : { payload: request.payload }),
    });
    const result: Exchange = { request, response: { status: response.statusCode, headers: response.headers, body: response.body } };
    const pathname = request.url.split('?')[0]!;
    const problems = checkResponse(result, {
      htmlPage: operations.some((o) => o.html && o.method === request.method && templatePattern(o.path).test(pathname)),
    });
    if (Object.getOwnPropertyNames(Object.prototype).sort().join() !== prototypeKeys || ({} as Record<string, unknown>).polluted !== undefined) {
      problems.push('Object.prototype was changed (prototype pollution)');
    }
    if (write && before && response.statusCode >= 400 && response.statusCode < 500) {
      const afterState = await stored.snapshot();
      const changed = changedTables(before, afterState);
      if (changed.length > 0) problems.push(`a refused ${request.method} changed stored state in: ${changed.join(', ')}`);
      cachedState = afterState;
    } else {
      cachedState = null;
    }
    if (TRACE)
      console.log(
        `${response.statusCode} ${request.method} ${request.url.slice(0, 160)} ${String(request.payload ?? '').slice(0, 160)} -> ${response.body.slice(0, 200)}`,
      );
    if (problems.length > 0 && COLLECT) {
      collected++;
      appendFileSync(
        COLLECT,
        `${JSON.stringify({ operation: `${plan.method} ${plan.path}`, problems, request: { ...request, payload: String(request.payload ?? '').slice(0, 300) }, status: response.statusCode, body: response.body.slice(0, 300) })}\n`,
      );
    } else if (problems.length > 0) {
      throw new Error(`${problems.join('; ')}\n${describeExchange(result)}`);
    }
    return response.statusCode;
  }

  for (const op of operations) {
    it(`${op.method} ${op.path}`, async (ctx) => {
      const tallies = { valid: new Map<number, number>(), hostile: new Map<number, number>() };
      const errors: unknown[] = [];
      const collectedBefore = collected;
      for (const [kind, arbitrary, runs] of [
        ['valid', validPlan(op, fixtures), VALID_RUNS],
        ['hostile', hostilePlan(op, fixtures).map(({ valid, mutations }) => mutations.reduce(applyMutation, valid)), HOSTILE_RUNS],
      ] as const) {
        try {
          await fc.assert(
            fc.asyncProperty(arbitrary, async (plan: Plan) => {
              const status = await exchange(plan);
              tallies[kind].set(status, (tallies[kind].get(status) ?? 0) + 1);
            }),
            { seed: SEED, numRuns: runs },
          );
        } catch (error) {
          errors.push(error);
        }
      }
      const summary = (map: Map<number, number>) =>
        [...map.entries()]
          .sort(([a], [b]) => a - b)
          .map(([status, n]) => `${status}x${n}`)
          .join(' ');
      ctx.diagnostic(`valid ${summary(tallies.valid)} | hostile ${summary(tallies.hostile)}`);
      if (errors.length > 0) throw errors.length === 1 ? errors[0] : new AggregateError(errors, errors.map((e) => (e as Error).message).join('\n\n'));
      if (collected > collectedBefore) throw new Error(`${collected - collectedBefore} failing exchanges written to ${COLLECT} (seed ${SEED})`);
    });
  }

  // What the writes above stored must stay readable: one client's accepted input must not break reads.
  for (const op of operations.filter((o) => o.method === 'GET')) {
    it(`${op.method} ${op.path} after the writes`, async () => {
      await fc.assert(
        fc.asyncProperty(validPlan(op, fixtures), async (plan: Plan) => {
          await exchange(plan);
        }),
        { seed: SEED + 1, numRuns: VALID_RUNS },
      );
    });
  }
});
