import type { Toolset } from '@toolplane/client';
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { ExitCode, UsageError } from './cli.errors';
import type { CliContext } from './cli.context';
import { printLine, printRecord, printTable } from './cli.output';

/** `--requires-approval true|false|null`: the set's override (null: each tool's own default). */
export function approvalFlag(v: string | undefined): boolean | null {
  if (v === undefined || v === 'null') return null;
  if (v === 'true' || v === 'false') return v === 'true';
  throw new UsageError(`--requires-approval is true, false or null, not ${v}`);
}

interface UpsertFlags {
  description?: string;
  instructions?: string;
  instructionsFile?: string;
  toolId?: string[];
  tool?: string[];
  tag?: string[];
  requiresApproval?: string;
}

/** Published tool sets (served by the MCP gateway at /mcp/toolsets/<name>): upsert, get, list, delete, and their tools now. */
export function registerToolsetCommands(program: Command, ctx: CliContext): void {
  const toolsets = program
    .command('toolsets')
    .description('published tool sets: what the MCP gateway serves at /mcp/toolsets/<name>');

  toolsets
    .command('upsert <name>')
    .description(
      'create a toolset or replace its whole definition: its tools by id, by name and by tag (live: a tool tagged later is in it)',
    )
    .option('--tool <name...>', 'tools by name')
    .option('--tool-id <id...>', 'tools by id')
    .option('--tag <tag...>', 'every tool with any of these tags, now and later')
    .option('--description <text>', 'what the set is for')
    .option('--instructions <text>', "the MCP server's instructions shown to clients")
    .option('--instructions-file <file>', 'the instructions from a file (- for stdin)')
    .option(
      '--requires-approval <true|false|null>',
      "override every tool's default_requires_approval for calls through the set (default null: each tool's own)",
    )
    .action(async (name: string, opts: UpsertFlags) => {
      if (opts.instructions !== undefined && opts.instructionsFile)
        throw new UsageError('give --instructions or --instructions-file, not both');
      const instructions = opts.instructionsFile
        ? readFileSync(opts.instructionsFile === '-' ? 0 : opts.instructionsFile, 'utf8')
        : opts.instructions;
      const client = await ctx.client();
      const r = await client.toolsets.upsert({
        org_id: ctx.org,
        toolset: {
          name,
          description: opts.description,
          instructions,
          tool_ids: opts.toolId,
          tool_names: opts.tool,
          tags: opts.tag,
          requires_approval: approvalFlag(opts.requiresApproval),
        },
      });
      ctx.out(r, () => printLine(`${r.created ? 'created' : 'updated'} toolset ${r.toolset.name} (${r.toolset.id})`));
    });

  toolsets
    .command('get <name>')
    .description('one toolset: its definition (not its tools: see `toolsets tools`)')
    .action(async (name: string) => {
      const { toolset } = await (await ctx.client()).toolsets.get({ org_id: ctx.org, name });
      ctx.out({ toolset }, () => printRecord({ ...toolset }));
    });

  toolsets
    .command('list')
    .alias('ls')
    .description("list the org's toolsets (every page)")
    .action(async () => {
      const client = await ctx.client();
      const all: Toolset[] = [];
      for await (const t of client.paginate(client.toolsets.list, { org_id: ctx.org, limit: 200 }, 'toolsets'))
        all.push(t);
      // An empty list shows as '-', like a null.
      const rows = all.map((s) => ({
        ...s,
        tool_names: s.tool_names.length ? s.tool_names : null,
        tool_ids: s.tool_ids.length ? s.tool_ids : null,
        tags: s.tags.length ? s.tags : null,
      }));
      ctx.out({ toolsets: all }, () =>
        printTable(rows, ['name', 'id', 'tool_names', 'tool_ids', 'tags', 'requires_approval', 'description']),
      );
    });

  toolsets
    .command('delete <name>')
    .alias('rm')
    .description('delete a toolset (its tools stay); exit code 3 when there is none')
    .action(async (name: string) => {
      const r = await (await ctx.client()).toolsets.delete({ org_id: ctx.org, name });
      ctx.out(r, () => printLine(r.deleted ? `deleted ${name}` : `no toolset ${name}`));
      if (!r.deleted) process.exitCode = ExitCode.NOT_FOUND;
    });

  toolsets
    .command('tools <name>')
    .description("the toolset's tools as they are now (every page), with whether calls through the set need approval")
    .action(async (name: string) => {
      const client = await ctx.client();
      const all: Array<{ tool: Record<string, unknown>; requires_approval: boolean }> = [];
      for await (const t of client.paginate(client.toolsets.tools.list, { org_id: ctx.org, name, limit: 200 }, 'tools'))
        all.push(t);
      ctx.out({ tools: all }, () =>
        printTable(
          all.map((t) => ({ ...t.tool, requires_approval: t.requires_approval })),
          ['name', 'id', 'tool_type', 'tags', 'requires_approval'],
        ),
      );
    });
}
