import type { Command } from 'commander';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { UsageError } from './cli.errors';
import type { CliContext } from './cli.context';
import { printLine, printRecord, printTable, progress } from './cli.output';

const SOURCE_TYPES: Record<string, 'python' | 'typescript'> = { '.py': 'python', '.ts': 'typescript' };

/** The tool sources a push names: one file, or every .py/.ts file of a directory (sorted). */
export function toolFiles(path: string): string[] {
  if (!existsSync(path)) throw new UsageError(`${path} does not exist`);
  if (statSync(path).isDirectory()) {
    return readdirSync(path)
      .filter((f) => SOURCE_TYPES[extname(f)] && !f.endsWith('.d.ts'))
      .sort()
      .map((f) => join(path, f));
  }
  if (!SOURCE_TYPES[extname(path)]) throw new UsageError(`${path}: a tool is a .py or .ts file`);
  return [path];
}

/** `--args '{…}'` or `--args-file f.json` (`-` is stdin): a JSON object. */
function readArgs(opts: { args?: string; argsFile?: string }): Record<string, unknown> {
  if (opts.args && opts.argsFile) throw new UsageError('give --args or --args-file, not both');
  const text = opts.argsFile ? readFileSync(opts.argsFile === '-' ? 0 : opts.argsFile, 'utf8') : (opts.args ?? '{}');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError('the arguments are not JSON');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new UsageError('the arguments are a JSON object');
  return value as Record<string, unknown>;
}

export function registerToolCommands(program: Command, ctx: CliContext): void {
  const tools = program.command('tools').description('register, list, inspect, delete and run tools');

  tools
    .command('push <path>')
    .description('derive the schema of a .py/.ts tool (or of every tool of a directory) and upsert it')
    .option('--tag <tag...>', 'tags of the pushed tools')
    .action(async (path: string, opts: { tag?: string[] }) => {
      const files = toolFiles(path);
      const client = await ctx.client();
      const pushed: Array<Record<string, unknown>> = [];
      let failed = 0;
      for (const [i, file] of files.entries()) {
        try {
          const { tool } = await client.tools.upsert({
            org_id: ctx.org,
            tool: {
              source_code: readFileSync(file, 'utf8'),
              source_type: SOURCE_TYPES[extname(file)]!,
              tags: opts.tag,
            },
          });
          const report = await client.schemas
            .validate({ json_schema: tool.json_schema as Record<string, unknown> })
            .catch(() => ({ health: null, reasons: [] as string[] }));
          pushed.push({ file, name: tool.name, id: tool.id, health: report.health, reasons: report.reasons });
        } catch (e) {
          failed++;
          pushed.push({
            file,
            error: { code: (e as { code?: string }).code ?? 'FAILED', message: (e as Error).message },
          });
        }
        progress(i + 1, files.length, file);
      }
      ctx.out({ tools: pushed }, () => {
        printTable(
          pushed.map((p) => ({ ...p, error: (p.error as { code?: string })?.code })),
          ['file', 'name', 'id', 'health', 'error'],
        );
        for (const p of pushed) {
          for (const reason of (p.reasons as string[] | undefined) ?? []) printLine(`  ${String(p.name)}: ${reason}`);
          if (p.error) printLine(`  ${String(p.file)}: ${(p.error as { message: string }).message}`);
        }
      });
      if (failed) process.exitCode = 1;
    });

  tools
    .command('ls')
    .description("list the org's tools (every page)")
    .option('--tag <tag...>', 'only tools with any of these tags')
    .action(async (opts: { tag?: string[] }) => {
      const client = await ctx.client();
      const all: Array<Record<string, unknown>> = [];
      for await (const t of client.paginate(
        client.tools.list,
        { org_id: ctx.org, tags: opts.tag, limit: 200 },
        'tools',
      ))
        all.push(t as Record<string, unknown>);
      ctx.out({ tools: all }, () => printTable(all, ['name', 'id', 'tool_type', 'tags', 'description']));
    });

  tools
    .command('get <name-or-id>')
    .description('one tool, by name or id')
    .action(async (ref: string) => {
      const client = await ctx.client();
      const { tool } = await client.tools.get(
        ref.startsWith('tool-') ? { org_id: ctx.org, id: ref } : { org_id: ctx.org, name: ref },
      );
      ctx.out({ tool }, () =>
        printRecord({
          name: tool.name,
          id: tool.id,
          type: tool.tool_type,
          tags: tool.tags,
          description: tool.description,
          json_schema: tool.json_schema,
        }),
      );
    });

  tools
    .command('rm <name-or-id>')
    .description('delete a tool')
    .action(async (ref: string) => {
      const client = await ctx.client();
      const id = ref.startsWith('tool-') ? ref : (await client.tools.get({ org_id: ctx.org, name: ref })).tool.id;
      const r = await client.tools.delete({ org_id: ctx.org, id });
      ctx.out({ ...r, id }, () => printLine(`deleted ${ref}`));
    });

  tools
    .command('run <name>')
    .description('execute a tool and print its result, output, duration and trace id')
    .option('--args <json>', 'the arguments, a JSON object')
    .option('--args-file <file>', 'the arguments from a JSON file (- for stdin)')
    .option('--timeout-ms <ms>', 'the execution timeout', (v) => Number(v))
    .action(async (name: string, opts: { args?: string; argsFile?: string; timeoutMs?: number }) => {
      const args = readArgs(opts);
      const client = await ctx.client();
      const r = (await client.tools.execute(
        { org_id: ctx.org, tool_name: name, args, timeout_ms: opts.timeoutMs },
        { timeoutMs: (opts.timeoutMs ?? 60_000) + 15_000 },
      )) as Record<string, any>;
      const jaeger =
        process.env.TOOLPLANE_JAEGER_URL && r.trace_id
          ? `${process.env.TOOLPLANE_JAEGER_URL.replace(/\/$/, '')}/trace/${r.trace_id}`
          : undefined;
      ctx.out(jaeger ? { ...r, jaeger_url: jaeger } : r, () => {
        printRecord({
          status: r.status,
          result: r.func_return,
          duration_ms: r.duration_ms,
          provider: r.provider,
          trace_id: r.trace_id,
          ...(jaeger ? { jaeger } : {}),
          ...(r.error ? { error: `${r.error.code}: ${r.error.message}` } : {}),
        });
        if (r.stdout?.length) printLine(`--- stdout\n${r.stdout.join('')}`);
        if (r.stderr?.length) printLine(`--- stderr\n${r.stderr.join('')}`);
      });
      if (r.status !== 'success') process.exitCode = 1;
    });
}
