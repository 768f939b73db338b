/**
 * The baseline of the documents upload (issue 34): a bare Fastify route with @fastify/multipart that
 * receives a multipart file and discards it, answering any POST path, so that the same requests can
 * be loaded against it and against the service in turns (loadAgainstHello).
 */
import multipart from '@fastify/multipart';
import Fastify from 'fastify';

const app = Fastify({ logger: false });
await app.register(multipart, { limits: { fileSize: 64 * 1024 * 1024, files: 1 } });
app.get('/ready', async () => ({ ready: true }));
app.post('/*', async (request) => {
  const part = await request.file();
  if (!part) return { received: 0 };
  let received = 0;
  for await (const chunk of part.file) received += (chunk as Buffer).length;
  return { received };
});
await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
