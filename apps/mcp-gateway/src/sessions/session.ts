import type { ClientCapabilities, Implementation } from '@modelcontextprotocol/sdk/types.js';

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
