import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { UsageError } from './cli.errors';
import type { CliContext } from './cli.context';
import { printJson, printLine } from './cli.output';

/** Loaded on use: the engine (tree-sitter, wasm) would double every other command's start-up. */
async function loadEngine() {
  const { createSchemaEngine } = await import('@toolplane/schema-engine');
  return createSchemaEngine();
}

/** Offline: the schema engine itself, no stack. */
export function registerSchemaCommands(program: Command, ctx: CliContext): void {
  const schema = program.command('schema').description('derive and check tool schemas offline (no stack needed)');

  schema
    .command('gen <file>')
    .description('the JSON schema of the tool in a .py/.ts file, its health and reasons')
    .option('--name <function>', 'the function to describe (default: the last top-level one)')
    .action(async (file: string, opts: { name?: string }) => {
      const source_type = extname(file) === '.ts' ? 'typescript' : extname(file) === '.py' ? 'python' : undefined;
      if (!source_type) throw new UsageError(`${file}: a tool is a .py or .ts file`);
      const engine = await loadEngine();
      const r = engine.generate({ source_code: readFileSync(file, 'utf8'), source_type, name: opts.name });
      if (ctx.json) printJson(r);
      else {
        printLine(`health: ${r.health}`);
        for (const reason of r.reasons) printLine(`  - ${reason}`);
        printJson(r.json_schema);
      }
      if (r.health === 'INVALID') process.exitCode = 1;
    });

  schema
    .command('check <schema.json>')
    .description('the health of a JSON schema (STRICT_COMPLIANT, NON_STRICT_ONLY or INVALID) and why')
    .action(async (file: string) => {
      let value: unknown;
      try {
        value = JSON.parse(readFileSync(file, 'utf8'));
      } catch {
        throw new UsageError(`${file} is not JSON`);
      }
      const engine = await loadEngine();
      const r = engine.validate(value);
      if (ctx.json) printJson(r);
      else {
        printLine(`health: ${r.health}`);
        for (const reason of r.reasons) printLine(`  - ${reason}`);
      }
      if (r.health === 'INVALID') process.exitCode = 1;
    });
}
