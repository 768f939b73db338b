/** examples/webhook-receiver.ts, run as documented: it accepts a signed delivery, prints it, and refuses a forged one. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { generateSigningKey, signatureHeader } from '../../../src/modules/webhooks/signer.ts';
import { freePort } from '../../net.ts';
import { reviewEvent } from './support.ts';

const EXAMPLE = path.resolve(import.meta.dirname, '../../../examples/webhook-receiver.ts');

describe('the example webhook receiver', () => {
  const children: Array<ReturnType<typeof spawn>> = [];
  after(() => {
    for (const child of children) child.kill();
  });

  for (const [kind, key] of [
    ['a whsec_ key', generateSigningKey()],
    ['a text key (raw format)', randomUUID()],
  ] as const) {
    it(`verifies signatures with standardwebhooks and prints each event: ${kind}`, async () => {
      const port = await freePort();
      const child = spawn(process.execPath, [EXAMPLE], {
        env: { ...process.env, WEBHOOK_SECRET: key, PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let output = '';
      child.stdout!.on('data', (chunk) => (output += chunk));
      child.stderr!.on('data', (chunk) => (output += chunk));
      while (!output.includes('listening')) await new Promise((resolve) => setTimeout(resolve, 20));

      const body = JSON.stringify(reviewEvent('biz_1'));
      const send = (signature: string) => {
        const timestamp = Math.floor(Date.now() / 1000);
        return fetch(`http://127.0.0.1:${port}/hooks`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': 'evt_example',
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signature || signatureHeader([key], 'evt_example', timestamp, body),
          },
          body,
        });
      };
      assert.equal((await send('')).status, 204);
      assert.equal((await send(signatureHeader([generateSigningKey()], 'evt_example', Math.floor(Date.now() / 1000), body))).status, 400);
      while (!output.includes('rejected')) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.match(output, /external_review\.request evt_example/);
      assert.match(output, /"appointment_id": "apt_1"/);
    });
  }
});
