// Structured JSON logs (pino). One logger per process, level from LOG_LEVEL; each HTTP request gets a
// child logger carrying its request id (req.log, src/http/request-log.ts), made when first used.
import { type DestinationStream, pino } from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = { level, base: { service: 'flashsale' } };
  return destination ? pino(options, destination) : pino(options);
}
