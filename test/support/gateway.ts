import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';

/** The run's MCP gateway (its base URL), started by the global setup with the shared stack. */
export function gatewayUrl(): string {
  const u = process.env.TOOLPLANE_TEST_GATEWAY_URL;
  if (!u) throw new Error('TOOLPLANE_TEST_GATEWAY_URL is not set: run through jest (global setup)');
  return u;
}

export const agentEndpoint = (agent: string, base = gatewayUrl()) => `${base}/mcp/agents/${encodeURIComponent(agent)}`;
export const toolsetEndpoint = (name: string, base = gatewayUrl()) =>
  `${base}/mcp/toolsets/${encodeURIComponent(name)}`;

/** The MCP SDK's own client over Streamable HTTP with a bearer token, connected (initialized). */
export async function mcpClient(
  url: string,
  token: string,
  capabilities: ClientCapabilities = {},
  name = 'toolplane-test',
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return { client, transport };
}
