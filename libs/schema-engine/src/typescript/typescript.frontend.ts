/**
 * TypeScript front-end: finds the tool function with the TypeScript compiler's parser (no type
 * checker, nothing compiled or executed) and describes it as a FunctionIR from its parameter
 * types and JSDoc (`summary`, long description, `@param name description`).
 *
 * Which function: the one named by `name` (exported or not); otherwise the last exported
 * top-level function (`export function f`, `export default function f`, `export const f = (...) =>`,
 * `export { f }`); when nothing is exported, the last top-level function.
 */
import * as ts from 'typescript';
import type { Budget } from '../budget';
import type { FunctionIR, ParameterIR, TypeIR } from '../ir';
import { DEFAULT_MAX_DOCSTRING_BYTES } from '../limits';
import { SchemaGenerationError } from '../schema-generation.error';
import {
  collectScope,
  containsUndefined,
  dropUndefined,
  jsDocText,
  staticDefault,
  TsTypeError,
  TsTypeResolver,
} from './typescript.types';
import type { DescribeOptions } from '../schema-engine.types';

/** Parameters the runtime injects itself; they never appear in the schema. */
const INJECTED = new Set(['agent_state', 'agentState']);

type FunctionLike = ts.FunctionDeclaration | ts.ArrowFunction | ts.FunctionExpression;

interface Candidate {
  name: string;
  fn: FunctionLike;
  exported: boolean;
}

export class TypeScriptFrontend {
  describeFunction(
    source: string,
    name: string | undefined,
    budget: Budget,
    options: DescribeOptions = {},
  ): FunctionIR {
    const sf = parse(source);
    budget.check();
    const fn = selectFunction(sf, name);
    return describe(sf, fn, budget, options);
  }
}

function parse(source: string): ts.SourceFile {
  let sf: ts.SourceFile;
  try {
    sf = ts.createSourceFile('tool.ts', source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  } catch (e) {
    if (e instanceof RangeError)
      throw new SchemaGenerationError('SYNTAX_ERROR', 'TypeScript source is nested too deeply to parse');
    throw e;
  }
  // parseDiagnostics is internal API but stable for years; a Program would load lib files for nothing.
  const diagnostics = (sf as unknown as { parseDiagnostics?: readonly ts.Diagnostic[] }).parseDiagnostics ?? [];
  const first = diagnostics[0];
  if (first) {
    const { line, character } = sf.getLineAndCharacterOfPosition(first.start ?? 0);
    const message = ts.flattenDiagnosticMessageText(first.messageText, ' ');
    throw new SchemaGenerationError(
      'SYNTAX_ERROR',
      `TypeScript syntax error at line ${line + 1}, column ${character + 1}: ${message}`,
      {
        line: line + 1,
        column: character + 1,
      },
    );
  }
  return sf;
}

const hasModifier = (node: ts.Node, kind: ts.SyntaxKind): boolean =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === kind);

function unwrapInitializer(e: ts.Expression | undefined): FunctionLike | null {
  let x = e;
  while (x && (ts.isParenthesizedExpression(x) || ts.isSatisfiesExpression(x) || ts.isAsExpression(x)))
    x = x.expression;
  return x && (ts.isArrowFunction(x) || ts.isFunctionExpression(x)) ? x : null;
}

function candidates(sf: ts.SourceFile): Candidate[] {
  const out: Candidate[] = [];
  const exportedNames = new Set<string>();
  for (const stmt of sf.statements) {
    if (ts.isFunctionDeclaration(stmt) && stmt.name && stmt.body) {
      out.push({ name: stmt.name.text, fn: stmt, exported: hasModifier(stmt, ts.SyntaxKind.ExportKeyword) });
    } else if (ts.isVariableStatement(stmt)) {
      for (const decl of stmt.declarationList.declarations) {
        const fn = unwrapInitializer(decl.initializer);
        if (fn && ts.isIdentifier(decl.name))
          out.push({ name: decl.name.text, fn, exported: hasModifier(stmt, ts.SyntaxKind.ExportKeyword) });
      }
    } else if (
      ts.isExportDeclaration(stmt) &&
      !stmt.moduleSpecifier &&
      stmt.exportClause &&
      ts.isNamedExports(stmt.exportClause)
    ) {
      for (const el of stmt.exportClause.elements) exportedNames.add((el.propertyName ?? el.name).text);
    } else if (ts.isExportAssignment(stmt) && ts.isIdentifier(stmt.expression)) {
      exportedNames.add(stmt.expression.text);
    }
  }
  return out.map((c) => (exportedNames.has(c.name) ? { ...c, exported: true } : c));
}

