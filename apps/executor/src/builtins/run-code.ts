import { ErrorCode, type Provider, type Tool, ToolplaneError } from '@toolplane/contracts';
import type * as TS from 'typescript';

/** The TypeScript compiler, loaded on the first ts/js-module run_code only: never on the executor's start-up or a python call. */
let compiler: typeof TS | undefined;
const tsc = (): typeof TS => (compiler ??= require('typescript') as typeof TS);

/**
 * run_code (BUILTINS.md) on the provider runners: the code becomes the argument of a generated
 * tool (a small, fixed harness per runtime) that runs it in the runner's sandbox like any custom
 * tool — same provider choice, limits, env and secrets — and answers the reference's JSON text
 * `{"results": [...], "logs": {"stdout": [...], "stderr": [...]}, "error"?: {name, value, traceback}}`.
 *
 * results: the value of the last expression, as Jupyter (the reference's E2B code interpreter)
 * shows it — Python's repr(), Node's util.inspect — and nothing when it is None/undefined;
 * logs: what the code wrote, split into lines (ends kept), also passed through to the call's own
 * stdout/stderr; error: the code's uncaught exception (the call itself then still succeeds, as in
 * the reference). A timeout or an output flood ends the call as for any tool.
 */
export type RunCodeLanguage = 'python' | 'js' | 'ts' | 'r' | 'java';

/** What each provider runs (every runner runs python and, on Node, JavaScript/TypeScript). */
const LANGUAGES_OF: Record<Provider, readonly RunCodeLanguage[]> = {
  local: ['python', 'js', 'ts'],
  e2b: ['python', 'js', 'ts'],
  modal: ['python', 'js', 'ts'],
};

export function languagesOf(provider: Provider): readonly RunCodeLanguage[] {
  return LANGUAGES_OF[provider] ?? [];
}

/** LANGUAGE_UNAVAILABLE unless the provider runs the language. */
export function assertLanguage(language: RunCodeLanguage, provider: Provider): void {
  const has = languagesOf(provider);
  if (!has.includes(language)) {
    throw new ToolplaneError(
      ErrorCode.LANGUAGE_UNAVAILABLE,
      `run_code: the provider ${provider} does not run ${language} (it runs ${has.join(', ')})`,
      {
        language,
        provider,
        languages: [...has],
      },
    );
  }
}

/** The generated tool and its args that run `code` in `language`. */
export function runCodeCall(
  tool: Tool,
  args: Record<string, unknown>,
): { tool: Tool; args: Record<string, unknown>; language: RunCodeLanguage } {
  const language = args.language as RunCodeLanguage;
  const code = String(args.code ?? '');
  const python = language === 'python';
  // r and java have no harness: the language check (per provider) refuses them after this, so their code is not transpiled here.
  const source = python ? PYTHON_HARNESS : NODE_HARNESS;
  return {
    language,
    tool: {
      ...tool,
      tool_type: 'custom',
      source_type: python ? 'python' : 'javascript',
      source_code: source,
      json_schema: {
        name: 'run_code',
        parameters: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] },
      },
      pip_requirements: null,
      npm_requirements: null,
    },
    args: {
      code:
        language === 'ts' || (language === 'js' && MODULE_SYNTAX.test(code)) ? toScript(code, language === 'ts') : code,
    },
  };
}

const MODULE_SYNTAX = /^\s*(import|export)\b/m;

/**
 * TypeScript (or JavaScript with import/export) → a CommonJS script, types stripped by the
 * TypeScript compiler's transpileModule: syntax only — no type checker, nothing evaluated here.
 * The leading "use strict" is dropped so it never stands as the script's completion value.
 */
function toScript(code: string, typescript: boolean): string {
  const ts = tsc();
  const out = ts.transpileModule(code, {
    fileName: typescript ? 'code.ts' : 'code.js',
    reportDiagnostics: false,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
      isolatedModules: true,
      sourceMap: false,
    },
  });
  return out.outputText.replace(/^"use strict";\r?\n/, '');
}

const PYTHON_HARNESS = `def run_code(code: str) -> str:
    # _ast (built in) rather than ast: a pure-Python import every call would cost milliseconds.
    import _ast, io, json, sys

    class _Tee(io.TextIOBase):
        def __init__(self, echo):
            self.echo, self.parts = echo, []

        def writable(self):
            return True

        def write(self, s):
            self.parts.append(s)
            try:
                self.echo.write(s)
            except Exception:
                pass
            return len(s)

        def flush(self):
            try:
                self.echo.flush()
            except Exception:
                pass

        def lines(self):
            return "".join(self.parts).splitlines(keepends=True)

    out, err = _Tee(sys.stdout), _Tee(sys.stderr)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    results, error = [], None
    scope = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        tree = compile(code, "<code>", "exec", 0x400)  # ast.PyCF_ONLY_AST
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], _ast.Expr) else None
        exec(compile(tree, "<code>", "exec"), scope)
        if last is not None:
            value = eval(compile(_ast.Expression(body=last.value), "<code>", "eval"), scope)
            if value is not None:
                results.append(repr(value))
    except BaseException as e:
        import traceback

        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "<code>":
            tb = tb.tb_next
        lines = traceback.format_exception(type(e), e, tb) if tb is not None else traceback.format_exception_only(type(e), e)
        error = {"name": type(e).__name__, "value": str(e), "traceback": "".join(lines)}
    finally:
        sys.stdout, sys.stderr = saved
    result = {"results": results, "logs": {"stdout": out.lines(), "stderr": err.lines()}}
    if error is not None:
        result["error"] = error
    return json.dumps(result, ensure_ascii=False)
`;

const NODE_HARNESS = `async function run_code(code) {
  const vm = require('node:vm');
  const util = require('node:util');
  const out = [];
  const err = [];
  const tap = (stream, sink) => {
    const write = stream.write;
    stream.write = function (chunk, ...rest) {
      sink.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      return write.call(stream, chunk, ...rest);
    };
    return () => { stream.write = write; };
  };
  const untap = [tap(process.stdout, out), tap(process.stderr, err)];
  const results = [];
  let error;
  try {
    globalThis.require = require;
    globalThis.module = { exports: {} };
    globalThis.exports = globalThis.module.exports;
    let value;
    try {
      value = vm.runInThisContext(code, { filename: 'code.js' });
    } catch (e) {
      // Top-level await: run the code as an async function body (no last-expression value then).
      if (!(e instanceof SyntaxError) || !/await/.test(String(e.message))) throw e;
      value = await vm.runInThisContext('(async () => {\\n' + code + '\\n})()', { filename: 'code.js' });
    }
    if (value && typeof value.then === 'function') value = await value;
    if (value !== undefined) results.push(util.inspect(value));
  } catch (e) {
    const isObj = e !== null && typeof e === 'object';
    error = {
      name: isObj && typeof e.name === 'string' ? e.name : 'Error',
      value: isObj && typeof e.message === 'string' ? e.message : String(e),
      traceback: isObj && typeof e.stack === 'string' ? e.stack : String(e),
    };
  } finally {
    for (const u of untap) u();
  }
  const lines = (parts) => parts.join('').split(/(?<=\\n)/).filter((s) => s.length > 0);
  const result = { results, logs: { stdout: lines(out), stderr: lines(err) } };
  if (error) result.error = error;
  return JSON.stringify(result);
}
`;
