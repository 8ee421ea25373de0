/**
 * Python type annotations → TypeIR, statically. Understands builtins, `typing` constructs, and
 * pydantic models, Enums and type aliases defined in the same source. Never evaluates code.
 */
import type { Node } from 'web-tree-sitter';
import type { FieldIR, JsonValue, LiteralValue, TypeIR } from '../ir';
import { LEAST_FIELD_BYTES, type Budget } from '../budget';
import { checkDocstringSize } from '../limits';
import { cleandoc, parseDocstring } from './python.docstring';
import { decodeStringLiteral } from './python.strings';

/** Raised while resolving an annotation; the front-end adds the function and parameter. */
export class AnnotationError extends Error {
  constructor(
    readonly reason: 'UNSUPPORTED_ANNOTATION' | 'UNDOCUMENTED_PARAMETER',
    message: string,
    readonly line?: number,
  ) {
    super(message);
  }
}

export interface ModuleScope {
  classes: Map<string, Node>;
  aliases: Map<string, Node>;
}

/** A type expression parsed out of a string annotation; `dispose` frees its tree. */
export interface ParsedTypeExpression {
  node: Node | null;
  dispose(): void;
}

const MAX_DEPTH = 32;
const TYPING_MODULES = new Set([
  'typing',
  'typing_extensions',
  't',
  'collections.abc',
  'abc',
  'builtins',
  'pydantic',
  'enum',
  'types',
]);
const PRIMITIVES: Record<string, 'string' | 'integer' | 'number' | 'boolean' | 'null'> = {
  str: 'string',
  int: 'integer',
  float: 'number',
  bool: 'boolean',
  None: 'null',
  NoneType: 'null',
};
const LIST_NAMES = new Set(['list', 'List', 'Sequence', 'MutableSequence', 'Iterable', 'Collection']);
const SET_NAMES = new Set(['set', 'Set', 'frozenset', 'FrozenSet', 'AbstractSet', 'MutableSet']);
const TUPLE_NAMES = new Set(['tuple', 'Tuple']);
const DICT_NAMES = new Set(['dict', 'Dict', 'Mapping', 'MutableMapping']);
const WRAPPER_NAMES = new Set(['Required', 'NotRequired', 'ReadOnly', 'Final']);
const ENUM_BASES = new Set(['Enum', 'IntEnum', 'StrEnum']);
const ALIAS_VALUE_TYPES = new Set([
  'identifier',
  'attribute',
  'subscript',
  'generic_type',
  'binary_operator',
  'union_type',
  'none',
  'string',
]);
const CONSTRAINTS: Record<string, string> = {
  ge: 'minimum',
  le: 'maximum',
  gt: 'exclusiveMinimum',
  lt: 'exclusiveMaximum',
  multiple_of: 'multipleOf',
  pattern: 'pattern',
};

export function lineOf(node: Node): number {
  return node.startPosition.row + 1;
}

/** Strips `type` wrapper nodes the grammar puts around annotations. */
function unwrap(node: Node): Node {
  let n = node;
  while (n.type === 'type' && n.namedChildCount > 0) n = n.namedChildren[0]!;
  return n;
}

/** A dotted name with typing-module prefixes removed (`typing.List` → `List`), or null. */
function nameOf(node: Node): string | null {
  const n = unwrap(node);
  if (n.type === 'identifier') return n.text;
  if (n.type !== 'attribute') return null;
  const parts = n.text.split('.').map((p) => p.trim());
  const prefix = parts.slice(0, -1).join('.');
  return TYPING_MODULES.has(prefix) ? parts[parts.length - 1] : n.text;
}

