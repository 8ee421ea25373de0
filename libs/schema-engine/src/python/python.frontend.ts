/**
 * Python front-end: finds the tool function in the source with tree-sitter (never executing it)
 * and describes it as a FunctionIR. Follows Letta's generate_schema; see DIFFERENCES.md.
 */
import type { Node, Parser } from 'web-tree-sitter';
import type { Budget } from '../budget';
import type { FunctionIR, ParameterIR } from '../ir';
import { checkDocstringSize, DEFAULT_MAX_DOCSTRING_BYTES } from '../limits';
import { SchemaGenerationError } from '../schema-generation.error';
import { describe, parseDocstring } from './python.docstring';
import { decodeStringLiteral } from './python.strings';
import {
  AnnotationError,
  AnnotationResolver,
  annotatedDescription,
  collectScope,
  lineOf,
  type ParsedTypeExpression,
} from './python.types';
import type { DescribeOptions } from '../schema-engine.types';

/** Parameters Letta injects itself; they never appear in the schema. */
const INJECTED = new Set(['self', 'agent_state']);

interface RawParameter {
  name: string;
  node: Node;
  annotation: Node | null;
  defaultValue: Node | null;
}

export class PythonFrontend {
  constructor(private readonly parser: Parser) {}

  describeFunction(
    source: string,
    name: string | undefined,
    budget: Budget,
    options: DescribeOptions = {},
  ): FunctionIR {
    const nul = source.indexOf('\0');
    if (nul !== -1) {
      const line = source.slice(0, nul).split('\n').length;
      throw new SchemaGenerationError(
        'SYNTAX_ERROR',
        `Python syntax error at line ${line}: source contains a NUL byte`,
        { line },
      );
    }
    const tree = this.parser.parse(source, null, { progressCallback: () => budget.expired() });
    if (!tree) {
      this.parser.reset();
      throw budget.error();
    }
    try {
      const root = tree.rootNode;
      if (root.hasError) throw syntaxError(root);
      budget.check();
      const fn = selectFunction(root, name);
      return this.describe(fn, root, budget, options);
    } finally {
      tree.delete();
    }
  }

  private describe(fn: Node, root: Node, budget: Budget, options: DescribeOptions): FunctionIR {
    const maxDocstringBytes = options.maxDocstringBytes ?? DEFAULT_MAX_DOCSTRING_BYTES;
    const fnName = fn.childForFieldName('name')!.text;
    const fnLine = lineOf(fn);
    const rawDoc = docstringOf(fn);
    if (rawDoc === null || rawDoc.trim() === '') {
      throw new SchemaGenerationError(
        'MISSING_DOCSTRING',
        `Function '${fnName}' (line ${fnLine}) has no docstring: add a Google-style docstring with a summary and an Args: section`,
        { functionName: fnName, line: fnLine },
      );
    }
    checkDocstringSize(rawDoc, maxDocstringBytes, `function '${fnName}'`, { functionName: fnName, line: fnLine });
    const doc = parseDocstring(rawDoc);
    if (options.headerOnly) return { name: fnName, description: describe(doc), parameters: [] };
    const resolver = new AnnotationResolver(
      collectScope(root),
      (src) => this.parseTypeExpression(src),
      budget,
      maxDocstringBytes,
    );

    const parameters: ParameterIR[] = [];
    for (const param of parametersOf(fn)) {
      if (INJECTED.has(param.name)) continue;
      const where = `Parameter '${param.name}' of function '${fnName}' (line ${lineOf(param.node)})`;
      const details = {
        functionName: fnName,
        parameter: param.name,
        line: lineOf(param.node),
        column: param.node.startPosition.column + 1,
      };
      if (!param.annotation) {
        throw new SchemaGenerationError('MISSING_ANNOTATION', `${where} has no type annotation`, details);
      }
      let type;
      try {
        type = resolver.resolve(param.annotation);
      } catch (e) {
        if (!(e instanceof AnnotationError)) throw e;
        throw new SchemaGenerationError(e.reason, `${where}: ${e.message}`, {
          ...details,
          line: e.line ?? details.line,
        });
      }
      const description = doc.params.get(param.name) || annotatedDescription(type);
      if (!description) {
        throw new SchemaGenerationError(
          'UNDOCUMENTED_PARAMETER',
          `${where} is not documented: add '${param.name}: <description>' to the Args: section of the docstring`,
          details,
        );
      }
      parameters.push({
        name: param.name,
        type,
        description,
        required: !param.defaultValue,
        defaultIsNull: param.defaultValue?.type === 'none',
        ...resolver.defaultKey(param.defaultValue),
      });
    }
    return { name: fnName, description: describe(doc), parameters };
  }

