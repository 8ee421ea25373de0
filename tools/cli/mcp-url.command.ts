import type { Command } from 'commander';
import { UsageError } from './cli.errors';
import type { CliContext } from './cli.context';
import { printJson, printLine } from './cli.output';

export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8090';
export const DEFAULT_TOKEN_ENV = 'TOOLPLANE_TOKEN';

/** Where the configs get the token: an environment variable's name, never its value. */
const TOKEN_PLACEHOLDER = '<an org token: toolplane token create --name mcp>';

export interface McpEndpoint {
  kind: 'agent' | 'toolset';
  id: string;
}

export interface McpUrlOptions {
  /** The gateway's base URL (scheme, host, any path prefix). */
  gateway: string;
  endpoint: McpEndpoint;
  /** The name the clients show for the server. */
  name: string;
  /** The environment variable that holds the token where a client reads one. */
  tokenEnv: string;
}

/** The endpoint's URL under the gateway's base URL: `/mcp/agents/<id>` or `/mcp/toolsets/<name>`. */
export function mcpEndpointUrl(gateway: string, e: McpEndpoint): string {
  return `${gateway.replace(/\/+$/, '')}/mcp/${e.kind === 'agent' ? 'agents' : 'toolsets'}/${encodeURIComponent(e.id)}`;
}

/** `toolplane-<id>`, reduced to what every client accepts as a server name. */
export function defaultServerName(e: McpEndpoint): string {
  return `toolplane-${e.id}`.replace(/[^A-Za-z0-9_-]+/g, '-').slice(0, 64);
}

const shellWord = (s: string): string => (/^[A-Za-z0-9_./:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
const isLoopback = (url: string): boolean => ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname);

/**
 * The endpoint ready to paste into the MCP clients people use. No config holds a token: each reads
 * it from the environment variable `tokenEnv` where the client expands variables (Claude Code, Cursor,
 * the SDKs), and Claude Desktop (which does not) gets a placeholder to replace.
 */
export function mcpClientConfigs(o: McpUrlOptions): { url: string; configs: Record<string, unknown> } {
  const url = mcpEndpointUrl(o.gateway, o.endpoint);
  const env = o.tokenEnv;
  const remoteArgs = [
    '-y',
    'mcp-remote',
    url,
    '--header',
    'Authorization:${TOOLPLANE_AUTH_HEADER}',
    ...(new URL(url).protocol === 'http:' && !isLoopback(url) ? ['--allow-http'] : []),
  ];
  return {
    url,
    configs: {
      claude_code: `claude mcp add --transport http ${shellWord(o.name)} ${shellWord(url)} --header "Authorization: Bearer $${env}"`,
      // Claude Code's .mcp.json (and any client taking url + headers) expands ${VAR} itself.
      mcp_json: { mcpServers: { [o.name]: { type: 'http', url, headers: { Authorization: `Bearer \${${env}}` } } } },
      // Claude Desktop runs remote servers with headers through the mcp-remote bridge.
      claude_desktop: {
        mcpServers: {
          [o.name]: { command: 'npx', args: remoteArgs, env: { TOOLPLANE_AUTH_HEADER: `Bearer ${TOKEN_PLACEHOLDER}` } },
        },
      },
      cursor: { mcpServers: { [o.name]: { url, headers: { Authorization: `Bearer \${env:${env}}` } } } },
      openai_agents_python: [
        'import os',
        'from agents import Agent',
        'from agents.mcp import MCPServerStreamableHttp',
        '',
        'async with MCPServerStreamableHttp(',
        `    name=${JSON.stringify(o.name)},`,
        `    params={"url": ${JSON.stringify(url)}, "headers": {"Authorization": f"Bearer {os.environ['${env}']}"}},`,
        ') as toolplane:',
        '    agent = Agent(name="assistant", mcp_servers=[toolplane])',
      ].join('\n'),
      openai_agents_typescript: [
        "import { Agent, MCPServerStreamableHttp } from '@openai/agents';",
        '',
        'const toolplane = new MCPServerStreamableHttp({',
        `  name: ${JSON.stringify(o.name)},`,
        `  url: ${JSON.stringify(url)},`,
        `  requestInit: { headers: { Authorization: \`Bearer \${process.env.${env}}\` } },`,
        '});',
        'await toolplane.connect();',
        "const agent = new Agent({ name: 'assistant', mcpServers: [toolplane] });",
      ].join('\n'),
    },
  };
}

const SECTIONS: Array<[key: string, title: string]> = [
  ['claude_code', 'Claude Code (shell)'],
  ['mcp_json', 'Claude Code .mcp.json (any client taking url + headers)'],
  ['claude_desktop', 'Claude Desktop (claude_desktop_config.json, through mcp-remote: replace the placeholder)'],
  ['cursor', 'Cursor (~/.cursor/mcp.json)'],
  ['openai_agents_python', 'OpenAI Agents SDK (Python)'],
  ['openai_agents_typescript', 'OpenAI Agents SDK (TypeScript)'],
];

/** Offline: prints, connects nowhere. */
export function registerMcpUrlCommand(program: Command, ctx: CliContext): void {
  program
    .command('mcp-url')
    .description("the MCP endpoint of an agent's tools or a tool set, and client configs to paste (no token printed)")
    .option('--agent <agent_id>', "the agent's attached tools: /mcp/agents/<agent_id>")
    .option('--toolset <name>', 'a published tool set: /mcp/toolsets/<name>')
    .option('--gateway <url>', `the gateway's base URL (env TOOLPLANE_GATEWAY_URL, default ${DEFAULT_GATEWAY_URL})`)
    .option('--name <name>', 'the server name clients show (default toolplane-<id>)')
    .option(
      '--token-env <NAME>',
      `the environment variable the configs read the token from (default ${DEFAULT_TOKEN_ENV})`,
    )
    .action((o: { agent?: string; toolset?: string; gateway?: string; name?: string; tokenEnv?: string }) => {
      if (!o.agent === !o.toolset) throw new UsageError('name one endpoint: --agent <agent_id> or --toolset <name>');
      const endpoint: McpEndpoint = o.agent ? { kind: 'agent', id: o.agent } : { kind: 'toolset', id: o.toolset! };
      const gateway = o.gateway ?? process.env.TOOLPLANE_GATEWAY_URL ?? DEFAULT_GATEWAY_URL;
      if (!URL.canParse(gateway) || !/^https?:$/.test(new URL(gateway).protocol))
        throw new UsageError(`--gateway: not an http(s) URL: ${gateway}`);
      const tokenEnv = o.tokenEnv ?? DEFAULT_TOKEN_ENV;
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(tokenEnv))
        throw new UsageError(`--token-env: not an environment variable name: ${tokenEnv}`);
      const name = o.name ?? defaultServerName(endpoint);
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw new UsageError('--name: letters, digits, - and _ (at most 64)');
      const r = mcpClientConfigs({ gateway, endpoint, name, tokenEnv });
      if (ctx.json) return printJson(r);
      printLine(r.url);
      printLine();
      printLine(
        `Bearer token: an org token with the tools:execute scope, read from $${tokenEnv} below (never printed here).`,
      );
      for (const [key, title] of SECTIONS) {
        const value = r.configs[key];
        printLine();
        printLine(`# ${title}`);
        printLine(typeof value === 'string' ? value : JSON.stringify(value, null, 2));
      }
    });
}
