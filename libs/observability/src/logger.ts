import type { LoggerService, LogLevel } from '@nestjs/common';
import { trace } from '@opentelemetry/api';

type Level = 'verbose' | 'debug' | 'log' | 'warn' | 'error' | 'fatal';
const RANK: Record<Level, number> = { verbose: 0, debug: 1, log: 2, warn: 3, error: 4, fatal: 5 };
const NAME: Record<Level, string> = {
  verbose: 'trace',
  debug: 'debug',
  log: 'info',
  warn: 'warn',
  error: 'error',
  fatal: 'fatal',
};

export type LogFormat = 'json' | 'pretty';
export type LogThreshold = 'debug' | 'info' | 'warn' | 'error';

/**
 * Structured logs for Nest's Logger: one JSON line per entry with the service, the context (class
 * name) and the active trace/span ids. Callers must never pass secret values.
 */
export class ToolplaneLogger implements LoggerService {
  private readonly min: number;

  constructor(
    private readonly service: string,
    private readonly format: LogFormat,
    threshold: LogThreshold,
    private readonly out: NodeJS.WritableStream = process.stdout,
  ) {
    this.min = RANK[threshold === 'info' ? 'log' : threshold];
  }

  log(message: unknown, ...rest: unknown[]): void {
    this.write('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }
  setLogLevels?(_levels: LogLevel[]): void {}

  private write(level: Level, message: unknown, rest: unknown[]): void {
    if (RANK[level] < this.min) return;
    // Nest passes the context as the last string argument.
    const context =
      rest.length > 0 && typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : undefined;
    const span = trace.getActiveSpan()?.spanContext();
    const msg =
      message instanceof Error ? message.message : typeof message === 'string' ? message : JSON.stringify(message);
    if (this.format === 'pretty') {
      const ids = span ? ` trace=${span.traceId}` : '';
      this.out.write(
        `${new Date().toISOString()} ${NAME[level].toUpperCase().padEnd(5)} [${this.service}${context ? `:${context}` : ''}] ${msg}${ids}\n`,
      );
      return;
    }
    const line: Record<string, unknown> = {
      time: new Date().toISOString(),
      level: NAME[level],
      service: this.service,
      context,
      msg,
    };
    if (span) {
      line.trace_id = span.traceId;
      line.span_id = span.spanId;
    }
    this.out.write(`${JSON.stringify(line)}\n`);
  }
}
