/**
 * Values that satisfy a JSON Schema from the OpenAPI document, as fast-check arbitraries, so that
 * generated requests get past validation and reach the handlers. Names with a pool of stored values
 * (clinic_id, x-pt-id, ...) mostly draw from it, so requests address records that exist.
 */
import fc from 'fast-check';

export type JsonSchema = Record<string, any>;

/**
 * Stored values for a field or parameter name (or an arbitrary of values that pass the handler's own
 * rules beyond the schema); undefined when the name has none.
 */
export type Pools = (name: string) => readonly string[] | fc.Arbitrary<unknown> | undefined;

/** Sizes of valid samples: enough to vary, small enough to keep each request cheap. */
const MAX_SAMPLE_ITEMS = 4;
const MAX_SAMPLE_STRING = 40;
const MAX_SAMPLE_LENGTH_AT_LIMIT = 5000;
const MAX_EPOCH_SECONDS = 253402300799;

const codePoints = (s: string) => [...s].length;

function hasType(schema: JsonSchema, type: string): boolean {
  return schema.type === type || (Array.isArray(schema.type) && schema.type.includes(type));
}

/** A schema value, from the name's pool most of the time when it has one. */
export function valueFor(schema: JsonSchema, name: string | undefined, pools: Pools): fc.Arbitrary<unknown> {
  const plain = schemaArbitrary(schema, name, pools);
  const pool = name === undefined ? undefined : pools(name);
  if (pool instanceof fc.Arbitrary) return fc.oneof({ arbitrary: pool, weight: 4 }, { arbitrary: plain, weight: 1 });
  if (pool && pool.length > 0 && (schema.type === undefined || hasType(schema, 'string') || hasType(schema, 'array'))) {
    const stored = hasType(schema, 'array')
      ? fc.uniqueArray(fc.constantFrom(...pool), { minLength: 1, maxLength: Math.min(pool.length, MAX_SAMPLE_ITEMS) })
      : fc.constantFrom(...pool);
    return fc.oneof({ arbitrary: stored, weight: 4 }, { arbitrary: plain, weight: 1 });
  }
  return plain;
}

function schemaArbitrary(schema: JsonSchema, name: string | undefined, pools: Pools): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union))
    return fc.oneof(...union.map((branch: JsonSchema) => valueFor({ ...schema, anyOf: undefined, oneOf: undefined, ...branch }, name, pools)));
  if (Array.isArray(schema.type)) return fc.oneof(...schema.type.map((type: string) => schemaArbitrary({ ...schema, type }, name, pools)));
  switch (schema.type) {
    case 'string':
      return stringArbitrary(schema, name);
    case 'integer':
      return integerArbitrary(schema, name);
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(valueFor(schema.items ?? {}, name, pools), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? MAX_SAMPLE_ITEMS, MAX_SAMPLE_ITEMS)),
      });
    case 'object':
      return objectArbitrary(schema, pools);
    default:
      return schema.properties ? objectArbitrary(schema, pools) : freeForm;
  }
}

/** A free-form JSON value of modest depth (bounded depth is the contract for free-form objects). */
const freeForm: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 2 });

function objectArbitrary(schema: JsonSchema, pools: Pools): fc.Arbitrary<unknown> {
  const properties: Record<string, JsonSchema> = schema.properties ?? {};
  const fields = Object.fromEntries(Object.entries(properties).map(([key, property]) => [key, valueFor(property, key, pools)]));
  const record = fc.record(fields, { requiredKeys: (schema.required ?? []) as string[] });
  const extra = schema.additionalProperties;
  const extraValues =
    extra === true || (typeof extra === 'object' && extra !== null && Object.keys(extra).length === 0)
      ? freeForm
      : typeof extra === 'object' && extra !== null
        ? schemaArbitrary(extra, undefined, pools)
        : null;
  const withExtra = extraValues
    ? fc
        .tuple(record, fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), extraValues, { maxKeys: 3, noNullPrototype: true }))
        .map(([known, more]) => ({
          ...Object.fromEntries(Object.entries(more).filter(([key]) => !(key in properties) && key !== '__proto__')),
          ...known,
        }))
    : record;
  return fc.tuple(withExtra, fc.boolean()).map(([value, keepFirst]) => businessRules(value, keepFirst));
}

/** Fields a handler accepts only one of (a service id or the partner's, dob or age, patient or devices). */
const EXCLUSIVE: Array<[string, string]> = [
  ['clinic_id', 'partner_clinic_id'],
  ['doctor_id', 'partner_doctor_id'],
  ['clinic_ids', 'partner_clinic_ids'],
  ['doctor_ids', 'partner_doctor_ids'],
  ['dob', 'age'],
  ['patient_id', 'device_ids'],
];
const ORDERED: Array<[string, string]> = [
  ['start_time', 'end_time'],
  ['start_date', 'end_date'],
];

/**
 * Rules the handlers add to the schemas, applied so that most valid requests reach the database:
 * one of each exclusive pair, and ranges in order (the others are business-rule 400s).
 */
