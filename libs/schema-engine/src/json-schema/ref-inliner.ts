/**
 * Inlines local `$ref`s (`#/$defs/X`, `#/definitions/X`) into a copy of a schema. Recursive
 * definitions, refs nested deeper than `maxDepth` and expansions past `maxNodes` stay as `$ref`s
 * (with the definitions they need); remote refs are never fetched and stay as they are.
 */
import { cloneJson, isObject, put, type Obj } from './json-walk';

export interface InlineOptions {
  /** How many refs may be expanded inside one another. */
  maxDepth?: number;
  /** Total schema nodes the inlined result may hold (guards against exponential expansion). */
  maxNodes?: number;
}

export interface InlineResult {
  schema: Obj;
  /** Human-readable notes: refs kept and why. */
  notes: string[];
}

const LOCAL_REF = /^#\/(\$defs|definitions)\/([^/]+)$/;

/** `#/$defs/A~1B` → ['$defs', 'A/B']; null for anything that is not a local definition ref (also a malformed %-escape). */
export function parseLocalRef(ref: string): [string, string] | null {
  const m = LOCAL_REF.exec(ref);
  if (!m) return null;
  let name: string;
  try {
    name = decodeURIComponent(m[2]!);
  } catch {
    return null; // URIError: `#/$defs/%E0` names no definition
  }
  return [m[1]!, name.replace(/~1/g, '/').replace(/~0/g, '~')];
}

class Inliner {
  private nodes = 0;
  private readonly stack: string[] = [];
  private keptLocal = false;
  readonly notes: string[] = [];

  constructor(
    private readonly root: Obj,
    private readonly maxDepth: number,
    private readonly maxNodes: number,
  ) {}

  node(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.node(v));
    if (!isObject(value)) return value;
    this.nodes += 1;
    const ref = value.$ref;
    const single =
      Array.isArray(value.allOf) &&
      value.allOf.length === 1 &&
      isObject(value.allOf[0]) &&
      typeof value.allOf[0].$ref === 'string';
    if (typeof ref === 'string' || single) {
      // pydantic v1 wraps a described ref as {allOf: [{$ref}], description}
      const target = typeof ref === 'string' ? ref : ((value.allOf as Obj[])[0]!.$ref as string);
      const siblings = Object.entries(value).filter(([k]) => k !== '$ref' && !(single && k === 'allOf'));
      const expanded = this.expand(target);
      if (expanded) {
        const out = expanded;
        for (const [k, v] of siblings) put(out, k, this.node(v));
        return out;
      }
    }
    const out: Obj = {};
    for (const [k, v] of Object.entries(value)) {
      if (k === '$defs' || k === 'definitions') put(out, k, cloneJson(v));
      else put(out, k, this.node(v));
    }
    return out;
  }

  private expand(ref: string): Obj | null {
    const local = parseLocalRef(ref);
    if (!local) {
      if (ref !== '#') this.note(`$ref ${JSON.stringify(ref).slice(0, 80)} is not local and was not fetched`);
      else this.keep('$ref "#" (the root) is recursive and was kept');
      return null;
    }
    const [kw, name] = local;
    const defs = this.root[kw];
    const def = isObject(defs) && Object.hasOwn(defs, name) ? defs[name] : undefined;
    if (!isObject(def)) {
      this.note(`$ref ${JSON.stringify(ref).slice(0, 80)} does not resolve to a definition`);
      return null;
    }
    if (this.stack.includes(ref))
      return this.keep(`$ref ${JSON.stringify(ref).slice(0, 80)} is recursive and was kept`);
    if (this.stack.length >= this.maxDepth)
      return this.keep(
        `$ref ${JSON.stringify(ref).slice(0, 80)} is nested more than ${this.maxDepth} refs deep and was kept`,
      );
    if (this.nodes > this.maxNodes)
      return this.keep(
        `inlining stopped after ${this.maxNodes} schema nodes; $ref ${JSON.stringify(ref).slice(0, 80)} was kept`,
      );
    this.stack.push(ref);
    try {
      return this.node(def) as Obj;
    } finally {
      this.stack.pop();
    }
  }

  private keep(note: string): null {
    this.keptLocal = true;
    this.note(note);
    return null;
  }

  private note(note: string): void {
    if (!this.notes.includes(note) && this.notes.length < 20) this.notes.push(note);
  }

  get needsDefinitions(): boolean {
    return this.keptLocal;
  }
}

/** Returns a new schema; the input is never modified. `$defs`/`definitions` go unless a kept ref needs them. */
export function inlineLocalRefs(schema: Obj, options: InlineOptions = {}): InlineResult {
  const inliner = new Inliner(schema, options.maxDepth ?? 16, options.maxNodes ?? 10_000);
  const out = inliner.node(schema) as Obj;
  if (!inliner.needsDefinitions) {
    delete out.$defs;
    delete out.definitions;
  }
  return { schema: out, notes: inliner.notes };
}
