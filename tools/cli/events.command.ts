import type { Command } from 'commander';
import type { CliContext } from './cli.context';
import { printLine } from './cli.output';

export function registerEventsCommand(program: Command, ctx: CliContext): void {
  const events = program.command('events').description('the events stream');
  events
    .command('tail')
    .description("follow the org's events (JSON lines with --json); Ctrl-C stops")
    .option('--entity <entity...>', 'tool, mcp-server, execution, agent-tools, toolset')
    .option('--all', 'from the start of the stream, not only new events')
    .option('--limit <n>', 'stop after n events', (v) => Number(v))
    .option('--no-verify', "show events without checking their publisher's signature (anyone on the bus can forge one)")
    .action(async (o: { entity?: string[]; all?: boolean; limit?: number; verify: boolean }) => {
      const client = await ctx.client();
      const ac = new AbortController();
      process.once('SIGINT', () => ac.abort());
      let n = 0;
      // Verified by default with the services' keys (--keys-dir, TOOLPLANE_KEYS_DIR, the profile's keys_dir): an unverifiable event is not shown.
      const verify = o.verify ? {} : { verify: false };
      for await (const e of client.events({
        entities: o.entity,
        org: ctx.config.org,
        from: o.all ? 'all' : 'new',
        signal: ac.signal,
        ...verify,
      })) {
        if (ctx.json)
          process.stdout.write(`${JSON.stringify({ subject: e.subject, seq: e.seq, payload: e.payload })}\n`);
        else
          printLine(
            `${String(e.payload.occurred_at ?? '')}  ${e.subject.replace('toolplane.v1.events.', '')}  ${JSON.stringify(e.payload)}`,
          );
        if (o.limit && ++n >= o.limit) break;
      }
    });
}
