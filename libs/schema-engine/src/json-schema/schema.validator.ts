/**
 * Classifies a function-calling JSON schema: STRICT_COMPLIANT (usable with OpenAI strict mode),
 * NON_STRICT_ONLY (valid, too loose for strict mode) or INVALID. Covers the rules of Letta's
 * validate_complete_json_schema plus OpenAI's strict-mode limits; see DIFFERENCES.md.
 */
import type { SchemaHealth, ValidationReport } from '../schema-engine.types';

const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const JSON_TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);
/** Keywords OpenAI strict mode rejects. */
const NOT_IN_STRICT_MODE = [
  'allOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'patternProperties',
  'unevaluatedProperties',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'unevaluatedItems',
  'contains',
  'minContains',
  'maxContains',
  'uniqueItems',
  'prefixItems',
];
const MAX_STRICT_PROPERTIES = 5000;
const MAX_STRICT_DEPTH = 10;
const MAX_STRICT_ENUM_VALUES = 1000;
const MAX_STRICT_STRING_BUDGET = 120_000;
/** Beyond this the schema is not analysed further (hostile input). */
const MAX_DEPTH = 100;

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

class Report {
  health: SchemaHealth = 'STRICT_COMPLIANT';
  readonly reasons: string[] = [];

  nonStrict(reason: string): void {
    if (this.health === 'STRICT_COMPLIANT') this.health = 'NON_STRICT_ONLY';
    this.reasons.push(reason);
  }

  invalid(reason: string): void {
    this.health = 'INVALID';
    this.reasons.push(reason);
  }
}

/**
 * Accepts a full function schema `{name, description, parameters}` (also wrapped as
 * `{type: 'function', function: {...}}`) or a bare parameters object.
 */
export function validateSchema(input: unknown): ValidationReport {
  const report = new Report();
  if (!isObject(input)) {
    report.invalid('Top-level schema must be a JSON object (a function schema or its parameters)');
    return { health: report.health, reasons: report.reasons };
  }
  let schema: Obj = input;
  if (schema.type === 'function' && isObject(schema.function)) schema = schema.function;
  if (isFunctionSchema(schema)) {
    if (typeof schema.name !== 'string' || !FUNCTION_NAME.test(schema.name)) {
      report.invalid(
        `function.name: must match ^[a-zA-Z0-9_-]{1,64}$ (got ${JSON.stringify(schema.name)?.slice(0, 80)})`,
      );
    }
    if ('description' in schema && typeof schema.description !== 'string')
      report.invalid('function.description: must be a string');
    if (!('parameters' in schema)) {
      report.invalid('function.parameters: missing (an object schema is required, even with no properties)');
      return { health: report.health, reasons: report.reasons };
    }
    new ParametersValidator(report).validate(schema.parameters);
  } else {
    new ParametersValidator(report).validate(schema);
  }
  return { health: report.health, reasons: report.reasons };
}

function isFunctionSchema(schema: Obj): boolean {
  if ('parameters' in schema) return true;
  return 'name' in schema && !('type' in schema) && !('properties' in schema);
}

class ParametersValidator {
  private properties = 0;
  private enumValues = 0;
  private stringBudget = 0;
  private depthReported = false;
  private tooDeepReported = false;
  private readonly onPath = new Set<Obj>();
  private root: Obj = {};

  constructor(private readonly report: Report) {}

  validate(schema: unknown): void {
    if (!isObject(schema)) {
      this.report.invalid('root: parameters must be a JSON object schema');
      return;
    }
    this.root = schema;
    if (schema.type !== 'object') this.report.invalid("Top-level schema 'type' must be 'object' for OpenAI tools");
    if ('anyOf' in schema) this.report.nonStrict("root: strict mode does not allow 'anyOf' at the root");
    this.visit(schema, 'root', 0, true);
    for (const key of ['$defs', 'definitions']) {
      const defs = schema[key];
      if (defs === undefined) continue;
      if (!isObject(defs)) {
        this.report.invalid(`root.${key}: must be an object of schemas`);
        continue;
      }
      for (const [name, def] of Object.entries(defs)) {
        this.stringBudget += name.length;
        this.child(def, `root.${key}.${name}`, 1);
      }
    }
    if (this.properties > MAX_STRICT_PROPERTIES) {
      this.report.nonStrict(
        `root: ${this.properties} properties in total; strict mode allows at most ${MAX_STRICT_PROPERTIES}`,
      );
    }
    if (this.enumValues > MAX_STRICT_ENUM_VALUES) {
      this.report.nonStrict(
        `root: ${this.enumValues} enum values in total; strict mode allows at most ${MAX_STRICT_ENUM_VALUES}`,
      );
    }
    if (this.stringBudget > MAX_STRICT_STRING_BUDGET) {
      this.report.nonStrict(
        `root: property names, definition names and enum values total ${this.stringBudget} characters; strict mode allows at most ${MAX_STRICT_STRING_BUDGET}`,
      );
    }
  }