/** Top-level classes and type aliases of a module. Later definitions win, as in Python. */
export function collectScope(root: Node): ModuleScope {
  const scope: ModuleScope = { classes: new Map(), aliases: new Map() };
  for (const stmt of root.namedChildren) {
    if (!stmt) continue;
    const def = stmt.type === 'decorated_definition' ? stmt.childForFieldName('definition') : stmt;
    if (def?.type === 'class_definition') {
      const name = def.childForFieldName('name')?.text;
      if (name) scope.classes.set(name, def);
    } else if (stmt.type === 'type_alias_statement') {
      const left = stmt.childForFieldName('left');
      const right = stmt.childForFieldName('right');
      if (left && right) scope.aliases.set(unwrap(left).text, right);
    } else if (stmt.type === 'expression_statement') {
      const assign = stmt.namedChildren[0];
      if (assign?.type !== 'assignment') continue;
      const left = assign.childForFieldName('left');
      const right = assign.childForFieldName('right');
      const declared = assign.childForFieldName('type');
      if (left?.type !== 'identifier' || !right) continue;
      if (declared ? nameOf(declared) === 'TypeAlias' : ALIAS_VALUE_TYPES.has(right.type))
        scope.aliases.set(left.text, right);
    }
  }
  return scope;
}

interface FieldCall {
  call: Node;
  keywords: Map<string, Node>;
  positional: Node[];
}

function asFieldCall(node: Node | null): FieldCall | null {
  if (!node || node.type !== 'call' || nameOf(node.childForFieldName('function')!) !== 'Field') return null;
  const keywords = new Map<string, Node>();
  const positional: Node[] = [];
  for (const arg of node.childForFieldName('arguments')?.namedChildren ?? []) {
    if (!arg) continue;
    if (arg.type === 'keyword_argument') {
      const name = arg.childForFieldName('name')?.text;
      const value = arg.childForFieldName('value');
      if (name && value) keywords.set(name, value);
    } else if (arg.type !== 'comment') positional.push(arg);
  }
  return { call: node, keywords, positional };
}

export class AnnotationResolver {
  private depth = 0;
  private readonly expanding = new Set<string>();
  // Each class, alias and Enum is resolved once per call: a name used n times costs one
  // resolution, not n (uncached, aliases expanded exponentially and each `E.member` re-read E).
  private readonly classCache = new Map<string, TypeIR>();
  private readonly aliasCache = new Map<string, TypeIR>();
  private readonly enumCache = new Map<string, Map<string, LiteralValue> | null | AnnotationError>();
  private models: Set<string> | undefined;

  constructor(
    private readonly scope: ModuleScope,
    private readonly parseTypeExpression: (source: string) => ParsedTypeExpression,
    private readonly budget: Budget,
    private readonly maxDocstringBytes: number,
  ) {}

  resolve(node: Node): TypeIR {
    return this.nested(node, () => this.resolveExpression(unwrap(node)));
  }

  /** One level of nesting (a type argument, a referenced name, a base class), bounded by MAX_DEPTH. */
  private nested<T>(node: Node, fn: () => T): T {
    this.budget.check();
    if (this.depth >= MAX_DEPTH) throw this.unsupported(node, `it is nested more than ${MAX_DEPTH} levels deep`);
    this.depth += 1;
    try {
      return fn();
    } finally {
      this.depth -= 1;
    }
  }

  private resolveExpression(node: Node): TypeIR {
    switch (node.type) {
      case 'none':
        return { kind: 'primitive', type: 'null' };
      case 'identifier':
      case 'attribute':
        return this.resolveName(nameOf(node) ?? node.text, node);
      case 'generic_type': {
        const params = node.namedChildren.find((c) => c?.type === 'type_parameter');
        return this.resolveGeneric(
          node.namedChildren[0]!,
          params ? (params.namedChildren.filter(Boolean) as Node[]) : [],
          node,
        );
      }
      case 'subscript':
        return this.resolveGeneric(
          node.childForFieldName('value')!,
          node.childrenForFieldName('subscript').filter(Boolean) as Node[],
          node,
        );
      case 'binary_operator': {
        const op = node.childForFieldName('operator')?.text;
        const left = node.childForFieldName('left');
        const right = node.childForFieldName('right');
        if (op !== '|' || !left || !right) break;
        return { kind: 'union', members: [this.resolve(left), this.resolve(right)] };
      }
      case 'union_type':
        // `list[int] | None`: the grammar makes a union_type when a member is a generic_type.
        return { kind: 'union', members: node.namedChildren.filter((c): c is Node => !!c).map((c) => this.resolve(c)) };
      case 'string':
      case 'concatenated_string':
        return this.resolveForwardReference(node);
      default:
        break;
    }
    throw this.unsupported(node, 'it is not a type expression this engine understands');
  }

