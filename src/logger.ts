/** JSON logs (pino) that never carry tokens, secrets, private keys or patients' contact details. */
import pino, { type Logger } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization', 'req.headers.auth', 'req.headers.cookie', 'req.headers["x-pt-id"]',
  'headers.authorization', 'headers.auth',
  '*.authorization', '*.auth', '*.client_secret', '*.refresh_token', '*.access_token', '*.private_key', '*.sa_key',
  '*.mobile', '*.email', '*.signing_key', '*.password', '*.token',
  'client_secret', 'refresh_token', 'access_token', 'private_key', 'sa_key', 'mobile', 'email', 'signing_key',
  '*.patient_details.mobile', '*.*.mobile', '*.*.private_key',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { service: 'opencps' },
    timestamp: pino.stdTimeFunctions.isoTime,
  }, destination);
}
