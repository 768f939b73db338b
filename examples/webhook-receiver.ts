/**
 * A webhook receiver for OpenCPS: verifies each delivery's Standard Webhooks signature with the
 * `standardwebhooks` package and prints the event. Listens on loopback unless HOST names another address
 * (a production service reaches it there once CPS_OUTBOUND_ALLOW lists that address).
 *
 *   WEBHOOK_SECRET=whsec_... PORT=8787 node examples/webhook-receiver.ts
 *   WEBHOOK_SECRET=whsec_... HOST=192.168.1.20 PORT=8787 node examples/webhook-receiver.ts
 *
 * Register http://127.0.0.1:8787/hooks as a subscription's endpoint (a development server allows
 * http and loopback) with the signing key the registration answered.
 */
import { createServer } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

const secret = process.env.WEBHOOK_SECRET;
if (!secret) {
  console.error('Set WEBHOOK_SECRET to the subscription signing key (whsec_... or the text key you registered).');
  process.exit(1);
}
const port = Number(process.env.PORT ?? 8787);
const host = process.env.HOST ?? '127.0.0.1';
// A key that is not `whsec_` (a UUID, say) signs with its UTF-8 bytes: the library's raw format.
const verifier = new Webhook(secret, secret.startsWith('whsec_') ? undefined : { format: 'raw' });

interface EventBody {
  event: string;
  sequence?: number;
  event_time: number;
  business_id: string;
  data: Record<string, unknown>;
}

/** The latest sequence seen per appointment (or patient's cases): delivery is at least once, so a repeat is normal. */
const latest = new Map<string, number>();

const server = createServer((request, response) => {
  let body = '';
  request.setEncoding('utf8');
  request.on('data', (chunk: string) => {
    body += chunk;
  });
  request.on('end', () => {
    let event: EventBody;
    try {
      // Checks the signature over `${webhook-id}.${webhook-timestamp}.${body}` and the 5-minute tolerance.
      event = verifier.verify(body, request.headers as Record<string, string>) as EventBody;
    } catch (error) {
      const reason = error instanceof WebhookVerificationError ? error.message : 'unreadable body';
      console.warn(`rejected a delivery: ${reason}`);
      response.writeHead(400).end();
      return;
    }
    const id = String(request.headers['webhook-id']);
    const key = String(event.data.appointment_id ?? event.data.patient_id ?? '');
    let note = '';
    if (event.sequence !== undefined && key) {
      const seen = latest.get(key) ?? 0;
      if (event.sequence <= seen) note = ' (already seen: a repeat)';
      else latest.set(key, event.sequence);
    }
    console.log(
      `${new Date(event.event_time * 1000).toISOString()} ${event.event}` +
        `${event.sequence === undefined ? '' : ` #${event.sequence}`} ${id}${note}\n${JSON.stringify(event.data, null, 2)}`,
    );
    // Answer quickly: a 2xx within 15 s is success; anything else is retried.
    response.writeHead(204).end();
  });
});

server.listen(port, host, () => console.log(`listening on http://${host.includes(':') ? `[${host}]` : host}:${port}/hooks`));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.close(() => process.exit(0)));
