import type { Command } from 'commander';
import type { CliContext } from './cli.context';
import { jsonFile } from './cli.input';
import { printLine, printRecord, printTable } from './cli.output';
import { readSecret } from './cli.secret-input';

type Scope = 'sandbox' | 'agent' | 'user';
type Owner = { agent?: string; user?: string };
/** --agent: an agent secret; --user: an end user's secret; neither: the org's sandbox env. */
const scopeOf = (o: Owner): { scope: Scope; agent_id?: string; user_id?: string } => {
  if (o.agent && o.user)
    throw new Error('--agent and --user: one or the other (a secret belongs to an agent or to an end user)');
  if (o.user) return { scope: 'user', user_id: o.user };
  return o.agent ? { scope: 'agent', agent_id: o.agent } : { scope: 'sandbox' };
};

/** Secrets, webhook, sandbox configs and org tokens. */
export function registerAdminCommands(program: Command, ctx: CliContext): void {
  const secrets = program
    .command('secrets')
    .description("encrypted sandbox env vars (default), agent secrets (--agent) or an end user's secrets (--user)");
  secrets
    .command('set <key>')
    .description('store a secret; its value is read from stdin or a prompt, never from the command line')
    .option('--agent <agent_id>', 'an agent secret instead of a sandbox env var')
    .option('--user <user_id>', "an end user's secret (wins over the agent's and the org's in that user's calls)")
    .option('--description <text>')
    .allowExcessArguments(false)
    .action(async (key: string, o: Owner & { description?: string }) => {
      const value = await readSecret(`value of ${key}`);
      const client = await ctx.client();
      const { secret } = await client.secrets.set({
        org_id: ctx.org,
        key,
        value,
        description: o.description,
        ...scopeOf(o),
      });
      ctx.out({ secret }, () => printLine(`stored ${secret.key} (${secret.scope})`));
    });
  secrets
    .command('ls')
    .option('--agent <agent_id>')
    .option('--user <user_id>')
    .action(async (o: Owner) => {
      const client = await ctx.client();
      const { secrets: list } = await client.secrets.list({
        org_id: ctx.org,
        ...(o.agent || o.user ? scopeOf(o) : {}),
      });
      ctx.out({ secrets: list }, () =>
        printTable(list, ['key', 'scope', 'agent_id', 'user_id', 'description', 'updated_at']),
      );
    });
  secrets
    .command('rm <key>')
    .option('--agent <agent_id>')
    .option('--user <user_id>')
    .action(async (key: string, o: Owner) => {
      const client = await ctx.client();
      const r = await client.secrets.delete({ org_id: ctx.org, key, ...scopeOf(o) });
      ctx.out(r, () => printLine(`deleted ${key}`));
    });

  const webhook = program.command('webhook').description("the org's credentials webhook");
  webhook
    .command('set <url>')
    .description('set the webhook; its signing secret is read from stdin or a prompt')
    .option('--timeout-ms <ms>', 'call timeout', (v) => Number(v))
    .option('--fail-mode <open|closed>')
    .action(async (url: string, o: { timeoutMs?: number; failMode?: 'open' | 'closed' }) => {
      const signing_secret = await readSecret('signing secret');
      const client = await ctx.client();
      const r = await client.webhooks.set({
        org_id: ctx.org,
        url,
        signing_secret,
        timeout_ms: o.timeoutMs,
        fail_mode: o.failMode,
      });
      ctx.out(r, () => printRecord(r.webhook));
    });
  webhook.command('get').action(async () => {
    const r = await (await ctx.client()).webhooks.get({ org_id: ctx.org });
    ctx.out(r, () => printRecord(r.webhook));
  });
  webhook.command('rm').action(async () => {
    const r = await (await ctx.client()).webhooks.delete({ org_id: ctx.org });
    ctx.out(r, () => printLine('webhook removed'));
  });

  const sandbox = program.command('sandbox-config').description("the org's sandbox config per provider");
  sandbox
    .command('set <provider> <config.json>')
    .description('replace the config of a provider (local, e2b, …) with a JSON file (- for stdin)')
    .action(async (provider: string, file: string) => {
      const r = await (await ctx.client()).sandboxConfigs.upsert({
        org_id: ctx.org,
        provider,
        config: jsonFile(file),
      } as never);
      ctx.out(r, () => printRecord(r.sandbox_config as Record<string, unknown>));
    });
  sandbox
    .command('get [provider]')
    .description('the config of a provider, or every config')
    .action(async (provider?: string) => {
      const client = await ctx.client();
      if (provider) {
        const r = await client.sandboxConfigs.get({ org_id: ctx.org, provider } as never);
        ctx.out(r, () => printRecord(r.sandbox_config as Record<string, unknown>));
      } else {
        const r = await client.sandboxConfigs.list({ org_id: ctx.org });
        ctx.out(r, () =>
          printTable(r.sandbox_configs as Array<Record<string, unknown>>, ['provider', 'fingerprint', 'config']),
        );
      }
    });

  const token = program.command('token').description('org tokens (needs an operator or admin token)');
  token
    .command('create')
    .option('--name <name>', 'what the token is for', 'cli')
    .option('--scopes <scope...>', 'scopes (default: all but admin)')
    .option('--ttl-s <seconds>', 'lifetime', (v) => Number(v))
    .option('--user <user_id>', "bind the token to this end user (its calls are that user's; it cannot act as another)")
    .action(async (o: { name: string; scopes?: string[]; ttlS?: number; user?: string }) => {
      const r = await (await ctx.client()).auth.tokens.create({
        org_id: ctx.org,
        name: o.name,
        scopes: o.scopes,
        ttl_s: o.ttlS,
        ...(o.user ? { user_id: o.user } : {}),
      } as never);
      ctx.out(r, () => printRecord(r));
    });
  token.command('ls').action(async () => {
    const client = await ctx.client();
    const all: Array<Record<string, unknown>> = [];
    for await (const t of client.paginate(client.auth.tokens.list, { org_id: ctx.org, limit: 200 }, 'tokens'))
      all.push(t as Record<string, unknown>);
    ctx.out({ tokens: all }, () =>
      printTable(all, ['token_id', 'name', 'scopes', 'user_id', 'expires_at', 'revoked_at']),
    );
  });
  token.command('revoke <token_id>').action(async (id: string) => {
    const r = await (await ctx.client()).auth.tokens.revoke({ org_id: ctx.org, token_id: id } as never);
    ctx.out(r, () => printLine(`revoked ${id}`));
  });
}
