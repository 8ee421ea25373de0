import type { DefinitionFormat, DefinitionWarning, ExcludedTool, SchemaHealth } from '@toolplane/contracts';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One tool of an agent's set, checked: what every format is made from. */
export interface DefinitionSource {
  toolId: string;
  name: string;
  description: string | null;
  /** The tool's json_schema.parameters as stored. */
  parameters: Obj;
  /** The parameters' health (the schema engine's classification); INVALID tools are never sent. */
  health: SchemaHealth;
  reasons: string[];
  /** The strict-mode conversion of `parameters`, or null when it cannot be strict (`strictReasons` say why). */
  strictParameters: Obj | null;
  strictReasons: string[];
  /** Set when the schema could not be checked (the schema service did not answer): the tool is sent as stored. */
  unchecked?: string;
}

export interface Definitions {
  definitions: Obj[];
  excluded: ExcludedTool[];
  warnings: DefinitionWarning[];
}

interface Provider {
  label: string;
  name?: { pattern: RegExp; rule: string };
  maxTools?: number;
}

const OPENAI_NAME = { pattern: /^[a-zA-Z0-9_-]{1,64}$/, rule: '^[a-zA-Z0-9_-]{1,64}$' };

/**
 * Each API's limits on a request's tools, from its API reference: OpenAI (Chat Completions and
 * Responses: function names `^[a-zA-Z0-9_-]{1,64}$`, at most 128 tools), Anthropic (tool names
 * `^[a-zA-Z0-9_-]{1,64}$`), Gemini (FunctionDeclaration.name: a letter or _ first, then letters,
 * digits, _ . : -, at most 128; at most 512 declarations).
 */
export const PROVIDERS: Record<DefinitionFormat, Provider> = {
  openai_chat: { label: 'OpenAI', name: OPENAI_NAME, maxTools: 128 },
  openai_responses: { label: 'OpenAI', name: OPENAI_NAME, maxTools: 128 },
  anthropic: { label: 'Anthropic', name: { pattern: /^[a-zA-Z0-9_-]{1,64}$/, rule: '^[a-zA-Z0-9_-]{1,64}$' } },
  gemini: {
    label: 'Gemini',
    name: { pattern: /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/, rule: '^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$' },
    maxTools: 512,
  },
  json_schema: { label: 'json_schema' },
};

/** Gemini: "parameter names must start with a letter or an underscore and only contain a-z, A-Z, 0-9, or _, max 64". */
const GEMINI_PARAMETER_NAME = /^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/;

/**
 * An agent's checked tools → one API's tool definitions, in the given order. INVALID tools and
 * tools that break the API's limits go to `excluded` with the reasons; a tool sent other than
 * asked (not strict-able, keywords converted or dropped for Gemini) gets a warning. Pure.
 */
export function toDefinitions(format: DefinitionFormat, strict: boolean, tools: DefinitionSource[]): Definitions {
  const provider = PROVIDERS[format];
  const out: Definitions = { definitions: [], excluded: [], warnings: [] };
  const exclude = (t: DefinitionSource, reasons: string[]) =>
    out.excluded.push({ tool_id: t.toolId, name: t.name, health: t.health, reasons });
  for (const t of tools) {
    if (t.health === 'INVALID') {
      exclude(t, t.reasons.length ? t.reasons : ['the schema is INVALID']);
      continue;
    }
    if (provider.name && !provider.name.pattern.test(t.name)) {
      exclude(t, [
        `name ${JSON.stringify(t.name.slice(0, 80))} does not match ${provider.label}'s pattern ${provider.name.rule}`,
      ]);
      continue;
    }
    if (provider.maxTools !== undefined && out.definitions.length >= provider.maxTools) {
      exclude(t, [`over ${provider.label}'s limit of ${provider.maxTools} tools in one request`]);
      continue;
    }
    const made = definitionOf(format, strict, t);
    if ('excluded' in made) {
      exclude(t, made.excluded);
      continue;
    }
    out.definitions.push(made.definition);
    const reasons = [...(t.unchecked ? [t.unchecked] : []), ...made.warnings];
    if (reasons.length) out.warnings.push({ tool_id: t.toolId, name: t.name, reasons });
  }
  return out;
}