  private resolveName(name: string, node: Node): TypeIR {
    if (name in PRIMITIVES) return { kind: 'primitive', type: PRIMITIVES[name] };
    if (name === 'Any') return { kind: 'any' };
    if (LIST_NAMES.has(name) || TUPLE_NAMES.has(name)) return { kind: 'array', items: null };
    if (SET_NAMES.has(name)) return { kind: 'array', items: null, uniqueItems: true };
    if (DICT_NAMES.has(name)) return { kind: 'map', values: null };
    if (['Optional', 'Union', 'Literal', 'Annotated'].includes(name))
      throw this.unsupported(node, `'${name}' needs type arguments`);
    const cls = this.scope.classes.get(name);
    if (cls) return this.resolveClass(name, cls);
    const alias = this.scope.aliases.get(name);
    if (alias) {
      const cached = this.aliasCache.get(name);
      if (cached) return cached;
      const resolved = this.guard(`alias ${name}`, node, () => this.resolve(alias));
      this.aliasCache.set(name, resolved);
      return resolved;
    }
    throw this.unsupported(
      node,
      `'${name}' is not a known type (supported: str, int, float, bool, None, Any, list, set, tuple, dict, typing ` +
        'constructs, and pydantic models, Enums or aliases defined in the source)',
    );
  }

  private resolveGeneric(base: Node, args: Node[], node: Node): TypeIR {
    const name = nameOf(base);
    if (!name) throw this.unsupported(node, 'its base is not a type name');
    const arity = (n: number): void => {
      if (args.length !== n) throw this.unsupported(node, `'${name}' takes ${n} type argument${n === 1 ? '' : 's'}`);
    };
    if (LIST_NAMES.has(name) || SET_NAMES.has(name)) {
      arity(1);
      return { kind: 'array', items: this.resolve(args[0]), ...(SET_NAMES.has(name) ? { uniqueItems: true } : {}) };
    }
    if (TUPLE_NAMES.has(name)) {
      const ellipsis = args.map((a) => unwrap(a).type === 'ellipsis');
      if (args.length === 2 && ellipsis[1] && !ellipsis[0]) return { kind: 'array', items: this.resolve(args[0]) };
      if (args.length === 0 || ellipsis.some(Boolean) || unwrap(args[0]).type === 'tuple') {
        throw this.unsupported(node, 'tuples must list their element types (Tuple[int, str]) or be Tuple[X, ...]');
      }
      return { kind: 'tuple', items: args.map((a) => this.resolve(a)) };
    }
    if (DICT_NAMES.has(name)) {
      arity(2);
      const key = stripAnnotations(this.resolve(args[0]));
      const stringKeys =
        (key.kind === 'primitive' && key.type === 'string') ||
        (key.kind === 'enum' && key.values.every((v) => typeof v === 'string'));
      if (!stringKeys) throw this.unsupported(node, 'JSON object keys are strings: use str keys');
      const values = this.resolve(args[1]);
      return { kind: 'map', values: values.kind === 'any' ? null : values };
    }
    if (name === 'Optional') {
      arity(1);
      return { kind: 'union', members: [this.resolve(args[0]), { kind: 'primitive', type: 'null' }] };
    }
    if (name === 'Union') {
      if (args.length === 0) throw this.unsupported(node, 'Union needs type arguments');
      return { kind: 'union', members: args.map((a) => this.resolve(a)) };
    }
    if (name === 'Literal') {
      if (args.length === 0) throw this.unsupported(node, 'Literal needs values');
      return { kind: 'enum', values: dedupe(args.flatMap((a) => this.literalValues(a))) };
    }
    if (name === 'Annotated') {
      if (args.length < 1) throw this.unsupported(node, 'Annotated needs a type');
      const inner = this.resolve(args[0]);
      let description: string | undefined;
      let constraints: Record<string, unknown> = {};
      for (const meta of args.slice(1).map(unwrap)) {
        if (meta.type === 'string' || meta.type === 'concatenated_string') {
          description = this.stringValue(meta) ?? description;
        } else {
          const field = asFieldCall(meta);
          if (!field) continue;
          description = this.fieldDescription(field) ?? description;
          constraints = { ...constraints, ...this.fieldConstraints(field, inner) };
        }
      }
      return annotate(inner, description, constraints);
    }
    if (WRAPPER_NAMES.has(name)) {
      arity(1);
      return this.resolve(args[0]);
    }
    throw this.unsupported(node, `'${name}[...]' is not a supported generic type`);
  }

