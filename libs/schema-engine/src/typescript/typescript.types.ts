/**
 * TypeScript type nodes → TypeIR, syntactically (the compiler API's parser only: no Program, no
 * type checker, no lib files). Understands primitives, arrays, tuples, unions, literal unions,
 * object type literals, Record/Array/Set/Readonly/Partial/Required, and the interfaces, type
 * aliases and enums declared in the same source.
 */
import * as ts from 'typescript';
import type { FieldIR, JsonValue, LiteralValue, TypeIR } from '../ir';
import { LEAST_FIELD_BYTES, type Budget } from '../budget';
import { checkDocstringSize } from '../limits';

/** Raised while resolving a type; the front-end adds the function and parameter. */
export class TsTypeError extends Error {
  constructor(
    message: string,
    readonly node: ts.Node,
  ) {
    super(message);
  }
}

export interface TsScope {
  interfaces: Map<string, ts.InterfaceDeclaration[]>;
  aliases: Map<string, ts.TypeAliasDeclaration>;
  enums: Map<string, ts.EnumDeclaration[]>;
  /** Each enum's members read once (see enumOf): `E.member` used n times must not re-read E n times. */
  enumCache: Map<string, EnumMembers>;
}

interface EnumMembers {
  /** Member name → its position (the first member of that name). */
  index: Map<string, number>;
  /** The members' values by position, or why they have none (a computed member). */
  values: LiteralValue[] | TsTypeError;
}

function valuesOf(members: EnumMembers): LiteralValue[] {
  if (members.values instanceof TsTypeError) throw members.values;
  return members.values;
}

/** `undefined` as a union member: it makes a value optional and is dropped from the schema. */
export const UNDEFINED: TypeIR = { kind: 'primitive', type: 'null' };
const undefinedMarker = new WeakSet<TypeIR>([UNDEFINED]);
export const isUndefined = (t: TypeIR): boolean => undefinedMarker.has(t);

const MAX_DEPTH = 32;
const text = (node: ts.Node): string => {
  const t = node.getText();
  return t.length > 60 ? `${t.slice(0, 57)}...` : t;
};

/** Top-level interfaces, type aliases and enums (also exported ones). Interfaces merge, as in TS. */
export function collectScope(sf: ts.SourceFile): TsScope {
  const scope: TsScope = { interfaces: new Map(), aliases: new Map(), enums: new Map(), enumCache: new Map() };
  const add = <T>(map: Map<string, T[]>, name: string, decl: T): void => {
    const list = map.get(name);
    if (list) list.push(decl);
    else map.set(name, [decl]);
  };
  for (const stmt of sf.statements) {
    if (ts.isInterfaceDeclaration(stmt)) add(scope.interfaces, stmt.name.text, stmt);
    else if (ts.isTypeAliasDeclaration(stmt)) scope.aliases.set(stmt.name.text, stmt);
    else if (ts.isEnumDeclaration(stmt)) add(scope.enums, stmt.name.text, stmt);
  }
  return scope;
}

/** The text of the last JSDoc comment attached to a node (its summary and long description). */
export function jsDocText(node: ts.Node, maxBytes: number): string | null {
  const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const last = docs[docs.length - 1];
  if (!last) return null;
  if (last.end - last.pos > maxBytes / 3) {
    const sf = node.getSourceFile();
    const start = last.getStart(sf);
    const line = sf.getLineAndCharacterOfPosition(start).line + 1;
    const what = ts.isFunctionLike(node) ? 'function' : ts.isInterfaceDeclaration(node) ? 'interface' : 'member';
    const name = (node as { name?: ts.Node }).name?.getText(sf);
    checkDocstringSize(sf.text.slice(start, last.end), maxBytes, name ? `${what} '${name}'` : what, { line });
  }
  return (ts.getTextOfJSDocComment(last.comment) ?? '').trim();
}