function definitionOf(
  format: DefinitionFormat,
  strict: boolean,
  t: DefinitionSource,
): { definition: Obj; warnings: string[] } | { excluded: string[] } {
  const description = t.description ? { description: t.description } : {};
  if (format === 'gemini') {
    const g = toGeminiParameters(t.parameters);
    if (g.fatal.length) return { excluded: g.fatal };
    return {
      definition: { name: t.name, ...description, ...(g.schema ? { parameters: g.schema } : {}) },
      warnings: g.warnings,
    };
  }
  const warnings: string[] = [];
  const isStrict = strict && t.strictParameters !== null;
  if (strict && !isStrict && !t.unchecked)
    warnings.push(`sent non-strict: ${t.strictReasons.join('; ') || 'the schema cannot be strict'}`);
  if (strict && t.unchecked) warnings.push('sent non-strict: the schema could not be checked');
  const parameters = isStrict ? t.strictParameters! : t.parameters;
  switch (format) {
    case 'openai_chat':
      return {
        definition: { type: 'function', function: { name: t.name, ...description, parameters, strict: isStrict } },
        warnings,
      };
    case 'openai_responses':
      return { definition: { type: 'function', name: t.name, ...description, parameters, strict: isStrict }, warnings };
    case 'anthropic':
      if (parameters.type !== 'object')
        return { excluded: ["Anthropic's input_schema must be an object schema (type: object)"] };
      return {
        definition: { name: t.name, ...description, input_schema: parameters, ...(isStrict ? { strict: true } : {}) },
        warnings,
      };
    case 'json_schema':
      return {
        definition: { name: t.name, ...description, parameters, ...(isStrict ? { strict: true } : {}) },
        warnings,
      };
  }
}

const GEMINI_TYPES: Record<string, string> = {
  string: 'STRING',
  number: 'NUMBER',
  integer: 'INTEGER',
  boolean: 'BOOLEAN',
  array: 'ARRAY',
  object: 'OBJECT',
  null: 'NULL',
};
/** Kept as they are. */
const GEMINI_SAME = new Set(['description', 'title', 'format', 'pattern', 'default', 'example', 'propertyOrdering']);
/** JSON Schema integers that Gemini's Schema holds as int64 strings. */
const GEMINI_INT64 = new Set(['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties']);
/** Dropped without a word: annotations that constrain nothing the model sends. */
const GEMINI_SILENT = new Set([
  '$schema',
  '$id',
  '$comment',
  'deprecated',
  'readOnly',
  'writeOnly',
  'examples',
  'strict',
]);
/** Where a schema's properties are named in a reason. */
const MAX_WARNINGS = 20;

interface GeminiResult {
  /** Absent when the tool takes no parameters (Gemini refuses an OBJECT with empty properties). */
  schema?: Obj;
  warnings: string[];
  fatal: string[];
}

/**
 * JSON Schema parameters → Gemini's Schema (a select subset of OpenAPI 3.0, as @google/genai's
 * `Schema` types it): types in capitals; `type: [T, "null"]` and a null branch of anyOf become
 * `nullable`; `oneOf` is sent as `anyOf`, `const` as a one-value `enum`, `exclusiveMinimum`/
 * `exclusiveMaximum` as `minimum`/`maximum`; enum values as strings; the length and count bounds
 * as int64 strings; an object with no properties leaves `properties` out. Keywords the subset
 * lacks (allOf, not, additionalProperties schemas, patternProperties, uniqueItems, multipleOf, …)
 * are dropped, each with a warning. A `$ref` (Gemini's subset has no references) or a top-level
 * parameter name Gemini refuses excludes the tool.
 */
export function toGeminiParameters(parameters: Obj): GeminiResult {
  const r: GeminiResult = { warnings: [], fatal: [] };
  const props = isObject(parameters.properties) ? parameters.properties : {};
  const badNames = Object.keys(props).filter((n) => !GEMINI_PARAMETER_NAME.test(n));
  if (badNames.length) {
    r.fatal.push(
      `parameter name(s) ${badNames
        .slice(0, 5)
        .map((n) => JSON.stringify(n.slice(0, 80)))
        .join(', ')} do not match Gemini's ^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`,
    );
    return r;
  }
  const schema = new GeminiConverter(r).convert(parameters, 'parameters');
  if (r.warnings.length > MAX_WARNINGS)
    r.warnings.splice(MAX_WARNINGS, r.warnings.length, `and ${r.warnings.length - MAX_WARNINGS} more`);
  if (!r.fatal.length && isObject(schema.properties)) r.schema = schema;
  return r;
}

class GeminiConverter {
  constructor(private readonly r: GeminiResult) {}

