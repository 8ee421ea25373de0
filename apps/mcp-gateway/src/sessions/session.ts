import type { ClientCapabilities, Implementation } from '@modelcontextprotocol/sdk/types.js';

/** Where a session's tools come from: an agent's attached tools, or a tool set the org publishes. */
export type Endpoint = { kind: 'agent'; id: string } | { kind: 'toolset'; id: string };

/** `agent:<id>` / `toolset:<name>`: the endpoint as a cache part and a session field. */
export function endpointKey(e: Endpoint): string {
  return `${e.kind}:${e.id}`;
}

/** The endpoint's path under the gateway's base URL. */
export function endpointPath(e: Endpoint): string {
  return `/mcp/${e.kind === 'agent' ? 'agents' : 'toolsets'}/${encodeURIComponent(e.id)}`;
}

/**
 * One MCP session, as every replica sees it (NATS KV): who opened it, on which endpoint, and what
 * the client said in `initialize` (its capabilities decide elicitation and tasks).
 */
export interface SessionRecord {
  v: 1;
  org: string;
  /** Caller.identity: a request of the session from another identity is refused. */
  identity: string;
  user_id: string | null;
  endpoint: string;
  protocol_version: string;
  capabilities: ClientCapabilities;
  client_info: Implementation;
  created_at: number;
}