  /** Parses the text of a string annotation (`"Model"`, `"list[int]"`) as a type expression. */
  private parseTypeExpression(text: string): ParsedTypeExpression {
    const tree = this.parser.parse(`_: ${text}\n`);
    if (!tree) return { node: null, dispose: () => undefined };
    const stmt = tree.rootNode.namedChildren[0];
    const assign = stmt?.type === 'expression_statement' ? stmt.namedChildren[0] : null;
    const node =
      !tree.rootNode.hasError &&
      tree.rootNode.namedChildCount === 1 &&
      assign?.type === 'assignment' &&
      !assign.childForFieldName('right')
        ? assign.childForFieldName('type')
        : null;
    return { node, dispose: () => tree.delete() };
  }
}

function topLevelFunctions(root: Node): Node[] {
  const defs: Node[] = [];
  for (const stmt of root.namedChildren) {
    const def = stmt?.type === 'decorated_definition' ? stmt.childForFieldName('definition') : stmt;
    if (def?.type === 'function_definition') defs.push(def);
  }
  return defs;
}

function selectFunction(root: Node, name: string | undefined): Node {
  const defs = topLevelFunctions(root);
  if (defs.length === 0) {
    throw new SchemaGenerationError('NO_FUNCTION', 'No top-level function (def or async def) found in the source');
  }
  if (name === undefined) return defs[defs.length - 1];
  const matches = defs.filter((d) => d.childForFieldName('name')?.text === name);
  if (matches.length === 0) {
    const names = [...new Set(defs.map((d) => d.childForFieldName('name')?.text ?? ''))];
    const listed = names.length > 10 ? `${names.slice(0, 10).join(', ')}, ...` : names.join(', ');
    throw new SchemaGenerationError(
      'FUNCTION_NOT_FOUND',
      `No top-level function named '${name}' in the source (found: ${listed})`,
      {
        functionName: name,
      },
    );
  }
  return matches[matches.length - 1]; // a later def rebinds the name, as in Python
}

/** The value of the function's docstring, or null (f-strings and bytes are not docstrings). */
function docstringOf(fn: Node): string | null {
  const first = fn.childForFieldName('body')?.namedChildren.find((n) => n?.type !== 'comment');
  if (first?.type !== 'expression_statement' || first.namedChildCount !== 1) return null;
  const expr = first.namedChildren[0]!;
  if (expr.type === 'string') return decodeStringLiteral(expr.text);
  if (expr.type !== 'concatenated_string') return null;
  let out = '';
  for (const part of expr.namedChildren) {
    const value = part ? decodeStringLiteral(part.text) : null;
    if (value === null) return null;
    out += value;
  }
  return out;
}

function parametersOf(fn: Node): RawParameter[] {
  const out: RawParameter[] = [];
  for (const p of fn.childForFieldName('parameters')?.namedChildren ?? []) {
    if (!p) continue;
    switch (p.type) {
      case 'identifier':
        out.push({ name: p.text, node: p, annotation: null, defaultValue: null });
        break;
      case 'typed_parameter': {
        const id = p.namedChildren[0];
        // `*args: T` / `**kwargs: T` cannot be passed by name: they are not schema parameters.
        if (id?.type === 'identifier')
          out.push({ name: id.text, node: p, annotation: p.childForFieldName('type'), defaultValue: null });
        break;
      }
      case 'default_parameter':
      case 'typed_default_parameter': {
        const id = p.childForFieldName('name');
        if (id?.type === 'identifier') {
          out.push({
            name: id.text,
            node: p,
            annotation: p.childForFieldName('type'),
            defaultValue: p.childForFieldName('value'),
          });
        }
        break;
      }
      default:
        break; // *args, **kwargs, the `*` and `/` separators, comments
    }
  }
  return out;
}

/** The first syntax error in document order, with its 1-based line and column. */
function syntaxError(root: Node): SchemaGenerationError {
  let node: Node = root;
  for (;;) {
    const next: Node | undefined = node.children.find(
      (c): c is Node => !!c && (c.isError || c.isMissing || c.hasError),
    );
    if (!next) break;
    node = next;
    if (next.isError || next.isMissing) break;
  }
  const line = node.startPosition.row + 1;
  const column = node.startPosition.column + 1;
  let what: string;
  if (node.isMissing) what = `missing '${node.type}'`;
  else {
    const firstLine = node.text.split('\n')[0].trim();
    what = firstLine
      ? `invalid syntax near '${firstLine.length > 40 ? `${firstLine.slice(0, 37)}...` : firstLine}'`
      : 'invalid syntax';
  }
  return new SchemaGenerationError('SYNTAX_ERROR', `Python syntax error at line ${line}, column ${column}: ${what}`, {
    line,
    column,
  });
}
