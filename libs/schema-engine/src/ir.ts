/**
 * The intermediate representation every source front-end (python/, later typescript/) produces
 * and the JSON-schema back-end consumes. It describes types, not syntax: a front-end resolves
 * aliases, models and enums before handing it over.
 */

export type LiteralValue = string | number | boolean | null;

/** A JSON value: what a statically evaluated default becomes. */
export type JsonValue = LiteralValue | JsonValue[] | { [key: string]: JsonValue };

export type TypeIR =
  | { kind: 'primitive'; type: 'string' | 'integer' | 'number' | 'boolean' | 'null' }
  /** Any JSON value (typing.Any). */
  | { kind: 'any' }
  /** `items: null` is an untyped list (`list`, `List`). */
  | { kind: 'array'; items: TypeIR | null; uniqueItems?: boolean }
  /** A fixed-length tuple; variable-length tuples are arrays. */
  | { kind: 'tuple'; items: TypeIR[] }
  /** A mapping with string keys; `values: null` when the value type is open (dict, Dict[str, Any]). */
  | { kind: 'map'; values: TypeIR | null }
  /** A structured object (a pydantic model, a TypedDict, a TS interface). */
  | { kind: 'object'; name: string; description?: string; fields: FieldIR[] }
  | { kind: 'enum'; values: LiteralValue[] }
  /** Members in source order; a `null` primitive member makes the union nullable. */
  | { kind: 'union'; members: TypeIR[] }
  /** A type with a description and/or validation keywords attached (Annotated[X, Field(...)]). */
  | { kind: 'annotated'; inner: TypeIR; description?: string; constraints?: Record<string, unknown> };

export interface FieldIR {
  name: string;
  type: TypeIR;
  description: string;
  /** True when the caller must supply a value (no default). */
  required: boolean;
  /** True when the default is None/null/undefined: omitting the value means null, so a nullable type may drop null. */
  defaultIsNull: boolean;
  /**
   * The default's value when it is a literal the front-end can evaluate statically (emitted as
   * `default`); absent when there is no default or it is not a literal (a call, a name, ...).
   */
  default?: JsonValue;
}

export type ParameterIR = FieldIR;

export interface FunctionIR {
  name: string;
  description: string;
  parameters: ParameterIR[];
}
