// Structured JSON logs (pino). One logger per process; requests get a child with their request id.
import { pino } from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'flashsale' } });
}
