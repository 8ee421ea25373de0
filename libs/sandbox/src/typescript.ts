import { createHash } from 'node:crypto';
import type * as TS from 'typescript';

export interface PreparedScript {
  /** CommonJS JavaScript, types stripped (never evaluated by the runner). */
  code: string;
  /**
   * Parameter names of the tool function in declaration order (`null` for a destructured
   * parameter: it receives the whole args object); `null` when the function was not found
   * statically (the harness then passes the args object as the only argument).
   */
  params: Array<string | null> | null;
}

const CACHE_MAX = 256;
const cache = new Map<string, PreparedScript>();

type FunctionLike = TS.FunctionDeclaration | TS.ArrowFunction | TS.FunctionExpression;

let compiler: typeof TS | undefined;
/**
 * The TypeScript compiler, loaded at the first TypeScript tool rather than with this lib: it is
 * tens of MiB resident, which a process that never prepares a script (mcp-sync imports this lib
 * for its stdio sandbox) or has not yet run a TypeScript tool does not pay.
 */
const tsc = (): typeof TS => (compiler ??= require('typescript') as typeof TS);

/**
 * Strips the types of a TypeScript/JavaScript tool with the TypeScript compiler's
 * `transpileModule` (syntax only: no type checker, no code run — enums, namespaces and parameter
 * properties work, unlike Node's type stripping) to CommonJS, and reads the parameter names of
 * `functionName` (else the default export, else the last exported function). Cached by source.
 */
export function prepareScript(source: string, functionName: string): PreparedScript {
  const key = createHash('sha256').update(functionName).update('\0').update(source).digest('hex');
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const ts = tsc();
  const out = ts.transpileModule(source, {
    fileName: 'tool.ts',
    reportDiagnostics: false,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
      sourceMap: false,
      removeComments: false,
      isolatedModules: true,
      verbatimModuleSyntax: false,
    },
  });
  const prepared: PreparedScript = { code: out.outputText, params: paramsOf(source, functionName) };
  cache.set(key, prepared);
  if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value!);
  return prepared;
}

function paramsOf(source: string, name: string): Array<string | null> | null {
  const ts = tsc();
  let sf: TS.SourceFile;
  try {
    sf = ts.createSourceFile('tool.ts', source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  } catch {
    return null;
  }
  let named: FunctionLike | undefined;
  let byDefault: FunctionLike | undefined;
  let lastExported: FunctionLike | undefined;
  const exported = (n: TS.Node): boolean =>
    ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  const isDefault = (n: TS.Node): boolean =>
    ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
  for (const stmt of sf.statements) {
    if (ts.isFunctionDeclaration(stmt) && stmt.body) {
      if (stmt.name?.text === name) named = stmt;
      if (isDefault(stmt)) byDefault = stmt;
      if (exported(stmt)) lastExported = stmt;
    } else if (ts.isVariableStatement(stmt)) {
      for (const d of stmt.declarationList.declarations) {
        const fn = unwrap(d.initializer);
        if (!fn || !ts.isIdentifier(d.name)) continue;
        if (d.name.text === name) named = fn;
        if (exported(stmt)) lastExported = fn;
      }
    } else if (ts.isExportAssignment(stmt)) {
      const fn = unwrap(stmt.expression);
      if (fn) byDefault = fn;
    }
  }
  const fn = named ?? byDefault ?? lastExported;
  if (!fn) return null;
  return fn.parameters
    .filter((p) => !(ts.isIdentifier(p.name) && p.name.text === 'this'))
    .filter((p) => !p.dotDotDotToken)
    .map((p) => (ts.isIdentifier(p.name) ? p.name.text : null));
}

function unwrap(e: TS.Expression | undefined): FunctionLike | undefined {
  const ts = tsc();
  let x = e;
  while (x && (ts.isParenthesizedExpression(x) || ts.isSatisfiesExpression(x) || ts.isAsExpression(x)))
    x = x.expression;
  return x && (ts.isArrowFunction(x) || ts.isFunctionExpression(x)) ? x : undefined;
}