function propertyName(name: ts.PropertyName): string | null {
  if (
    ts.isIdentifier(name) ||
    ts.isStringLiteral(name) ||
    ts.isNumericLiteral(name) ||
    ts.isNoSubstitutionTemplateLiteral(name)
  )
    return name.text;
  return null;
}

function literalValue(node: ts.LiteralTypeNode): LiteralValue | undefined {
  const lit = node.literal;
  if (ts.isStringLiteral(lit) || ts.isNoSubstitutionTemplateLiteral(lit)) return lit.text;
  if (ts.isNumericLiteral(lit)) return Number(lit.text);
  if (lit.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (lit.kind === ts.SyntaxKind.FalseKeyword) return false;
  if (lit.kind === ts.SyntaxKind.NullKeyword) return null;
  if (ts.isPrefixUnaryExpression(lit) && lit.operator === ts.SyntaxKind.MinusToken && ts.isNumericLiteral(lit.operand))
    return -Number(lit.operand.text);
  return undefined;
}

/** Fields by name: a later field of the same name replaces an earlier one in place. */
class FieldList {
  readonly fields: FieldIR[] = [];
  private readonly at = new Map<string, number>();

  /** Copies of fields (inherited, intersected) are charged: a long chain of interfaces writes many. */
  constructor(private readonly budget: Budget) {}

  add(fs: readonly FieldIR[]): void {
    this.budget.charge(fs.length * LEAST_FIELD_BYTES);
    for (const f of fs) {
      const i = this.at.get(f.name);
      if (i === undefined) {
        this.at.set(f.name, this.fields.length);
        this.fields.push(f);
      } else this.fields[i] = f;
    }
  }
}

export class TsTypeResolver {
  private readonly resolving: string[] = [];
  /** Each declared type is resolved once per call (uncached, aliases of aliases expanded exponentially). */
  private readonly declaredTypes = new Map<string, TypeIR>();

  constructor(
    private readonly scope: TsScope,
    private readonly budget: Budget,
    private readonly maxDocstringBytes: number,
  ) {}

  resolve(node: ts.TypeNode, depth = 0): TypeIR {
    if (depth > MAX_DEPTH) throw new TsTypeError(`type is nested more than ${MAX_DEPTH} levels deep`, node);
    this.budget.check();
    switch (node.kind) {
      case ts.SyntaxKind.StringKeyword:
        return { kind: 'primitive', type: 'string' };
      case ts.SyntaxKind.NumberKeyword:
        return { kind: 'primitive', type: 'number' };
      case ts.SyntaxKind.BooleanKeyword:
        return { kind: 'primitive', type: 'boolean' };
      case ts.SyntaxKind.NullKeyword:
        return { kind: 'primitive', type: 'null' };
      case ts.SyntaxKind.UndefinedKeyword:
        return UNDEFINED;
      case ts.SyntaxKind.AnyKeyword:
      case ts.SyntaxKind.UnknownKeyword:
        return { kind: 'any' };
      case ts.SyntaxKind.ObjectKeyword:
        return { kind: 'map', values: null };
      case ts.SyntaxKind.TemplateLiteralType:
        return { kind: 'primitive', type: 'string' };
    }
    if (ts.isParenthesizedTypeNode(node)) return this.resolve(node.type, depth + 1);
    if (ts.isLiteralTypeNode(node)) {
      const value = literalValue(node);
      if (value === undefined) throw unsupported(node);
      return value === null ? { kind: 'primitive', type: 'null' } : { kind: 'enum', values: [value] };
    }
    if (ts.isArrayTypeNode(node)) return { kind: 'array', items: this.resolve(node.elementType, depth + 1) };
    if (ts.isTypeOperatorNode(node) && node.operator === ts.SyntaxKind.ReadonlyKeyword)
      return this.resolve(node.type, depth + 1);
    if (ts.isTupleTypeNode(node)) return this.tuple(node, depth);
    if (ts.isUnionTypeNode(node)) return this.union(node.types.map((t) => this.resolve(t, depth + 1)));
    if (ts.isIntersectionTypeNode(node)) return this.intersection(node, depth);
    if (ts.isTypeLiteralNode(node)) return this.typeLiteral(node, node.members, '', depth);
    if (ts.isTypeReferenceNode(node)) return this.reference(node, depth);
    throw unsupported(node);
  }

  /** Literal members merge into one enum in source order; the rest stay union members. */
  private union(members: TypeIR[]): TypeIR {
    const out: TypeIR[] = [];
    let literals: Extract<TypeIR, { kind: 'enum' }> | null = null;
    const seen = new Set<LiteralValue>(); // SameValueZero, as includes() was (quadratic on long unions)
    for (const m of members) {
      if (m.kind === 'enum') {
        if (!literals) {
          literals = { kind: 'enum', values: [] };
          out.push(literals);
        }
        for (const v of m.values) {
          if (!seen.has(v)) {
            seen.add(v);
            literals.values.push(v);
          }
        }
      } else out.push(m);
    }
    return out.length === 1 ? out[0] : { kind: 'union', members: out };
  }

  private tuple(node: ts.TupleTypeNode, depth: number): TypeIR {
    const items = node.elements.map((e) => {
      const inner = ts.isNamedTupleMember(e) ? (e.questionToken || e.dotDotDotToken ? null : e.type) : e;
      if (!inner || ts.isOptionalTypeNode(inner) || ts.isRestTypeNode(inner)) {
        throw new TsTypeError(`optional and rest tuple elements are not supported: '${text(node)}'`, e);
      }
      return this.resolve(inner, depth + 1);
    });
    return { kind: 'tuple', items };
  }

  private intersection(node: ts.IntersectionTypeNode, depth: number): TypeIR {
    const fields = new FieldList(this.budget);
    for (const member of node.types) {
      const t = this.resolve(member, depth + 1);
      if (t.kind !== 'object')
        throw new TsTypeError(`only intersections of object types are supported: '${text(node)}'`, node);
      fields.add(t.fields);
    }
    return { kind: 'object', name: text(node), fields: fields.fields };
  }

  /** Members of a type literal or interface: properties, or one string index signature (a map). */
  private typeLiteral(owner: ts.Node, members: readonly ts.TypeElement[], name: string, depth: number): TypeIR {
    const fields: FieldIR[] = [];
    let index: TypeIR | null = null;
    for (const m of members) {
      if (ts.isPropertySignature(m) && m.type) {
        const key = propertyName(m.name);
        if (key === null) throw new TsTypeError(`computed property names are not supported: '${text(m)}'`, m);
        const type = this.resolve(m.type, depth + 1);
        const optional = !!m.questionToken || containsUndefined(type);
        fields.push({
          name: key,
          type: dropUndefined(type),
          description: jsDocText(m, this.maxDocstringBytes) ?? '',
          required: !optional,
          defaultIsNull: optional,
        });
      } else if (
        ts.isIndexSignatureDeclaration(m) &&
        m.parameters.length === 1 &&
        m.parameters[0]!.type?.kind === ts.SyntaxKind.StringKeyword
      ) {
        index = this.resolve(m.type, depth + 1);
      } else {
        throw new TsTypeError(
          `only properties with a type and string index signatures are supported in object types: '${text(m)}'`,
          m,
        );
      }
    }
    if (index) {
      if (fields.length > 0)
        throw new TsTypeError(
          `an object type with both properties and an index signature is not supported: '${text(owner)}'`,
          owner,
        );
      return { kind: 'map', values: index.kind === 'any' ? null : index };
    }
    const description = ts.isInterfaceDeclaration(owner) ? (jsDocText(owner, this.maxDocstringBytes) ?? '') : '';
    return { kind: 'object', name: name || text(owner), fields, ...(description ? { description } : {}) };
  }

  private reference(node: ts.TypeReferenceNode, depth: number): TypeIR {
    const args = node.typeArguments ?? [];
    if (ts.isQualifiedName(node.typeName)) return this.enumMember(node, node.typeName);
    const name = node.typeName.text;
    const arg = (i: number): TypeIR => this.resolve(args[i]!, depth + 1);
    const local = this.scope.aliases.has(name) || this.scope.interfaces.has(name) || this.scope.enums.has(name);
    if (!local) {
      if ((name === 'Array' || name === 'ReadonlyArray') && args.length === 1) return { kind: 'array', items: arg(0) };
      if ((name === 'Set' || name === 'ReadonlySet') && args.length === 1)
        return { kind: 'array', items: arg(0), uniqueItems: true };
      if (name === 'Record' && args.length === 2) return this.record(node, depth);
      if (name === 'Readonly' && args.length === 1) return arg(0);
      if ((name === 'Partial' || name === 'Required') && args.length === 1) {
        const inner = arg(0);
        if (inner.kind !== 'object')
          throw new TsTypeError(`${name}<...> is supported on object types only: '${text(node)}'`, node);
        const required = name === 'Required';
        this.budget.charge(inner.fields.length * LEAST_FIELD_BYTES);
        return { ...inner, fields: inner.fields.map((f) => ({ ...f, required, defaultIsNull: !required })) };
      }
      const hint = name === 'Date' ? ' (JSON has no dates: use string)' : '';
      throw new TsTypeError(`type '${text(node)}' is not supported or not declared in the source${hint}`, node);
    }
    if (args.length > 0) throw new TsTypeError(`generic type '${text(node)}' is not supported`, node);
    return this.named(name, node, depth);
  }

  /** A type declared in the source, by name; `node` is where it is used (for errors). */
  private named(name: string, node: ts.Node, depth: number): TypeIR {
    const cached = this.declaredTypes.get(name);
    if (cached) return cached;
    if (this.resolving.includes(name)) throw new TsTypeError(`recursive type '${name}' cannot be inlined`, node);
    this.resolving.push(name);
    try {
      const resolved = this.declared(name, node, depth);
      this.declaredTypes.set(name, resolved);
      return resolved;
    } finally {
      this.resolving.pop();
    }
  }

  private declared(name: string, node: ts.Node, depth: number): TypeIR {
    const alias = this.scope.aliases.get(name);
    if (alias) {
      if (alias.typeParameters?.length) throw new TsTypeError(`generic type alias '${name}' is not supported`, node);
      return this.resolve(alias.type, depth + 1);
    }
    const enums = this.scope.enums.get(name);
    if (enums) return { kind: 'enum', values: valuesOf(enumOf(this.scope, name, enums)) };
    return this.interface(name, depth);
  }

  private interface(name: string, depth: number): TypeIR {
    const decls = this.scope.interfaces.get(name)!;
    const fields = new FieldList(this.budget);
    let description = '';
    for (const decl of decls) {
      if (decl.typeParameters?.length) throw new TsTypeError(`generic interface '${name}' is not supported`, decl);
      for (const clause of decl.heritageClauses ?? []) {
        for (const base of clause.types) {
          if (!ts.isIdentifier(base.expression) || base.typeArguments?.length)
            throw new TsTypeError(`interface '${name}' extends '${text(base)}', which is not supported`, base);
          if (!this.scope.interfaces.has(base.expression.text) && !this.scope.aliases.has(base.expression.text)) {
            throw new TsTypeError(
              `interface '${name}' extends '${text(base)}', which is not declared in the source`,
              base,
            );
          }
          const inherited = this.named(base.expression.text, base, depth + 1);
          if (inherited.kind !== 'object')
            throw new TsTypeError(`interface '${name}' extends '${text(base)}', which is not an object type`, base);
          fields.add(inherited.fields);
        }
      }
      const own = this.typeLiteral(decl, decl.members, name, depth);
      if (own.kind !== 'object')
        throw new TsTypeError(
          `interface '${name}' with an index signature is not supported; use Record<string, V>`,
          decl,
        );
      fields.add(own.fields);
      description = own.description ?? description;
    }
    return { kind: 'object', name, fields: fields.fields, ...(description ? { description } : {}) };
  }

  private record(node: ts.TypeReferenceNode, depth: number): TypeIR {
    const [keyNode, valueNode] = node.typeArguments!;
    const key = this.resolve(keyNode!, depth + 1);
    const values = this.resolve(valueNode!, depth + 1);
    if (key.kind === 'primitive' && key.type === 'string')
      return { kind: 'map', values: values.kind === 'any' ? null : values };
    if (key.kind === 'enum' && key.values.every((v) => typeof v === 'string')) {
      this.budget.charge(key.values.length * LEAST_FIELD_BYTES);
      const fields = key.values.map((v) => ({
        name: v as string,
        type: values,
        description: '',
        required: true,
        defaultIsNull: false,
      }));
      return { kind: 'object', name: text(node), fields };
    }
    throw new TsTypeError(`Record keys must be string or a union of string literals: '${text(node)}'`, node);
  }

  private enumMember(node: ts.TypeReferenceNode, q: ts.QualifiedName): TypeIR {
    const name = ts.isIdentifier(q.left) ? q.left.text : undefined;
    const enums = name === undefined ? undefined : this.scope.enums.get(name);
    const members = enums && enumOf(this.scope, name!, enums);
    const at = members?.index.get(q.right.text);
    if (!members || at === undefined)
      throw new TsTypeError(`type '${text(node)}' is not supported or not declared in the source`, node);
    return { kind: 'enum', values: [valuesOf(members)[at]!] };
  }
}

/**
 * The JSON value of a parameter's default when it is a literal: number (also negative), string
 * (also a template without substitutions), boolean, null, array and object literals of literals,
 * and members of an enum declared in the source (→ their value). Undefined for anything else
 * (calls, identifiers, `undefined`, expressions), which then gets no `default`. Parentheses, `as`
 * and `satisfies` are looked through: they do not change the value.
 */
export function staticDefault(node: ts.Expression, scope: TsScope, depth = 0): JsonValue | undefined {
  if (depth > MAX_DEPTH) return undefined;
  let e = node;
  while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e)) e = e.expression;
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return e.text;
  if (ts.isNumericLiteral(e)) {
    const value = Number(e.text);
    return Number.isFinite(value) ? value : undefined;
  }
  if (e.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (e.kind === ts.SyntaxKind.FalseKeyword) return false;
  if (e.kind === ts.SyntaxKind.NullKeyword) return null;
  if (
    ts.isPrefixUnaryExpression(e) &&
    (e.operator === ts.SyntaxKind.MinusToken || e.operator === ts.SyntaxKind.PlusToken)
  ) {
    const value = staticDefault(e.operand, scope, depth + 1);
    // `+` and `-` only keep their literal meaning on numbers (`-'1'` is a coercion).
    if (typeof value !== 'number') return undefined;
    return e.operator === ts.SyntaxKind.MinusToken ? -value : value;
  }
  if (ts.isArrayLiteralExpression(e)) {
    const out: JsonValue[] = [];
    for (const el of e.elements) {
      if (ts.isSpreadElement(el) || ts.isOmittedExpression(el)) return undefined;
      const value = staticDefault(el, scope, depth + 1);
      if (value === undefined) return undefined;
      out.push(value);
    }
    return out;
  }
  if (ts.isObjectLiteralExpression(e)) {
    const out: { [key: string]: JsonValue } = {};
    for (const p of e.properties) {
      if (!ts.isPropertyAssignment(p)) return undefined; // shorthand, spread, methods, accessors
      const key = ts.isComputedPropertyName(p.name) ? null : propertyName(p.name);
      const value = key === null ? undefined : staticDefault(p.initializer, scope, depth + 1);
      // `__proto__: v` sets the prototype in JavaScript, not a property.
      if (key === null || key === '__proto__' || value === undefined) return undefined;
      // A repeated key keeps its first position and its last value, as in JavaScript.
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  if ((ts.isPropertyAccessExpression(e) || ts.isElementAccessExpression(e)) && ts.isIdentifier(e.expression)) {
    const member = ts.isPropertyAccessExpression(e)
      ? e.name.text
      : ts.isStringLiteral(e.argumentExpression) || ts.isNoSubstitutionTemplateLiteral(e.argumentExpression)
        ? e.argumentExpression.text
        : null;
    const decls = scope.enums.get(e.expression.text);
    if (member === null || !decls) return undefined;
    const members = enumOf(scope, e.expression.text, decls);
    const at = members.index.get(member);
    return at === undefined || members.values instanceof TsTypeError ? undefined : members.values[at];
  }
  return undefined;
}

/** An enum's members, read once per scope. */
function enumOf(scope: TsScope, name: string, decls: ts.EnumDeclaration[]): EnumMembers {
  let entry = scope.enumCache.get(name);
  if (!entry) {
    const index = new Map<string, number>();
    decls
      .flatMap((d) => [...d.members])
      .forEach((m, i) => {
        const key = propertyName(m.name);
        if (key !== null && !index.has(key)) index.set(key, i);
      });
    let values: LiteralValue[] | TsTypeError;
    try {
      values = enumValues(decls);
    } catch (e) {
      if (!(e instanceof TsTypeError)) throw e;
      values = e;
    }
    entry = { index, values };
    scope.enumCache.set(name, entry);
  }
  return entry;
}

/** Values of an enum's members: string and numeric initializers, auto-incremented numbers. */
function enumValues(decls: ts.EnumDeclaration[]): LiteralValue[] {
  const values: LiteralValue[] = [];
  let next: number | null = 0;
  for (const m of decls.flatMap((d) => [...d.members])) {
    const init = m.initializer;
    let value: LiteralValue;
    if (!init) {
      if (next === null) throw new TsTypeError(`enum member '${text(m)}' needs an initializer`, m);
      value = next;
    } else if (ts.isStringLiteral(init) || ts.isNoSubstitutionTemplateLiteral(init)) value = init.text;
    else if (ts.isNumericLiteral(init)) value = Number(init.text);
    else if (
      ts.isPrefixUnaryExpression(init) &&
      init.operator === ts.SyntaxKind.MinusToken &&
      ts.isNumericLiteral(init.operand)
    )
      value = -Number(init.operand.text);
    else throw new TsTypeError(`enum member '${text(m)}' has a computed value, which is not supported`, m);
    next = typeof value === 'number' ? value + 1 : null;
    values.push(value);
  }
  if (values.length === 0) throw new TsTypeError('an empty enum has no values', decls[0]!);
  return values;
}

function unsupported(node: ts.Node): TsTypeError {
  return new TsTypeError(`type '${text(node)}' is not supported`, node);
}

// Unions are shared (a declared type is resolved once), so a union can be reached many times
// through others: both walks below remember what they have seen, or `type U1 = U0 | U0 | U0`,
// `type U2 = U1 | U1 | U1`, ... would make them exponential. IR nodes do not change once made.
const undefinedWithin = new WeakMap<TypeIR, boolean>();

export function containsUndefined(t: TypeIR): boolean {
  if (isUndefined(t)) return true;
  if (t.kind !== 'union') return false;
  if (!t.members.some((m) => m.kind === 'union')) return t.members.some(isUndefined); // flat: nothing to remember
  let found = undefinedWithin.get(t);
  if (found === undefined) {
    found = t.members.some(containsUndefined);
    undefinedWithin.set(t, found);
  }
  return found;
}

export function dropUndefined(t: TypeIR, done = new Map<TypeIR, TypeIR>()): TypeIR {
  if (isUndefined(t)) return { kind: 'any' };
  if (t.kind !== 'union' || !containsUndefined(t)) return t;
  let out = done.get(t);
  if (!out) {
    const rest = t.members.filter((m) => !isUndefined(m)).map((m) => dropUndefined(m, done));
    out = rest.length === 1 ? rest[0]! : { kind: 'union', members: rest };
    done.set(t, out);
  }
  return out;
}