  private literalValues(arg: Node): LiteralValue[] {
    const node = unwrap(arg);
    const base =
      node.type === 'generic_type'
        ? node.namedChildren[0]
        : node.type === 'subscript'
          ? node.childForFieldName('value')
          : null;
    if (base && nameOf(base) === 'Literal') {
      const inner = stripAnnotations(this.resolve(node));
      if (inner.kind === 'enum') return inner.values;
    }
    if (node.type === 'attribute') {
      const [owner, member] = [
        node.childForFieldName('object')?.text ?? '',
        node.childForFieldName('attribute')?.text ?? '',
      ];
      const cls = this.scope.classes.get(owner);
      if (cls) {
        const members = this.enumMembers(owner, cls);
        if (members?.has(member)) return [members.get(member)!];
      }
    }
    const value = this.constant(node);
    if (value === undefined)
      throw this.unsupported(
        node,
        'Literal values must be str, int, float, bool, None or members of an Enum in the source',
      );
    return [value];
  }

  /**
   * The JSON value of a default when it is a literal: numbers (also negative), strings (also
   * concatenated), True/False/None, lists/tuples/sets (→ arrays) and str-keyed dicts of literals,
   * and members of an Enum defined in the source (→ their value). Undefined for anything else
   * (calls, names, expressions), which then gets no `default`.
   */
  defaultValue(node: Node, depth = 0): JsonValue | undefined {
    if (depth > MAX_DEPTH) return undefined;
    const n = unwrap(node);
    switch (n.type) {
      case 'parenthesized_expression': {
        const inner = n.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
        return inner.length === 1 ? this.defaultValue(inner[0], depth + 1) : undefined;
      }
      case 'list':
      case 'tuple':
      case 'set': {
        this.budget.check();
        const out: JsonValue[] = [];
        for (const item of n.namedChildren) {
          if (!item || item.type === 'comment') continue;
          const value = this.defaultValue(item, depth + 1);
          if (value === undefined) return undefined;
          out.push(value);
        }
        return n.type === 'set' ? dedupeJson(out) : out;
      }
      case 'dictionary': {
        this.budget.check();
        const out: { [key: string]: JsonValue } = {};
        for (const pair of n.namedChildren) {
          if (!pair || pair.type === 'comment') continue;
          const key = pair.type === 'pair' ? pair.childForFieldName('key') : null;
          const valueNode = pair.type === 'pair' ? pair.childForFieldName('value') : null;
          const k = key ? this.defaultValue(key, depth + 1) : undefined;
          const value = valueNode ? this.defaultValue(valueNode, depth + 1) : undefined;
          if (typeof k !== 'string' || value === undefined) return undefined; // JSON keys are strings
          // A repeated key keeps its first position and its last value, as in Python.
          Object.defineProperty(out, k, { value, enumerable: true, writable: true, configurable: true });
        }
        return out;
      }
      case 'attribute': {
        const owner = n.childForFieldName('object');
        const member = n.childForFieldName('attribute')?.text ?? '';
        const cls = owner?.type === 'identifier' ? this.scope.classes.get(owner.text) : undefined;
        if (!cls || !owner) return undefined;
        try {
          return this.enumMembers(owner.text, cls)?.get(member);
        } catch (e) {
          if (e instanceof AnnotationError) return undefined;
          throw e;
        }
      }
      case 'integer': {
        const value = this.constant(n);
        return typeof value === 'number' && Number.isSafeInteger(value) ? value : undefined; // no silent rounding
      }
      case 'unary_operator': {
        const operand = n.childForFieldName('argument');
        const op = n.childForFieldName('operator')?.text;
        const value = operand ? this.defaultValue(operand, depth + 1) : undefined;
        if (typeof value !== 'number') return undefined;
        return op === '-' ? -value : op === '+' ? value : undefined;
      }
      default:
        return this.constant(n);
    }
  }

