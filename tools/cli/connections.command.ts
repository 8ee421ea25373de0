import type { Command } from 'commander';
import type { CliContext } from './cli.context';
import { printLine, printTable } from './cli.output';

/** End users' connected accounts on the org's MCP servers: which are connected (never a token), and revoking one. */
export function registerConnectionsCommands(program: Command, ctx: CliContext): void {
  const connections = program
    .command('connections')
    .description('end users\' connected accounts on MCP servers (account "user")');
  connections
    .command('list')
    .description("the org's connected accounts, one user's (--user) or one server's (--server, id or name)")
    .option('--user <user_id>', 'only this end user')
    .option('--server <server>', 'only this MCP server (id or name)')
    .action(async (o: { user?: string; server?: string }) => {
      const r = await (await ctx.client()).connections.list({
        org_id: ctx.org,
        ...(o.user ? { user_id: o.user } : {}),
        ...(o.server ? { server: o.server } : {}),
      });
      ctx.out(r, () =>
        printTable(
          r.connections.map((c) => ({ ...c, user_id: c.user_id ?? '(org)', scopes: c.scopes.join(' ') })),
          ['server_name', 'user_id', 'account', 'scopes', 'connected_at', 'refreshed_at', 'expires_at'],
        ),
      );
    });
  connections
    .command('revoke <server>')
    .description(
      "disconnect an end user's account from an MCP server (tokens deleted, and revoked at the authorization server where it can)",
    )
    .requiredOption('--user <user_id>', 'the end user')
    .action(async (server: string, o: { user: string }) => {
      const r = await (await ctx.client()).connections.revoke({ org_id: ctx.org, user_id: o.user, server });
      ctx.out(r, () =>
        printLine(
          r.revoked
            ? `revoked ${o.user}'s connection to ${server} (authorization server: ${r.upstream})`
            : `${o.user} had no connection to ${server}`,
        ),
      );
    });
}
