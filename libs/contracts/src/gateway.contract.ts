import { z } from 'zod';
import { defineEvent } from './descriptor';

/**
 * The MCP gateway's own traffic between its replicas. An MCP session is not held by one process:
 * any replica serves any request of it (the session's record is in NATS KV). A request the
 * gateway is serving — a tools/call waiting on an elicitation, or running — lives in the replica
 * that took its POST, but the client's answer to it (a JSON-RPC response) or its
 * notifications/cancelled may arrive on another replica: that replica relays it here, and the
 * replica holding the request hands it to its transport. Sealed: nobody but a gateway replica can
 * answer or cancel a session's requests.
 */

/**
 * The NATS KV bucket of MCP sessions, which the gateway creates (prefixed per deployment like every
 * stream; its stream is `KV_<bucket>`). The gateway's NATS user may use this bucket and no other.
 */
export const MCP_SESSIONS_BUCKET = 'TOOLPLANE_MCP_SESSIONS';

/** An MCP session id: what the gateway hands out in Mcp-Session-Id. */
export const McpSessionId = z.string().regex(/^[A-Za-z0-9_-]{16,128}$/, 'an MCP session id');

export const McpSessionRelayed = defineEvent({
  subject: 'toolplane.internal.v1.events.mcp-session.relayed',
  summary: "A client's message (a JSON-RPC response, or a notification such as notifications/cancelled) for a request of its session that another gateway replica may be serving.",
  payload: z.object({ session_id: McpSessionId, message: z.record(z.string(), z.unknown()) }),
  sealed: { from: ['mcp-gateway'], to: 'mcp-gateway' },
});

export const McpSessionClosed = defineEvent({
  subject: 'toolplane.internal.v1.events.mcp-session.closed',
  summary: 'A client ended its MCP session (HTTP DELETE): every replica drops what it holds of it.',
  payload: z.object({ session_id: McpSessionId }),
  sealed: { from: ['mcp-gateway'], to: 'mcp-gateway' },
});