export function businessRules(value: Record<string, unknown>, keepFirst: boolean): Record<string, unknown> {
  const out = { ...value };
  for (const [a, b] of EXCLUSIVE) if (a in out && b in out) delete out[keepFirst ? b : a];
  for (const [from, to] of ORDERED) {
    const [start, end] = [out[from], out[to]];
    if ((typeof start === 'number' || typeof start === 'string') && typeof start === typeof end && start! > end!) [out[from], out[to]] = [end, start];
  }
  return out;
}

function integerArbitrary(schema: JsonSchema, name: string | undefined): fc.Arbitrary<number> {
  const min = Math.max(schema.minimum ?? -(2 ** 31), Number.MIN_SAFE_INTEGER);
  const max = Math.min(schema.maximum ?? 2 ** 31 - 1, Number.MAX_SAFE_INTEGER);
  // Epochs near now (bookings, case dates) alongside the whole range with its bounds.
  if (max === MAX_EPOCH_SECONDS && (name?.endsWith('_time') || name?.endsWith('_at'))) {
    return fc.oneof({ arbitrary: fc.integer({ min: 1_700_000_000, max: 1_950_000_000 }), weight: 3 }, fc.integer({ min, max }));
  }
  return fc.integer({ min, max });
}

const isoDate = fc
  .date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2100-12-31T00:00:00Z'), noInvalidDate: true })
  .map((date) => date.toISOString().slice(0, 10));

function stringArbitrary(schema: JsonSchema, name: string | undefined): fc.Arbitrary<string> {
  const minLength: number = schema.minLength ?? 0;
  const maxLength: number = schema.maxLength ?? Infinity;
  const fits = (s: string) => codePoints(s) >= minLength && codePoints(s) <= maxLength;
  const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern) : null;
  const matches = (s: string) => fits(s) && (!pattern || pattern.test(s));

  if (schema.format === 'uri') {
    const schemes = pattern && !pattern.test('http://a.example') ? ['https'] : ['http', 'https'];
    return fc.webUrl({ validSchemes: schemes, withQueryParameters: true, withFragments: true }).filter(matches);
  }
  if (schema.format === 'email') return fc.emailAddress().filter(matches);
  if (schema.format === 'date' || schema.pattern === '^\\d{4}-\\d{2}-\\d{2}$' || name?.endsWith('_date')) return isoDate.filter(fits);
  if (pattern) return fc.stringMatching(pattern).filter(matches);

  const short = fc.string({ unit: 'grapheme', minLength, maxLength: Math.max(minLength, Math.min(maxLength, MAX_SAMPLE_STRING)) }).filter(fits);
  if (!Number.isFinite(maxLength) || maxLength > MAX_SAMPLE_LENGTH_AT_LIMIT) return short;
  // Exactly at the limit: the longest value the schema accepts must be as usable as a short one.
  const atLimit = fc.string({ unit: 'grapheme-ascii', minLength: maxLength, maxLength });
  return fc.oneof({ arbitrary: short, weight: 4 }, { arbitrary: atLimit, weight: 1 });
}

/** Dotted paths of every property an object schema names, nested ones included. */
export function propertyPaths(schema: JsonSchema | undefined, prefix: string[] = []): string[][] {
  if (!schema) return [];
  const branches: JsonSchema[] = [schema, ...((schema.anyOf ?? schema.oneOf ?? []) as JsonSchema[])];
  const paths: string[][] = [];
  for (const branch of branches) {
    for (const [key, property] of Object.entries<JsonSchema>(branch.properties ?? {})) {
      paths.push([...prefix, key]);
      paths.push(...propertyPaths(property, [...prefix, key]));
    }
  }
  return paths;
}

/** Paths of the free-form objects a schema holds (additional properties allowed): partner_meta and the like. */
export function freeFormPaths(schema: JsonSchema | undefined, prefix: string[] = []): string[][] {
  if (!schema) return [];
  const branches: JsonSchema[] = [schema, ...((schema.anyOf ?? schema.oneOf ?? []) as JsonSchema[])];
  const paths: string[][] = [];
  for (const branch of branches) {
    const extra = branch.additionalProperties;
    if (prefix.length > 0 && hasType(branch, 'object') && extra !== undefined && extra !== false) paths.push(prefix);
    for (const [key, property] of Object.entries<JsonSchema>(branch.properties ?? {})) paths.push(...freeFormPaths(property, [...prefix, key]));
  }
  return paths;
}

/** Paths of the string properties a schema names (where NUL and lone surrogates go). */
export function stringPaths(schema: JsonSchema | undefined, prefix: string[] = []): string[][] {
  if (!schema) return [];
  const branches: JsonSchema[] = [schema, ...((schema.anyOf ?? schema.oneOf ?? []) as JsonSchema[])];
  const paths: string[][] = [];
  for (const branch of branches) {
    for (const [key, property] of Object.entries<JsonSchema>(branch.properties ?? {})) {
      if (hasType(property, 'string') || (property.type === undefined && Array.isArray(property.enum))) paths.push([...prefix, key]);
      paths.push(...stringPaths(property, [...prefix, key]));
    }
  }
  return paths;
}
