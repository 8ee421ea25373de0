import { defaultServerName, mcpClientConfigs, mcpEndpointUrl } from './mcp-url.command';

describe('toolplane mcp-url', () => {
  it('builds the endpoint under any base path, the id encoded as one path segment', () => {
    expect(mcpEndpointUrl('https://tools.example.com/edge/', { kind: 'toolset', id: 'a/b c' })).toBe(
      'https://tools.example.com/edge/mcp/toolsets/a%2Fb%20c',
    );
    expect(mcpEndpointUrl('http://127.0.0.1:8090', { kind: 'agent', id: 'agent-1' })).toBe(
      'http://127.0.0.1:8090/mcp/agents/agent-1',
    );
  });

  it('names the server with what every client accepts', () => {
    expect(defaultServerName({ kind: 'agent', id: 'Ops bot (eu)' })).toBe('toolplane-Ops-bot-eu-');
    expect(defaultServerName({ kind: 'toolset', id: 'x'.repeat(100) })).toHaveLength(64);
  });

  it('quotes a URL the shell would split, and asks mcp-remote to allow plain http only off loopback', () => {
    const sut = (gateway: string) =>
      mcpClientConfigs({ gateway, endpoint: { kind: 'agent', id: "o'brien" }, name: 'tp', tokenEnv: 'TOKEN' })
        .configs as Record<string, any>;
    expect(sut('http://127.0.0.1:8090').claude_code).toBe(
      `claude mcp add --transport http tp 'http://127.0.0.1:8090/mcp/agents/o'\\''brien' --header "Authorization: Bearer $TOKEN"`,
    );
    expect(sut('http://127.0.0.1:8090').claude_desktop.mcpServers.tp.args).not.toContain('--allow-http');
    expect(sut('http://gateway.internal').claude_desktop.mcpServers.tp.args).toContain('--allow-http');
    expect(sut('https://mcp.example.com').claude_desktop.mcpServers.tp.args).not.toContain('--allow-http');
  });
});
