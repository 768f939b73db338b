/**
 * A TCP proxy on loopback between a service and PostgreSQL, to play database outages without
 * touching the PostgreSQL that other test files share:
 * - `cut()`: every proxied connection is reset and new ones are refused (the port stops listening),
 *   as when the server goes away or fails over;
 * - `stall()`: connections stay open but nothing more is forwarded, and new ones are accepted and
 *   never answered, as when the network drops packets silently;
 * - `restore()`: forwards again on the same port (stalled connections are reset first).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  urlFor(databaseUrl: string): string;
  cut(): Promise<void>;
  stall(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let stalled = false;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => sockets.delete(socket));
  };
  const accept = (client: Socket) => {
    track(client);
    if (stalled) return; // held open, never answered
    const upstream = connect(targetPort, targetHost);
    track(upstream);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const listen = (server: Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as { port: number }).port);
      });
    });
  let server: Server | null = createServer(accept);
  const port = await listen(server, 0);
  const stopListening = async () => {
    const closing = server;
    server = null;
    if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
  };
  const resetAll = () => {
    for (const socket of sockets) socket.resetAndDestroy();
    sockets.clear();
  };
  return {
    port,
    urlFor(databaseUrl) {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    async cut() {
      const closed = stopListening();
      resetAll();
      await closed;
      // A peer in this process sees its reset on a later turn of the event loop.
      await new Promise((resolve) => setTimeout(resolve, 50));
    },
    stall() {
      stalled = true;
      for (const socket of sockets) {
        socket.unpipe();
        socket.pause();
      }
    },
    async restore() {
      if (stalled) {
        stalled = false;
        resetAll();
      }
      if (server) return;
      server = createServer(accept);
      await listen(server, port);
    },
    async close() {
      const closed = stopListening();
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      await closed;
    },
  };
}
