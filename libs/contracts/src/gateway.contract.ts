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
  publishedBy: ['mcp-gateway'],
  summary:
    "A client's message (a JSON-RPC response, or a notification such as notifications/cancelled) for a request of its session that another gateway replica may be serving.",
  payload: z.object({ session_id: McpSessionId, message: z.record(z.string(), z.unknown()) }),
  sealed: { from: ['mcp-gateway'], to: 'mcp-gateway' },
});

export const McpSessionClosed = defineEvent({
  subject: 'toolplane.internal.v1.events.mcp-session.closed',
  publishedBy: ['mcp-gateway'],
  summary: 'A client ended its MCP session (HTTP DELETE): every replica drops what it holds of it.',
  payload: z.object({ session_id: McpSessionId }),
  sealed: { from: ['mcp-gateway'], to: 'mcp-gateway' },
});

/**
 * Resumable SSE streams of the MCP gateway (MCP Streamable HTTP, "Resumability and Redelivery"):
 * every event a replica sends on the SSE stream of a POST is also stored in this JetStream stream
 * (prefixed per deployment like every stream), one subject per SSE stream, so that a client whose
 * connection broke resumes it — GET with Last-Event-ID — on any replica. Internal: only the
 * gateway's NATS user may publish or read here. See apps/mcp-gateway/src/streams/.
 */
export const MCP_EVENTS_STREAM = 'TOOLPLANE_MCP_EVENTS';
/** Every subject of MCP_EVENTS_STREAM. */
export const MCP_EVENTS_SUBJECTS = 'toolplane.internal.v1.mcp-streams.>';
/** A subject token the gateway makes itself: a session digest or an SSE stream id (no dot, no wildcard). */
const SUBJECT_TOKEN = /^[A-Za-z0-9_-]{1,64}$/;

/** The subject of one SSE stream of one session: `toolplane.internal.v1.mcp-streams.<session digest>.<stream id>`. */
export function mcpStreamSubject(sessionDigest: string, streamId: string): string {
  if (!SUBJECT_TOKEN.test(sessionDigest) || !SUBJECT_TOKEN.test(streamId))
    throw new Error('Bad MCP stream subject token');
  return `toolplane.internal.v1.mcp-streams.${sessionDigest}.${streamId}`;
}

const JsonRpcId = z.union([z.string(), z.number()]);

/**
 * One stored event of an SSE stream: its number in the stream (the SSE id is `<stream id>_<n>`),
 * the JSON-RPC ids of the requests the stream answers (on every event, so a resume that starts
 * anywhere knows when the stream is complete), and the message sent — none for the priming event
 * and for a heartbeat (`beat`: the replica serving the stream is alive; never sent to a client).
 */
export const McpStreamEvent = z.object({
  n: z.number().int().min(0),
  requests: z.array(JsonRpcId).max(1000),
  message: z.record(z.string(), z.unknown()).optional(),
  beat: z.literal(true).optional(),
});
export type McpStreamEvent = z.infer<typeof McpStreamEvent>;