function selectFunction(sf: ts.SourceFile, name: string | undefined): Candidate {
  const all = candidates(sf);
  if (all.length === 0) {
    throw new SchemaGenerationError(
      'NO_FUNCTION',
      'No top-level function (function declaration or const arrow function) found in the source',
    );
  }
  if (name === undefined) {
    const exported = all.filter((c) => c.exported);
    return (exported.length > 0 ? exported : all)[(exported.length > 0 ? exported : all).length - 1]!;
  }
  const matches = all.filter((c) => c.name === name);
  if (matches.length === 0) {
    const names = [...new Set(all.map((c) => c.name))];
    const listed = names.length > 10 ? `${names.slice(0, 10).join(', ')}, ...` : names.join(', ');
    throw new SchemaGenerationError(
      'FUNCTION_NOT_FOUND',
      `No top-level function named '${name}' in the source (found: ${listed})`,
      { functionName: name },
    );
  }
  return matches[matches.length - 1]!;
}

function position(sf: ts.SourceFile, node: ts.Node): { line: number; column: number } {
  const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
  return { line: line + 1, column: character + 1 };
}

function describe(sf: ts.SourceFile, c: Candidate, budget: Budget, options: DescribeOptions): FunctionIR {
  const fnLine = position(sf, c.fn).line;
  const maxDocstringBytes = options.maxDocstringBytes ?? DEFAULT_MAX_DOCSTRING_BYTES;
  const doc = jsDocText(c.fn, maxDocstringBytes);
  if (doc === null) {
    throw new SchemaGenerationError(
      'MISSING_DOCSTRING',
      `Function '${c.name}' (line ${fnLine}) has no JSDoc comment: add /** a summary, then @param name description for each parameter */`,
      { functionName: c.name, line: fnLine },
    );
  }
  const description = doc || 'No description available';
  if (options.headerOnly) return { name: c.name, description, parameters: [] };

  const scope = collectScope(sf);
  const resolver = new TsTypeResolver(scope, budget, maxDocstringBytes);
  const parameters: ParameterIR[] = [];
  for (const param of c.fn.parameters) {
    if (param.dotDotDotToken) continue; // rest parameters cannot be passed by name, like *args
    const at = position(sf, param);
    if (!ts.isIdentifier(param.name)) {
      throw new SchemaGenerationError(
        'UNSUPPORTED_ANNOTATION',
        `A destructured parameter of function '${c.name}' (line ${at.line}) is not supported: give the parameter a name and a type`,
        { functionName: c.name, ...at },
      );
    }
    const pname = param.name.text;
    if (pname === 'this' || INJECTED.has(pname)) continue;
    const where = `Parameter '${pname}' of function '${c.name}' (line ${at.line})`;
    const details = { functionName: c.name, parameter: pname, ...at };
    let type: TypeIR;
    try {
      type = param.type ? resolver.resolve(param.type) : inferFromDefault(param.initializer, where, details);
    } catch (e) {
      if (!(e instanceof TsTypeError)) throw e;
      throw new SchemaGenerationError('UNSUPPORTED_ANNOTATION', `${where}: ${e.message}`, {
        ...details,
        ...position(sf, e.node),
      });
    }
    const paramDoc = paramDescription(param);
    if (!paramDoc) {
      throw new SchemaGenerationError(
        'UNDOCUMENTED_PARAMETER',
        `${where} is not documented: add '@param ${pname} <description>' to the function's JSDoc`,
        details,
      );
    }
    const optional = !!param.questionToken || !!param.initializer || containsUndefined(type);
    const init = param.initializer;
    const defaultIsNull = !init
      ? optional
      : init.kind === ts.SyntaxKind.NullKeyword || (ts.isIdentifier(init) && init.text === 'undefined');
    const value = init ? staticDefault(init, scope) : undefined;
    parameters.push({
      name: pname,
      type: dropUndefined(type),
      description: paramDoc,
      required: !optional,
      defaultIsNull,
      ...(value !== undefined ? { default: value } : {}),
    });
  }
  return { name: c.name, description, parameters };
}

/** `x = 5`, `x = 'a'`, `x = true` without an annotation: TypeScript infers the widened type. */
function inferFromDefault(
  init: ts.Expression | undefined,
  where: string,
  details: { line: number; column: number },
): TypeIR {
  if (init) {
    if (ts.isStringLiteral(init) || ts.isNoSubstitutionTemplateLiteral(init))
      return { kind: 'primitive', type: 'string' };
    if (ts.isNumericLiteral(init) || (ts.isPrefixUnaryExpression(init) && ts.isNumericLiteral(init.operand)))
      return { kind: 'primitive', type: 'number' };
    if (init.kind === ts.SyntaxKind.TrueKeyword || init.kind === ts.SyntaxKind.FalseKeyword)
      return { kind: 'primitive', type: 'boolean' };
  }
  throw new SchemaGenerationError('MISSING_ANNOTATION', `${where} has no type annotation`, details);
}

/** The `@param` text for a parameter, without the conventional leading '-'. */
function paramDescription(param: ts.ParameterDeclaration): string {
  for (const tag of ts.getJSDocParameterTags(param)) {
    const comment = (ts.getTextOfJSDocComment(tag.comment) ?? '').replace(/^\s*-\s*/, '').trim();
    if (comment) return comment;
  }
  return '';
}
