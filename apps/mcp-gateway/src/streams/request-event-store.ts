import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { mcpStreamSubject } from '@toolplane/contracts';
import type { StreamEventsRepository } from './stream-events.repository';

/** The SDK names a POST's SSE stream by a random UUID; only those streams are stored and resumable. */
const POST_STREAM_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** An SSE event id of a stored stream, `<stream id>_<n>`: the stream and the event's number in it. */
export function parseEventId(id: string): { streamId: string; n: number } | undefined {
  const i = id.lastIndexOf('_');
  const streamId = id.slice(0, i);
  const n = Number(id.slice(i + 1));
  if (i < 0 || !POST_STREAM_ID.test(streamId) || !/^\d{1,9}$/.test(id.slice(i + 1))) return undefined;
  return { streamId, n };
}

export const eventId = (streamId: string, n: number): EventId => `${streamId}_${n}`;

/**
 * The SDK's EventStore for the transport of one POST (one SSE stream, the requests of its body):
 * the SDK calls storeEvent for every event it sends on the stream — its priming event (empty,
 * only to clients of protocol 2025-11-25 or later), progress, the response — before writing it
 * to the client, and also when the client's connection is gone (webStandardStreamableHttp.js
 * `send`: "Store the event even if the stream is disconnected"). Each is appended to the stream's
 * subject, numbered; the SSE id is `<stream id>_<n>`.
 *
 * While the stream's requests are unanswered, a heartbeat is stored every `heartbeatMs` once the
 * stream has stored anything: a replica resuming the stream elsewhere tells "still running" from
 * "the replica serving it is gone" by them. `answered` settles when every request's response is
 * stored; `dispose` stops the heartbeat whatever happened.
 *
 * Replays are not this class's job (a resume on another replica must follow the stream until its
 * response, which the SDK's replay does not do): replayEventsAfter is never reached, since the
 * gateway serves a GET with Last-Event-ID itself (StreamResumeService).
 */
export class RequestEventStore implements EventStore {
  private n = 0;
  private subject?: string;
  private beat?: NodeJS.Timeout;
  private readonly unanswered: Set<RequestId>;
  private settle!: () => void;
  readonly answered = new Promise<void>((resolve) => (this.settle = resolve));

  constructor(
    private readonly repo: StreamEventsRepository,
    private readonly sessionDigest: string,
    private readonly requests: RequestId[],
    private readonly heartbeatMs: number,
  ) {
    this.unanswered = new Set(requests);
  }

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const n = ++this.n;
    if (!POST_STREAM_ID.test(streamId)) return eventId(streamId, n); // not a POST's stream: not stored
    this.subject ??= mcpStreamSubject(this.sessionDigest, streamId);
    const priming = !('jsonrpc' in message);
    this.repo.append(this.subject, {
      n,
      requests: this.requests,
      ...(priming ? {} : { message: message as unknown as Record<string, unknown> }),
    });
    if (
      (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) &&
      message.id !== undefined &&
      this.unanswered.delete(message.id) &&
      !this.unanswered.size
    ) {
      this.dispose();
      this.settle();
    } else if (!this.beat && this.unanswered.size) {
      this.beat = setInterval(
        () => this.repo.append(this.subject!, { n: this.n, requests: this.requests, beat: true }),
        this.heartbeatMs,
      );
      this.beat.unref();
    }
    return eventId(streamId, n);
  }

  replayEventsAfter(): Promise<StreamId> {
    return Promise.reject(new Error('Resumes are served by StreamResumeService'));
  }

  dispose(): void {
    clearInterval(this.beat);
    this.beat = undefined;
  }
}