  /** `{default}` for a field or parameter whose default is a static literal, else `{}`. */
  defaultKey(node: Node | null): { default?: JsonValue } {
    const value = node ? this.defaultValue(node) : undefined;
    return value === undefined ? {} : { default: value };
  }

  /** The value of a constant expression, or undefined when it is not one. */
  private constant(node: Node): LiteralValue | undefined {
    const n = unwrap(node);
    switch (n.type) {
      case 'string':
      case 'concatenated_string':
        return this.stringValue(n) ?? undefined;
      case 'integer':
      case 'float': {
        const value = Number(n.text.replace(/_/g, ''));
        return Number.isFinite(value) ? value : undefined;
      }
      case 'true':
        return true;
      case 'false':
        return false;
      case 'none':
        return null;
      case 'unary_operator': {
        const operand = n.childForFieldName('argument');
        const op = n.childForFieldName('operator')?.text;
        const value = operand ? this.constant(operand) : undefined;
        if (typeof value !== 'number') return undefined;
        return op === '-' ? -value : op === '+' ? value : undefined;
      }
      default:
        return undefined;
    }
  }

  private stringValue(node: Node): string | null {
    if (node.type === 'string') return decodeStringLiteral(node.text);
    if (node.type !== 'concatenated_string') return null;
    let out = '';
    for (const part of node.namedChildren) {
      const value = part ? decodeStringLiteral(part.text) : null;
      if (value === null) return null;
      out += value;
    }
    return out;
  }

  private resolveForwardReference(node: Node): TypeIR {
    const text = this.stringValue(node);
    if (text === null || text.includes('\n') || text.trim() === '')
      throw this.unsupported(node, 'a string annotation must hold one type expression');
    const parsed = this.parseTypeExpression(text.trim());
    try {
      if (!parsed.node) throw this.unsupported(node, `'${text}' is not a valid type expression`);
      return this.resolve(parsed.node);
    } catch (e) {
      // Positions inside the string refer to a scratch tree: report the annotation's own line.
      if (e instanceof AnnotationError) throw new AnnotationError(e.reason, e.message, lineOf(node));
      throw e;
    } finally {
      parsed.dispose();
    }
  }

  private guard<T>(key: string, node: Node, fn: () => T): T {
    if (this.expanding.has(key)) {
      const name = key.replace(/^\w+ /, '');
      throw new AnnotationError(
        'UNSUPPORTED_ANNOTATION',
        `unsupported type annotation: '${name}' refers to itself (recursive types are not supported)`,
        lineOf(node),
      );
    }
    this.expanding.add(key);
    try {
      return fn();
    } finally {
      this.expanding.delete(key);
    }
  }

  private classBases(cls: Node): string[] {
    const list = cls.childForFieldName('superclasses');
    return (list?.namedChildren ?? [])
      .filter((c): c is Node => !!c && c.type !== 'keyword_argument')
      .map((c) => nameOf(c) ?? c.text);
  }

  /** A class of the source that reaches BaseModel through its bases (a cycle of bases does not). */
  private isModel(name: string): boolean {
    if (!this.models) {
      // Once per call, backwards from the classes that name BaseModel: walking up from each class
      // on every question cost O(classes) a question on a long chain of subclasses.
      const subclasses = new Map<string, string[]>();
      const found: string[] = [];
      for (const [cls, node] of this.scope.classes) {
        for (const base of this.classBases(node)) {
          if (base === 'BaseModel') found.push(cls);
          else if (this.scope.classes.has(base)) {
            const list = subclasses.get(base);
            if (list) list.push(cls);
            else subclasses.set(base, [cls]);
          }
        }
      }
      this.models = new Set(found);
      for (let i = 0; i < found.length; i += 1) {
        for (const sub of subclasses.get(found[i]) ?? []) {
          if (!this.models.has(sub)) {
            this.models.add(sub);
            found.push(sub);
          }
        }
      }
    }
    return this.models.has(name);
  }

