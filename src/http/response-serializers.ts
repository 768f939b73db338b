/**
 * Response serializers, compiled once per schema. Fastify compiles one for each route and status,
 * and most routes answer the same shared schemas (an error family's body, under 400, 401, 403, 404
 * and 500): about 800 compilations of about 90 schemas, each with its own generated function and,
 * where the schema has a union, its own Ajv. A serializer depends on its schema alone, so a route
 * reuses the one already compiled for the same schema object.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;
type Serializer = ReturnType<ReturnType<SerializerFactory>>;

const compileSerializers: SerializerFactory = SerializerSelector();

/** Fastify's serializer factory (its default, fast-json-stringify), remembering each schema's serializer. */
export const sharedResponseSerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = compileSerializers(externalSchemas, options);
  const bySchema = new WeakMap<object, Serializer>();
  return (route) => {
    const schema = route.schema;
    if (typeof schema !== 'object' || schema === null) return compile(route);
    let serializer = bySchema.get(schema);
    if (!serializer) {
      serializer = compile(route);
      bySchema.set(schema, serializer);
    }
    return serializer;
  };
};