  private child(schema: unknown, path: string, depth: number): void {
    if (isObject(schema)) this.visit(schema, path, depth, false);
    else this.report.invalid(`${path}: Not a valid schema object`);
  }

  private visit(node: Obj, path: string, depth: number, isRoot: boolean): void {
    if (depth > MAX_DEPTH) {
      if (!this.tooDeepReported) this.report.invalid(`${path}: nested more than ${MAX_DEPTH} levels deep`);
      this.tooDeepReported = true;
      return;
    }
    if (this.onPath.has(node)) {
      this.report.invalid(`${path}: schema contains a reference cycle`);
      return;
    }
    if (depth > MAX_STRICT_DEPTH && !this.depthReported) {
      this.depthReported = true;
      this.report.nonStrict(`${path}: nested ${depth} levels deep; strict mode allows at most ${MAX_STRICT_DEPTH}`);
    }
    this.onPath.add(node);
    try {
      this.visitNode(node, path, depth, isRoot);
    } finally {
      this.onPath.delete(node);
    }
  }

  private visitNode(node: Obj, path: string, depth: number, isRoot: boolean): void {
    for (const kw of NOT_IN_STRICT_MODE)
      if (kw in node) this.report.nonStrict(`${path}: '${kw}' is not supported in strict mode`);
    if ('enum' in node) this.checkEnum(node.enum, path);
    if ('const' in node && typeof node.const === 'string') this.stringBudget += node.const.length;
    if ('$ref' in node) this.checkRef(node.$ref, path);

    const types = this.typesOf(node, path);
    if (types === null) return;
    if (types.has('object')) this.visitObject(node, path, depth, isRoot);
    if (types.has('array')) this.visitArray(node, path, depth);

    for (const kw of ['anyOf', 'oneOf', 'allOf']) {
      if (!(kw in node)) continue;
      const list = node[kw];
      if (!Array.isArray(list)) {
        this.report.invalid(`${path}: '${kw}' must be a list`);
        continue;
      }
      list.forEach((sub, i) => this.child(sub, `${path}.${kw}[${i}]`, depth + 1));
    }
  }

  /** The node's JSON types, inferred from keywords when `type` is absent; null when it is unusable. */
  private typesOf(node: Obj, path: string): Set<string> | null {
    const declared = node.type;
    if (declared === undefined) {
      if ('properties' in node || 'additionalProperties' in node) return new Set(['object']);
      if ('items' in node || 'prefixItems' in node) return new Set(['array']);
      if ('anyOf' in node || 'oneOf' in node || 'allOf' in node || '$ref' in node) return new Set();
      if ('enum' in node || 'const' in node) {
        this.report.nonStrict(`${path}: 'type' is missing (implied by enum/const)`);
        return new Set();
      }
      this.report.invalid(`${path}: Missing 'type'`);
      return null;
    }
    const list = Array.isArray(declared) ? declared : [declared];
    const bad = list.filter((t) => typeof t !== 'string' || !JSON_TYPES.has(t));
    if (list.length === 0 || bad.length > 0) {
      this.report.invalid(
        `${path}: 'type' must be one of ${[...JSON_TYPES].join(', ')} or a list of them (got ${JSON.stringify(declared)?.slice(0, 80)})`,
      );
      return null;
    }
    return new Set(list as string[]);
  }

