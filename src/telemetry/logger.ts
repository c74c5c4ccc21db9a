// Structured JSON logs (pino). Every reconcile logs through a child bound to {controller, namespace, name}
// so one object's story can be filtered out of a busy controller's output.
import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/**
 * Paths redacted wherever they appear in a logged object: a spec or Secret logged by mistake must not leak
 * a password, token or CA (the project rule: secrets never reach logs).
 */
export const REDACT_PATHS = [
  'password',
  'token',
  'caCert',
  'data',
  'stringData',
  '*.password',
  '*.token',
  '*.caCert',
  '*.data',
  '*.stringData',
  '*.*.password',
  '*.*.token',
  '*.*.caCert',
  'spec.credentials',
  'obj.spec.credentials',
  'spec.hosts[*].credentials',
  'headers.authorization',
  'headers.Authorization',
];

export interface LoggerOptions {
  level?: LevelWithSilent | string;
  /** Destination stream (tests capture output); default stdout. */
  destination?: NodeJS.WritableStream;
}

export function createLogger(o: LoggerOptions = {}): Logger {
  const opts = {
    level: o.level ?? 'info',
    base: { app: 'migration-controller' },
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return o.destination ? pino(opts, o.destination as unknown as pino.DestinationStream) : pino(opts);
}

/** A child logger bound to one object of one controller. */
export function objectLogger(base: Logger, controller: string, namespace: string, name: string): Logger {
  return base.child({ controller, namespace, name });
}
