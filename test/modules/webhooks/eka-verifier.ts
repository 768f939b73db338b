/**
 * Receivers that check deliveries as Eka Care's webhook consumer does (eka-care/ekapython-webhook-sdk):
 * a re-implementation in TypeScript, written from Python's rules rather than from src/modules/webhooks,
 * and the real thing in Python (eka_consumer.py), run on 127.0.0.1.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';

export const PYTHON = 'python3';
export const HAS_PYTHON = spawnSync(PYTHON, ['--version']).status === 0;

/** Python's repr of a float, and an int's digits: scientific below 1e-4 and from 1e16, exponent of two digits at least. */
function pythonNumber(value: number): string {
  // JSON.parse gives no ints beyond 1e21 written as digits; below that an integral number was written as an int.
  if (Number.isInteger(value) && Math.abs(value) < 1e21) return String(value);
  const [mantissa, exponent] = value.toExponential().split('e') as [string, string];
  const power = Number(exponent);
  if (power >= -4 && power < 16) return String(value);
  return `${mantissa}e${power < 0 ? '-' : '+'}${String(Math.abs(power)).padStart(2, '0')}`;
}

/** `json.dumps(value, separators=(',', ':'))`: compact, ensure_ascii. */
export function pythonDumps(value: unknown): string {
  const text = JSON.stringify(value, (_key, item) =>
    typeof item === 'number' ? (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(pythonNumber(item)) : item,
  );
  // JSON.stringify leaves printable non-ASCII as is (and escapes lone surrogates already, lower-case).
  return text.replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Eka's check of `Eka-Webhook-Signature` over the re-serialised body; the reason it fails, or null. */
export function ekaVerify(key: string, body: string, header: string | undefined, toleranceSeconds = 180): string | null {
  if (!header) return 'missing signature';
  // dict(item.split('=') for item in header.split(',')): the last of a repeated name counts.
  const parts = new Map(header.split(',').map((item) => item.split('=') as [string, string]));
  const timestamp = parts.get('t');
  const signature = parts.get('v1');
  if (timestamp === undefined || signature === undefined) return 'invalid signature format';
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return 'outside the tolerance';
  const canonical = pythonDumps(JSON.parse(body));
  const expected = createHmac('sha256', Buffer.from(key, 'utf8')).update(`${timestamp}.${canonical}`).digest('hex');
  if (expected.length !== signature.length || !timingSafeEqual(Buffer.from(expected), Buffer.from(signature))) return 'invalid signature';
  return null;
}

/** One request as eka_consumer.py saw it. */
export interface EkaCheck {
  path: string;
  verified: boolean;
  reason: string | null;
  unescaped_verified: boolean;
  unescaped_reason: string | null;
  body_is_canonical: boolean;
  ascii_only: boolean;
  header: string | null;
  body: Record<string, any>;
}

export interface EkaConsumer {
  /** http://127.0.0.1:<port> */
  url: string;
  checks: EkaCheck[];
  close(): Promise<void>;
}

/** Starts eka_consumer.py with a signing key per request path. */
export async function startEkaConsumer(keys: Record<string, string>): Promise<EkaConsumer> {
  const child: ChildProcess = spawn(PYTHON, [path.join(import.meta.dirname, 'eka_consumer.py')], {
    env: { ...process.env, SIGNING_KEYS: JSON.stringify(keys) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const checks: EkaCheck[] = [];
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`eka_consumer.py exited with ${code}`)));
    lines.once('line', (line) => {
      resolve(Number(line));
      lines.on('line', (record) => checks.push(JSON.parse(record) as EkaCheck));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    checks,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill();
      }),
  };
}
