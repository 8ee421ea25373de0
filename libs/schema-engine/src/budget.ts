import { SchemaGenerationError } from './schema-generation.error';

export interface BudgetLimits {
  /** Wall-clock budget of the call. */
  timeLimitMs: number;
  /** Largest schema, in UTF-8 bytes of JSON. */
  maxSchemaBytes: number;
  /** Deepest nesting of types in the schema. */
  maxDepth: number;
}

/**
 * What one generate() call may spend: time (checked cooperatively; the schema service also ends
 * the worker thread running the call at the limit), and output. A type the front-ends resolve
 * once (a model, alias or interface) is shared by every place that uses it and written out in
 * full at each, so a few lines of source can describe an exponentially large schema. The
 * resolvers and the writer therefore charge, as they go, about what they will write (the least
 * each type and field writes, names, descriptions, enum values) and what they compare (keys that
 * find duplicate union members), and stop at four times the schema limit: their work is linear
 * in the limit whatever the source. The engine then measures the finished schema exactly.
 */
export class Budget {
  private readonly end: number;
  private spent = 0;
  private depth = 0;

  constructor(private readonly limits: BudgetLimits) {
    this.end = performance.now() + limits.timeLimitMs;
  }

  expired(): boolean {
    return performance.now() > this.end;
  }

  check(): void {
    if (this.expired()) throw this.error();
  }

  error(): SchemaGenerationError {
    return new SchemaGenerationError(
      'TIME_LIMIT_EXCEEDED',
      `Schema generation exceeded its time limit of ${this.limits.timeLimitMs} ms`,
    );
  }

  charge(bytes: number): void {
    this.spent += bytes;
    if (this.spent > 4 * this.limits.maxSchemaBytes) {
      throw new SchemaGenerationError(
        'SCHEMA_TOO_LARGE',
        `The generated schema would be larger than ${this.limits.maxSchemaBytes} bytes (a type used in several places is written out in full at each)`,
      );
    }
  }

  /** One level of type nesting in the schema being written. */
  nested<T>(fn: () => T): T {
    if (this.depth >= this.limits.maxDepth) {
      throw new SchemaGenerationError(
        'SCHEMA_TOO_LARGE',
        `The generated schema would nest types more than ${this.limits.maxDepth} levels deep`,
      );
    }
    this.depth += 1;
    try {
      return fn();
    } finally {
      this.depth -= 1;
    }
  }
}

/** The fewest bytes a field writes: `"k":{}` and a comma. */
export const LEAST_FIELD_BYTES = 7;