  private resolveClass(name: string, cls: Node): TypeIR {
    const cached = this.classCache.get(name);
    if (cached) return cached;
    const result = this.guard(`class ${name}`, cls, (): TypeIR => {
      const members = this.enumMembers(name, cls);
      if (members) return { kind: 'enum', values: dedupe([...members.values()]) };
      if (this.isModel(name)) return this.resolveModel(name, cls);
      throw this.unsupported(cls, `class '${name}' is neither a pydantic BaseModel nor an Enum`);
    });
    this.classCache.set(name, result);
    return result;
  }

  /** Members of an Enum class defined in the source, or null when the class is not an Enum. */
  private enumMembers(name: string, cls: Node): Map<string, LiteralValue> | null {
    let members = this.enumCache.get(name);
    if (members === undefined) {
      try {
        members = this.readEnumMembers(name, cls);
      } catch (e) {
        if (!(e instanceof AnnotationError)) throw e;
        members = e;
      }
      this.enumCache.set(name, members);
    }
    if (members instanceof AnnotationError) throw members;
    return members;
  }

  private readEnumMembers(name: string, cls: Node): Map<string, LiteralValue> | null {
    const bases = this.classBases(cls);
    if (!bases.some((b) => ENUM_BASES.has(b))) return null;
    const strEnum = bases.includes('StrEnum');
    const members = new Map<string, LiteralValue>();
    let lastInt = 0;
    for (const stmt of cls.childForFieldName('body')?.namedChildren ?? []) {
      const assign = stmt?.type === 'expression_statement' ? stmt.namedChildren[0] : null;
      if (assign?.type !== 'assignment' || assign.childForFieldName('type')) continue;
      const left = assign.childForFieldName('left');
      const right = assign.childForFieldName('right');
      if (left?.type !== 'identifier' || !right || left.text.startsWith('_')) continue;
      let value: LiteralValue | undefined;
      if (right.type === 'call' && nameOf(right.childForFieldName('function')!) === 'auto') {
        value = strEnum ? left.text.toLowerCase() : lastInt + 1;
      } else {
        value = this.constant(right);
      }
      if (value === undefined)
        throw this.unsupported(right, `member '${left.text}' of Enum '${name}' does not have a constant value`);
      if (typeof value === 'number' && Number.isInteger(value)) lastInt = value;
      members.set(left.text, value);
    }
    if (members.size === 0) throw this.unsupported(cls, `Enum '${name}' has no members`);
    return members;
  }