  convert(node: Obj, path: string): Obj {
    const out: Obj = {};
    let nullable = false;
    for (const [k, v] of Object.entries(node)) {
      if (GEMINI_SAME.has(k)) out[k] = v;
      else if (GEMINI_INT64.has(k) && typeof v === 'number' && Number.isInteger(v)) out[k] = String(v);
      else if ((k === 'minimum' || k === 'maximum') && typeof v === 'number') out[k] = v;
      else if (k === 'type') nullable = this.type(v, out, path) || nullable;
      else if (k === 'properties' && isObject(v)) {
        const entries = Object.entries(v).filter(([, s]) => isObject(s));
        if (entries.length)
          out.properties = Object.fromEntries(
            entries.map(([name, s]) => [name, this.convert(s as Obj, `${path}.properties.${name}`)]),
          );
      } else if (k === 'required' && Array.isArray(v)) out.required = v;
      else if (k === 'items' && isObject(v)) out.items = this.convert(v, `${path}.items`);
      else if ((k === 'anyOf' || k === 'oneOf') && Array.isArray(v)) nullable = this.anyOf(k, v, out, path) || nullable;
      else if (k === 'enum' && Array.isArray(v)) nullable = this.enum(v, out, path) || nullable;
      else if (k === 'const') {
        if (v === null) nullable = true;
        else this.enum([v], out, path, `${path}: const sent as a one-value enum (Gemini has no const)`);
      } else if ((k === 'exclusiveMinimum' || k === 'exclusiveMaximum') && typeof v === 'number') {
        const bound = k === 'exclusiveMinimum' ? 'minimum' : 'maximum';
        if (!(bound in node)) out[bound] = v;
        this.warn(`${path}: ${k} sent as ${bound} (Gemini has no exclusive bounds)`);
      } else if (k === '$ref')
        this.r.fatal.push(`${path}: $ref ${JSON.stringify(String(v).slice(0, 80))}: Gemini's schema has no references`);
      else if (k === 'additionalProperties' && v === false) continue;
      else if (GEMINI_SILENT.has(k)) continue;
      else this.warn(`${path}: ${k} dropped (not in Gemini's schema)`);
    }
    if (nullable) out.nullable = true;
    if (out.required && isObject(out.properties)) {
      const known = out.properties as Obj;
      out.required = (out.required as unknown[]).filter((n) => typeof n === 'string' && n in known);
      if (!(out.required as unknown[]).length) delete out.required;
    } else delete out.required;
    if (out.type === 'ARRAY' && !out.items) this.r.fatal.push(`${path}: an array without items (Gemini needs them)`);
    return out;
  }

  /** Sets out.type; true when the type list allowed null. */
  private type(v: unknown, out: Obj, path: string): boolean {
    const list = (Array.isArray(v) ? v : [v]).filter((t): t is string => typeof t === 'string' && t in GEMINI_TYPES);
    const nonNull = list.filter((t) => t !== 'null');
    const nullable = list.includes('null') && nonNull.length > 0;
    if (nonNull.length === 1) out.type = GEMINI_TYPES[nonNull[0]!];
    else if (nonNull.length === 0 && list.length) out.type = 'NULL';
    else if (nonNull.length > 1) {
      out.anyOf = nonNull.map((t) => ({ type: GEMINI_TYPES[t] }));
      this.warn(`${path}: type [${nonNull.join(', ')}] sent as anyOf`);
    }
    return nullable;
  }

  /** Sets out.anyOf (a null branch becomes nullable; one branch left is merged in); true when a branch was null. */
  private anyOf(k: string, list: unknown[], out: Obj, path: string): boolean {
    if (k === 'oneOf') this.warn(`${path}: oneOf sent as anyOf (Gemini has no oneOf)`);
    const branches = list.filter(isObject);
    const isNull = (b: Obj) => b.type === 'null' && Object.keys(b).length === 1;
    const rest = branches.filter((b) => !isNull(b)).map((b, i) => this.convert(b, `${path}.${k}[${i}]`));
    if (rest.length === 1) {
      for (const [key, value] of Object.entries(rest[0]!)) if (!(key in out)) out[key] = value;
    } else if (rest.length) out.anyOf = [...((out.anyOf as Obj[] | undefined) ?? []), ...rest];
    return rest.length < branches.length;
  }

  /** Sets out.enum as strings; true when null was one of the values. */
  private enum(values: unknown[], out: Obj, path: string, why?: string): boolean {
    const present = values.filter((x) => x !== null);
    if (present.some((x) => typeof x !== 'string')) {
      if (present.some((x) => typeof x === 'object')) {
        this.warn(`${path}: enum of objects or arrays dropped (Gemini's enum holds strings)`);
        return present.length < values.length;
      }
      this.warn(why ?? `${path}: enum values sent as strings (Gemini's enum holds strings)`);
      out.format = 'enum';
    } else if (why) this.warn(why);
    out.enum = present.map((x) => String(x));
    return present.length < values.length;
  }

  private warn(reason: string): void {
    this.r.warnings.push(reason);
  }
}
