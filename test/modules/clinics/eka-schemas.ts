/**
 * Eka's response schemas from the reference `doc-tool.yaml` (read-only, outside the repository), compiled
 * with Ajv: every `$ref` resolves inside the document. OpenAPI's own keywords (`example`, `title`) are
 * not JSON Schema, hence `strict: false`.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';
import { EKA_REFERENCE } from '../../support.ts';

export const DOC_TOOL = `${EKA_REFERENCE}/doc-tool.yaml`;

type Json = Record<string, unknown>;

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

let loaded: { doc: Json; ajv: Ajv } | null = null;

function load(): { doc: Json; ajv: Ajv } {
  if (loaded) return loaded;
  const doc = parse(readFileSync(DOC_TOOL, 'utf8')) as Json;
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  // The whole document under one id: a `#/components/...` reference becomes `doc-tool#/components/...`.
  ajv.addSchema({ $id: 'doc-tool', components: doc.components }, 'doc-tool');
  loaded = { doc, ajv };
  return loaded;
}

function rebased(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebased);
  if (schema === null || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === '$ref' && typeof value === 'string' && value.startsWith('#') ? `doc-tool${value}` : rebased(value),
    ]),
  );
}

/** The response of `method path` with `status`, as Eka documents it (its JSON content). */
export function ekaResponse(path: string, method: string, status: string): { schema: Json; example?: unknown } {
  const { doc } = load();
  const operation = ((doc.paths as Json)[path] as Json | undefined)?.[method] as Json | undefined;
  if (!operation) throw new Error(`doc-tool.yaml has no ${method} ${path}`);
  const content = (((operation.responses as Json)[status] as Json).content as Json)['application/json'] as Json;
  return { schema: content.schema as Json, example: content.example ?? (content.schema as Json).example };
}

/**
 * A schema of an example's shape: every key it holds, typed as it is typed there, required; an array's
 * items shaped by its first element. For responses whose documented schema does not describe them.
 */
export function shapeOf(example: unknown, optional: ReadonlySet<string> = new Set()): Json {
  if (Array.isArray(example)) return { type: 'array', items: example.length > 0 ? shapeOf(example[0], optional) : {} };
  if (example === null) return { type: 'null' };
  if (typeof example === 'object') {
    const entries = Object.entries(example as Json);
    return {
      type: 'object',
      properties: Object.fromEntries(entries.map(([key, value]) => [key, shapeOf(value, optional)])),
      required: entries.map(([key]) => key).filter((key) => !optional.has(key)),
    };
  }
  return { type: typeof example === 'number' ? 'number' : typeof example };
}

export function validator(schema: Json): ValidateFunction {
  return load().ajv.compile(rebased(schema) as Json);
}

/** Asserts `value` against `schema`, naming every violation. */
export function assertValid(schema: Json, value: unknown, label: string): void {
  const validate = validator(schema);
  if (!validate(value))
    throw new Error(`${label} does not match Eka's schema: ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(value)}`);
}
