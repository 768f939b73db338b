/** The baseline: a bare Fastify hello-world, loaded the same way as the service in the same run. */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
// Any other path answers the same, so a load with the paths and headers of another scenario can run
// against it: the comparison is then between the servers alone (see loadAgainstHello).
app.get('/*', async () => ({ hello: 'world' }));
app.get('/ready', async () => ({ ready: true }));
await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
