/**
 * Preloaded into a benchmarked server (`--import bench/server-timing.ts`): every response carries
 * `x-bench-timing: <received>,<handler>,<sent>`, three wall-clock instants in epoch milliseconds (with
 * fractions, comparable across processes on one machine): when Node's HTTP server emitted the request
 * (its headers parsed), when Fastify started the route's handler (after auth, body parsing and
 * validation; empty when no handler ran) and when the response's headers were written. The server's
 * own time for a request is sent - received; what a client sees beyond it is queueing in the kernel
 * and in the client's own event loop. The service's code is untouched.
 */
import diagnostics from 'node:diagnostics_channel';
import { ServerResponse } from 'node:http';

const now = () => performance.timeOrigin + performance.now();
const received = new WeakMap<ServerResponse, number>();
const handled = new WeakMap<ServerResponse, number>();

diagnostics.subscribe('http.server.request.start', (message) => {
  received.set((message as { response: ServerResponse }).response, now());
});
diagnostics.tracingChannel('fastify.request.handler').start.subscribe((message) => {
  handled.set((message as { reply: { raw: ServerResponse } }).reply.raw, now());
});

const writeHead = ServerResponse.prototype.writeHead;
ServerResponse.prototype.writeHead = function (this: ServerResponse, ...args: unknown[]) {
  const start = received.get(this);
  if (start !== undefined && !this.headersSent) {
    const at = (value: number | undefined) => (value === undefined ? '' : value.toFixed(3));
    this.setHeader('x-bench-timing', `${at(start)},${at(handled.get(this))},${at(now())}`);
  }
  return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
} as typeof writeHead;
