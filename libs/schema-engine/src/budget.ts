import { SchemaGenerationError } from './schema-generation.error';

/** A wall-clock budget for one generate() call, checked cooperatively. */
export class Deadline {
  private readonly end: number;

  constructor(private readonly limitMs: number) {
    this.end = performance.now() + limitMs;
  }

  expired(): boolean {
    return performance.now() > this.end;
  }

  check(): void {
    if (this.expired()) throw this.error();
  }

  error(): SchemaGenerationError {
    return new SchemaGenerationError('TIME_LIMIT_EXCEEDED', `Schema generation exceeded its time limit of ${this.limitMs} ms`);
  }
}
