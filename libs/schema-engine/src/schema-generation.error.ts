export type SchemaErrorReason =
  | 'SYNTAX_ERROR'
  | 'NO_FUNCTION'
  | 'FUNCTION_NOT_FOUND'
  | 'MISSING_DOCSTRING'
  | 'MISSING_ANNOTATION'
  | 'UNDOCUMENTED_PARAMETER'
  | 'UNSUPPORTED_ANNOTATION'
  | 'SOURCE_TOO_LARGE'
  | 'SCHEMA_TOO_LARGE'
  | 'TIME_LIMIT_EXCEEDED'
  | 'UNSUPPORTED_SOURCE_TYPE'
  | 'INVALID_ARGS_SCHEMA';

export interface SchemaErrorDetails {
  line?: number;
  column?: number;
  functionName?: string;
  parameter?: string;
}

/**
 * Why a schema could not be derived from source. The message is written for the tool author
 * (function, parameter and 1-based line where relevant) and never carries a stack trace.
 */
export class SchemaGenerationError extends Error {
  readonly reason: SchemaErrorReason;
  readonly line?: number;
  readonly column?: number;
  readonly functionName?: string;
  readonly parameter?: string;

  constructor(reason: SchemaErrorReason, message: string, details: SchemaErrorDetails = {}) {
    super(message);
    this.name = 'SchemaGenerationError';
    this.reason = reason;
    if (details.line !== undefined) this.line = details.line;
    if (details.column !== undefined) this.column = details.column;
    if (details.functionName !== undefined) this.functionName = details.functionName;
    if (details.parameter !== undefined) this.parameter = details.parameter;
  }
}
