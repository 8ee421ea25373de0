/**
 * MCP tool input schemas → schemas LLM providers accept. Strips `$schema`, inlines local `$ref`s
 * (depth and size limited; remote refs are never fetched), gives remaining `$ref`s a `type`,
 * makes every object schema explicit (`type`, `properties`, `additionalProperties: false`), turns
 * `oneOf` into `anyOf` when the branches cannot overlap, and de-duplicates `anyOf`. The input is
 * never modified; the result carries it unchanged beside the normalized schema.
 */
import type { NormalizeResult } from '../schema-engine.types';
import { canonical, forEachSubschema, isObject, tooDeepOrCyclic, type Obj } from './json-walk';
import { inlineLocalRefs, parseLocalRef } from './ref-inliner';
import { validateSchema } from './schema.validator';

/** Keys that may sit beside a single remaining anyOf member without changing its meaning. */
const ANNOTATIONS = new Set(['description', 'title', 'default', 'examples', 'deprecated']);

export function normalizeMcpSchema(input: unknown): NormalizeResult {
  if (!isObject(input) || tooDeepOrCyclic(input)) {
    const report = validateSchema(input);
    return {
      json_schema: isObject(input) ? input : {},
      original_json_schema: input,
      changes: [],
      health: 'INVALID',
      reasons: [
        'not normalized: the schema must be a JSON object nested at most 100 levels deep, without cycles',
        ...report.reasons,
      ],
    };
  }
  const changes: string[] = [];
  const { schema, notes } = inlineLocalRefs(input, { maxDepth: 16, maxNodes: 10_000 });
  if (canonical(schema) !== canonical(input)) changes.push('inlined local $refs');
  changes.push(...notes);
  if (schema.type === undefined && !('anyOf' in schema) && !('$ref' in schema)) {
    schema.type = 'object';
    changes.push("root: added type 'object'");
  }
  new Normalizer(schema, changes).visit(schema, 'root');
  return { json_schema: schema, original_json_schema: input, changes, ...validateSchema(schema) };
}

class Normalizer {
  constructor(
    private readonly root: Obj,
    private readonly changes: string[],
  ) {}

  private change(text: string): void {
    if (this.changes.length < 50) this.changes.push(text);
  }

  visit(node: Obj, path: string): void {
    if ('$schema' in node) {
      delete node.$schema;
      this.change(`${path}: removed $schema`);
    }
    if (typeof node.$ref === 'string') {
      if (node.type === undefined) {
        node.type = this.refType(node.$ref);
        this.change(`${path}: gave $ref a type (${JSON.stringify(node.type)})`);
      }
    } else {
      if (node.type === undefined && isObject(node.properties)) {
        node.type = 'object';
        this.change(`${path}: added type 'object'`);
      }
      const t = node.type;
      if (t === 'object' || (Array.isArray(t) && t.includes('object'))) {
        if (!('properties' in node)) {
          node.properties = {};
          this.change(`${path}: added empty properties`);
        }
        if (!('additionalProperties' in node)) {
          node.additionalProperties = false;
          this.change(`${path}: added additionalProperties: false`);
        }
      }
    }
    if (Array.isArray(node.oneOf) && !('anyOf' in node) && pairwiseDisjoint(node.oneOf)) {
      node.anyOf = node.oneOf;
      delete node.oneOf;
      this.change(`${path}: oneOf → anyOf (the branches are mutually exclusive)`);
    }
    if (Array.isArray(node.anyOf)) this.dedupe(node, path);
    forEachSubschema(node, (child, rel) => this.visit(child, `${path}.${rel}`));
  }

  private dedupe(node: Obj, path: string): void {
    const seen = new Set<string>();
    const members = (node.anyOf as unknown[]).filter((m) => {
      const key = canonical(m);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    if (members.length === (node.anyOf as unknown[]).length) return;
    this.change(`${path}: removed ${(node.anyOf as unknown[]).length - members.length} duplicate anyOf member(s)`);
    const only = members[0];
    const rest = Object.keys(node).filter((k) => k !== 'anyOf');
    if (members.length === 1 && isObject(only) && rest.every((k) => ANNOTATIONS.has(k) && !(k in only))) {
      delete node.anyOf;
      Object.assign(node, only);
    } else {
      node.anyOf = members;
    }
  }

  /** The type of a kept local definition, else 'object' (the common case: a model reference). */
  private refType(ref: string): unknown {
    const local = parseLocalRef(ref);
    const defs = local ? this.root[local[0]] : undefined;
    const def = local && isObject(defs) ? defs[local[1]] : undefined;
    return isObject(def) && def.type !== undefined ? def.type : 'object';
  }
}

type Facts = { types: Set<string> | null; values: string[] | null; obj: Obj };

function facts(s: Obj): Facts {
  let types: Set<string> | null = null;
  if (typeof s.type === 'string') types = new Set([s.type]);
  else if (Array.isArray(s.type)) types = new Set(s.type.filter((t): t is string => typeof t === 'string'));
  if (types?.has('integer')) types.add('number');
  if (types?.has('number')) types.add('integer');
  let values: string[] | null = null;
  if ('const' in s) values = [canonical(s.const)];
  else if (Array.isArray(s.enum)) values = s.enum.map(canonical);
  return { types, values, obj: s };
}

const disjointSets = (a: Iterable<string>, b: Set<string>): boolean => [...a].every((x) => !b.has(x));

/** Two object branches with a required property whose const/enum values cannot both hold (a discriminator). */
function discriminated(a: Obj, b: Obj): boolean {
  const pa = isObject(a.properties) ? a.properties : {};
  const pb = isObject(b.properties) ? b.properties : {};
  const ra = Array.isArray(a.required) ? a.required : [];
  const rb = Array.isArray(b.required) ? b.required : [];
  return Object.keys(pa).some((k) => {
    if (!ra.includes(k) || !rb.includes(k) || !isObject(pa[k]) || !isObject(pb[k])) return false;
    const va = facts(pa[k]).values;
    const vb = facts(pb[k]).values;
    return va !== null && vb !== null && disjointSets(va, new Set(vb));
  });
}

function disjoint(a: Facts, b: Facts): boolean {
  if (a.types && b.types && disjointSets(a.types, b.types)) return true;
  if (a.values && b.values && disjointSets(a.values, new Set(b.values))) return true;
  return discriminated(a.obj, b.obj);
}

/** oneOf and anyOf accept the same values when no value can match two branches. */
function pairwiseDisjoint(list: unknown[]): boolean {
  if (list.length > 64 || !list.every(isObject)) return false;
  const all = list.map((s) => facts(s as Obj));
  for (let i = 0; i < all.length; i += 1)
    for (let j = i + 1; j < all.length; j += 1) if (!disjoint(all[i]!, all[j]!)) return false;
  return true;
}
