import {
  isEvent,
  McpServerProgressed,
  McpServerSynced,
  type EventOf,
  type McpSyncReport,
  type ToolplaneClient,
} from '@toolplane/client';
import type { Command } from 'commander';
import type { CliContext } from './cli.context';
import { jsonFile } from './cli.input';
import { printError, printLine, printRecord, printTable } from './cli.output';

type Progress = EventOf<typeof McpServerProgressed>;
type Trigger = Progress['trigger'];

/** How long to wait for the subscription, and for the last progress events after the reply. */
const WATCH_READY_MS = 5_000;
const WATCH_DRAIN_MS = 10_000;

/** One line of a sync's progress. */
export function progressLine(p: Progress): string {
  const problems = p.errors ? ` · ${p.errors} problem${p.errors === 1 ? '' : 's'}` : '';
  if (p.phase === 'listing' || !p.write) return `listing  page ${p.pages} · ${p.listed} tools listed${problems}`;
  return `writing  ${p.write.tools} tools (${p.invalid ?? 0} invalid) · ${p.write.pages_done}/${p.write.pages} messages${problems}`;
}

/** Progress on stderr: one line redrawn on a terminal, one line per step otherwise. */
class ProgressView {
  private shown = false;
  private readonly tty = Boolean(process.stderr.isTTY);

  show(p: Progress): void {
    this.shown = true;
    process.stderr.write(this.tty ? `\r${progressLine(p)}\x1b[K` : `${progressLine(p)}\n`);
  }

  end(): void {
    if (this.shown && this.tty) process.stderr.write('\n');
  }
}

const timer = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * Runs a sync (`run`) while showing its progress events live (human mode only): subscribes first,
 * follows the first sync run of `server` with `trigger` that appears, and after the reply waits for
 * the run's mcp-server.synced (bounded) so the view ends complete. If the events cannot be
 * followed, the sync runs without a live view.
 */
async function withProgress<T>(
  ctx: CliContext,
  client: ToolplaneClient,
  server: string,
  trigger: Trigger,
  run: () => Promise<T>,
): Promise<T> {
  if (ctx.json) return run();
  const org = ctx.org;
  const ac = new AbortController();
  const view = new ProgressView();
  let ready!: () => void;
  const readyP = new Promise<void>((r) => (ready = r));
  let synced!: () => void;
  const syncedP = new Promise<void>((r) => (synced = r));
  const watch = (async () => {
    let syncId: string | undefined;
    for await (const e of client.events({
      entities: ['mcp-server'],
      org,
      from: 'new',
      signal: ac.signal,
      onReady: ready,
    })) {
      if (e.payload.server_name !== server || e.payload.trigger !== trigger) continue;
      if (isEvent(e, McpServerProgressed)) {
        syncId ??= e.payload.sync_id;
        if (e.payload.sync_id === syncId) view.show(e.payload);
      } else if (isEvent(e, McpServerSynced)) {
        synced();
      }
    }
  })();
  const watching = await Promise.race([
    readyP.then(() => true),
    watch.then(
      () => false,
      () => false,
    ),
    timer(WATCH_READY_MS).then(() => false),
  ]);
  if (!watching) printError('(no live progress: the events stream cannot be followed)');
  try {
    const result = await run();
    if (watching) await Promise.race([syncedP, watch.catch(() => undefined), timer(WATCH_DRAIN_MS)]);
    return result;
  } finally {
    ac.abort();
    await watch.catch(() => undefined);
    view.end();
  }
}

export function printSync(name: string, s: McpSyncReport): void {
  printLine(
    `${name}: ${s.pages} page${s.pages === 1 ? '' : 's'}, ${s.listed} tools listed${s.complete ? '' : ' (listing incomplete: nothing removed)'}, ${s.duration_ms} ms`,
  );
  printRecord({ added: s.added, updated: s.updated, removed: s.removed, unchanged: s.unchanged, invalid: s.invalid });
  for (const t of s.invalid_tools) printLine(`  invalid ${t.name}: ${t.reasons.join('; ')}`);
  for (const e of s.errors) printLine(`  ! ${e.code}: ${e.message}`);
}

/** MCP servers: add (with the first sync), ls, sync with live progress, rm. */
export function registerMcpCommands(program: Command, ctx: CliContext): void {
  const mcp = program.command('mcp').description('MCP servers');
  mcp
    .command('add <server.json>')
    .description(
      'register an MCP server ({name, transport, url|command, …}, - for stdin), sync it and print the report',
    )
    .action(async (file: string) => {
      const client = await ctx.client();
      const server = jsonFile(file);
      const r = await withProgress(ctx, client, String(server.name), 'add', () =>
        client.mcp.servers.add({ org_id: ctx.org, server } as never, { timeoutMs: 120_000 }),
      );
      ctx.out(r, () => ('authorization' in r ? printRecord(r.authorization) : printSync(r.server.name, r.sync)));
    });
  mcp.command('ls').action(async () => {
    const r = await (await ctx.client()).mcp.servers.list({ org_id: ctx.org });
    ctx.out(r, () => printTable(r.servers, ['name', 'id', 'transport', 'url', 'command', 'tool_count']));
  });
  mcp
    .command('sync <name>')
    .description(
      'resync a server with a live view of its progress (pages, tools), then its report (added/updated/removed/invalid); --json prints only the report',
    )
    .action(async (name: string) => {
      const client = await ctx.client();
      const r = await withProgress(ctx, client, name, 'manual', () =>
        client.mcp.servers.sync({ org_id: ctx.org, name }, { timeoutMs: 120_000 }),
      );
      ctx.out(r, () => printSync(r.server.name, r.sync));
    });
  mcp.command('rm <name>').action(async (name: string) => {
    const r = await (await ctx.client()).mcp.servers.remove({ org_id: ctx.org, name });
    ctx.out(r, () => printLine(`removed ${name} and its ${r.tools_removed} tools`));
  });
}
