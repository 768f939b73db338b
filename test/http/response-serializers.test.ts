/**
 * Response serializers (src/http/response-serializers.ts): routes answering the same schema share one
 * compiled serializer, and it writes what fast-json-stringify writes for that schema.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from 'typebox';
import { sharedResponseSerializers } from '../../src/http/response-serializers.ts';

const ErrorBody = Type.Object({ error: Type.String(), code: Type.Union([Type.Integer(), Type.String()]) });
const Record = Type.Object({ id: Type.String(), age: Type.Integer() });

describe('response serializers', () => {
  it('compiles a schema once, whatever route and status answers it', () => {
    const compile = sharedResponseSerializers({}, {});
    const first = compile({ schema: ErrorBody, method: 'GET', url: '/a', httpStatus: '404' });
    const again = compile({ schema: ErrorBody, method: 'POST', url: '/b', httpStatus: '400' });
    const other = compile({ schema: Record, method: 'GET', url: '/a', httpStatus: '200' });
    assert.equal(again, first);
    assert.notEqual(other, first);
    assert.equal(first({ error: 'No.', code: 404, extra: true }), '{"error":"No.","code":404}');
    assert.equal(other({ id: 'x', age: 3 }), '{"id":"x","age":3}');
  });

  it('keeps one set per factory call (an app, or a plugin that added schemas)', () => {
    const one = sharedResponseSerializers({}, {})({ schema: Record, method: 'GET', url: '/a', httpStatus: '200' });
    const two = sharedResponseSerializers({}, {})({ schema: Record, method: 'GET', url: '/a', httpStatus: '200' });
    assert.notEqual(one, two);
  });
});