  private resolveModel(name: string, cls: Node): TypeIR {
    const fields = new Map<string, FieldIR>();
    for (const base of this.classBases(cls)) {
      const baseCls = this.scope.classes.get(base);
      if (baseCls && this.isModel(base)) {
        const inherited = this.nested(baseCls, () => this.resolveClass(base, baseCls));
        if (inherited.kind === 'object') for (const f of inherited.fields) fields.set(f.name, f);
      }
    }
    const body = cls.childForFieldName('body');
    const docNode =
      body?.namedChildren[0]?.type === 'expression_statement' ? body.namedChildren[0].namedChildren[0] : null;
    const rawDoc =
      docNode && (docNode.type === 'string' || docNode.type === 'concatenated_string')
        ? this.stringValue(docNode)
        : null;
    if (rawDoc) checkDocstringSize(rawDoc, this.maxDocstringBytes, `class '${name}'`, { line: lineOf(cls) });
    const doc = rawDoc ? parseDocstring(rawDoc) : null;

    for (const stmt of body?.namedChildren ?? []) {
      const assign = stmt?.type === 'expression_statement' ? stmt.namedChildren[0] : null;
      const left = assign?.type === 'assignment' ? assign.childForFieldName('left') : null;
      const typeNode = assign?.childForFieldName('type');
      if (!assign || !typeNode || left?.type !== 'identifier' || left.text.startsWith('_')) continue;
      const typeExpr = unwrap(typeNode);
      const typeBase =
        typeExpr.type === 'generic_type'
          ? typeExpr.namedChildren[0]
          : typeExpr.type === 'subscript'
            ? typeExpr.childForFieldName('value')
            : typeExpr;
      if (typeBase && nameOf(typeBase) === 'ClassVar') continue;

      const right = assign.childForFieldName('right');
      const field = asFieldCall(right);
      let defaultNode: Node | null = right;
      let hasDefault = !!right;
      if (field) {
        const first = field.positional[0] ?? field.keywords.get('default') ?? null;
        defaultNode = first && first.type !== 'ellipsis' ? first : null;
        hasDefault = !!defaultNode || field.keywords.has('default_factory');
      }
      let type = this.resolve(typeNode);
      if (field) type = annotate(type, undefined, this.fieldConstraints(field, type));
      const aliasNode = field?.keywords.get('alias');
      const alias = aliasNode ? this.stringValue(aliasNode) : null;
      const description =
        (field ? this.fieldDescription(field) : undefined) ??
        annotatedDescription(type) ??
        doc?.attributes.get(left.text) ??
        doc?.params.get(left.text);
      if (!description) {
        throw new AnnotationError(
          'UNDOCUMENTED_PARAMETER',
          `field '${left.text}' of model '${name}' (line ${lineOf(left)}) has no description: use Field(description=...) or an Attributes: entry in the class docstring`,
          lineOf(left),
        );
      }
      fields.set(left.text, {
        name: alias ?? left.text,
        type,
        description,
        required: !hasDefault,
        defaultIsNull: defaultNode?.type === 'none',
        ...this.defaultKey(defaultNode),
      });
    }
    this.budget.charge(fields.size * LEAST_FIELD_BYTES); // inherited fields are copied: a long chain of subclasses writes many
    return { kind: 'object', name, ...(rawDoc ? { description: cleandoc(rawDoc) } : {}), fields: [...fields.values()] };
  }

  private fieldDescription(field: FieldCall): string | undefined {
    const node = field.keywords.get('description');
    return (node && this.stringValue(node)) || undefined;
  }

  private fieldConstraints(field: FieldCall, type: TypeIR): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const base = stripAnnotations(type);
    const isArray = base.kind === 'array' || base.kind === 'tuple';
    for (const [kw, node] of field.keywords) {
      const value = this.constant(node);
      if (value === undefined || value === null) continue;
      if (kw in CONSTRAINTS) out[CONSTRAINTS[kw]] = value;
      else if (kw === 'min_length') out[isArray ? 'minItems' : 'minLength'] = value;
      else if (kw === 'max_length') out[isArray ? 'maxItems' : 'maxLength'] = value;
    }
    return out;
  }

  private unsupported(node: Node, why: string): AnnotationError {
    const text = node.text.length > 80 ? `${node.text.slice(0, 77)}...` : node.text;
    return new AnnotationError('UNSUPPORTED_ANNOTATION', `unsupported type annotation '${text}': ${why}`, lineOf(node));
  }
}

function dedupe(values: LiteralValue[]): LiteralValue[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const key = JSON.stringify(v);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A set's members without repeats (by JSON equality), in source order. */
function dedupeJson(values: JsonValue[]): JsonValue[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const key = JSON.stringify(v);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function annotate(inner: TypeIR, description: string | undefined, constraints: Record<string, unknown>): TypeIR {
  if (description === undefined && Object.keys(constraints).length === 0) return inner;
  return {
    kind: 'annotated',
    inner,
    ...(description !== undefined ? { description } : {}),
    ...(Object.keys(constraints).length > 0 ? { constraints } : {}),
  };
}

export function annotatedDescription(type: TypeIR): string | undefined {
  let t = type;
  while (t.kind === 'annotated') {
    if (t.description) return t.description;
    t = t.inner;
  }
  return undefined;
}

function stripAnnotations(type: TypeIR): TypeIR {
  let t = type;
  while (t.kind === 'annotated') t = t.inner;
  return t;
}