  private visitObject(node: Obj, path: string, depth: number, isRoot: boolean): void {
    const props = node.properties;
    if (props !== undefined && !isObject(props)) {
      this.report.invalid(`${path}: 'properties' must be an object`);
      return;
    }
    const names = props ? Object.keys(props) : [];
    this.properties += names.length;
    for (const name of names) this.stringBudget += name.length;

    if (!('additionalProperties' in node)) {
      this.report.nonStrict(`${path}: 'additionalProperties' not explicitly set`);
    } else if (node.additionalProperties !== false) {
      this.report.nonStrict(`${path}: 'additionalProperties' is not false (free-form object)`);
      if (isObject(node.additionalProperties))
        this.visit(node.additionalProperties, `${path}.additionalProperties`, depth + 1, false);
      else if (node.additionalProperties !== true)
        this.report.invalid(`${path}: 'additionalProperties' must be a boolean or a schema`);
    }

    let required: string[] = [];
    if (node.required === undefined) {
      if (!isRoot) this.report.nonStrict(`${path}: 'required' not specified for object`);
    } else if (!Array.isArray(node.required) || node.required.some((r) => typeof r !== 'string')) {
      this.report.invalid(`${path}: 'required' must be a list of property names`);
    } else {
      required = node.required as string[];
    }

    for (const key of required) {
      if (!props || !Object.hasOwn(props, key)) {
        this.report.invalid(`${path}: required contains '${key}' not found in properties`);
        continue;
      }
      const sub = props[key];
      if (!isObject(sub)) continue;
      if (allowsEmptyObject(sub))
        this.report.invalid(`${path}: required property '${key}' allows empty object (OpenAI will reject)`);
      if (allowsEmptyArray(sub))
        this.report.invalid(`${path}: required property '${key}' allows empty array (OpenAI will reject)`);
    }
    const requiredSet = new Set(required);
    const optional = names.filter((n) => !requiredSet.has(n));
    if (optional.length > 0) {
      const listed =
        optional.length > 10 ? `${optional.slice(0, 10).join(', ')}, ... (${optional.length})` : optional.join(', ');
      this.report.nonStrict(
        `${path}: strict mode requires every property in 'required' (make optional ones nullable instead): ${listed}`,
      );
    }
    if (props) for (const name of names) this.child(props[name], `${path}.properties.${name}`, depth + 1);
  }

  private visitArray(node: Obj, path: string, depth: number): void {
    const items = node.items;
    if ('prefixItems' in node) {
      if (!Array.isArray(node.prefixItems)) this.report.invalid(`${path}: 'prefixItems' must be a list`);
      else node.prefixItems.forEach((sub, i) => this.child(sub, `${path}.prefixItems[${i}]`, depth + 1));
    }
    if (items === undefined) {
      if (!('prefixItems' in node)) this.report.invalid(`${path}: 'items' must be defined for arrays in strict mode`);
    } else if (!isObject(items)) {
      this.report.invalid(`${path}: 'items' must be a schema object for arrays`);
    } else {
      this.visit(items, `${path}.items`, depth + 1, false);
    }
  }

  private checkEnum(values: unknown, path: string): void {
    if (!Array.isArray(values) || values.length === 0) {
      this.report.invalid(`${path}: 'enum' must be a non-empty list`);
      return;
    }
    this.enumValues += values.length;
    for (const v of values) if (typeof v === 'string') this.stringBudget += v.length;
  }

  private checkRef(ref: unknown, path: string): void {
    if (typeof ref !== 'string') {
      this.report.invalid(`${path}: '$ref' must be a string`);
      return;
    }
    if (ref === '#') return;
    const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
    const defs = m ? this.root[m[1]] : undefined;
    if (!m || !isObject(defs) || !Object.hasOwn(defs, m[2].replace(/~1/g, '/').replace(/~0/g, '~'))) {
      this.report.invalid(`${path}: '$ref' ${JSON.stringify(ref).slice(0, 80)} does not resolve to a local definition`);
    }
  }
}

/** An object schema that admits `{}`: no required properties and no additional ones (Letta's rule). */
function allowsEmptyObject(schema: Obj): boolean {
  if (schema.type !== 'object') return false;
  const required = Array.isArray(schema.required) ? schema.required : [];
  return required.length === 0 && schema.additionalProperties === false;
}

/** An array schema without items and without a positive minItems (Letta's rule). */
function allowsEmptyArray(schema: Obj): boolean {
  if (schema.type !== 'array') return false;
  const minItems = typeof schema.minItems === 'number' ? schema.minItems : 0;
  return minItems <= 0 && schema.items === undefined;
}
