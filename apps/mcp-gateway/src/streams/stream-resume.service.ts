import { Inject, Injectable, Logger } from '@nestjs/common';
import { ErrorCode as McpErrorCode, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, mcpStreamSubject, type McpStreamEvent } from '@toolplane/contracts';
import { APP_CONFIG } from '@toolplane/platform';
import type { ServerResponse } from 'node:http';
import type { GatewayConfig } from '../mcp-gateway.config';
import { eventId } from './request-event-store';
import { StreamEventsRepository } from './stream-events.repository';

/** Heartbeats a resume may miss before it calls the serving replica gone. */
const MISSED_BEATS = 3;

/** How a resume ended. */
export type ResumeOutcome = 'not-found' | 'complete' | 'delivered' | 'replica-gone' | 'client-left';

/**
 * A client's GET with Last-Event-ID for the SSE stream of one of its POSTs, on any replica: the
 * events stored after that id, then each new one as the replica serving the POST stores it, until
 * the responses of the stream's requests have been written — then the SSE stream ends, as the
 * POST's own would have. The session check (McpHttpService) has already run: the stream is looked
 * for only under the caller's own session, so another session's stream id finds nothing.
 *
 * Why not the SDK's replay (`EventStore.replayEventsAfter`): it writes what is stored and then
 * registers the stream in the transport that took the GET, which on another replica never gets
 * the POST's later events. One ordered consumer here does both the replay and the live tail, with
 * no gap between them.
 *
 * The serving replica may die (its reply from the executor is then lost, though the call itself
 * goes on to its end in the executor and is recorded). Its heartbeats stop; a resume that sees no
 * stored message for MISSED_BEATS heartbeat intervals (counted from the last one's store time, and
 * at least 1.5 intervals from the resume's start so a clock skew cannot end a live stream) answers
 * each unanswered request with a JSON-RPC error saying the outcome is unknown and where to read
 * it (the execution records), and stores that answer — only if nothing was stored since, by
 * JetStream's expected last subject sequence, so a replica that was only slow keeps its stream.
 * A later resume of the same stream then finds it complete.
 *
 * Answers: 404 when nothing is stored for the stream (unknown, another session's, or expired),
 * 204 when the stream is complete and the client has all of it (the SDK's client stops resuming
 * on a bodiless success), else 200 text/event-stream.
 */
@Injectable()
export class StreamResumeService {
  private readonly log = new Logger(StreamResumeService.name);

  constructor(
    private readonly repo: StreamEventsRepository,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  async resume(
    res: ServerResponse,
    sessionDigest: string,
    sessionId: string,
    from: { streamId: string; n: number },
  ): Promise<ResumeOutcome> {
    const subject = mcpStreamSubject(sessionDigest, from.streamId);
    const beatMs = this.config.GATEWAY_STREAM_HEARTBEAT_MS;
    const started = Date.now();
    const stop = new AbortController();
    res.once('close', () => stop.abort());
    const lastStored = await this.repo.lastSeq(subject);
    if (lastStored === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32001, message: 'Stream not found: it ended long ago or never existed' },
          id: null,
        }),
      );
      return 'not-found';
    }
    let requests: RequestId[] = [];
    const answered = new Set<RequestId>();
    let maxN = 0;
    let lastSeq = 0;
    let firstAt: number | undefined;
    const open = () => {
      if (!res.headersSent)
        res.writeHead(200, {
          'content-type': 'text/event-stream',
          'cache-control': 'no-cache, no-transform',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
          'mcp-session-id': sessionId,
        });
    };
    const write = (n: number, message: unknown) => {
      open();
      res.write(`event: message\nid: ${eventId(from.streamId, n)}\ndata: ${JSON.stringify(message)}\n\n`);
    };
    const complete = () => requests.length > 0 && requests.every((id) => answered.has(id));
    // The serving replica is presumed gone when nothing is stored for MISSED_BEATS intervals.
    let idle: NodeJS.Timeout | undefined;
    let gone = false;
    const arm = (storedAt: number) => {
      clearTimeout(idle);
      const deadline = Math.max(storedAt + MISSED_BEATS * beatMs, started + 1.5 * beatMs);
      idle = setTimeout(
        () => {
          // Stored answers come back through the consumer below like any event; if something else was stored first, it does.
          void this.answerGone(subject, requests, answered, maxN, lastSeq, firstAt).then((stored) =>
            stored ? (gone = true) : arm(Date.now()),
          );
        },
        Math.max(0, deadline - Date.now()),
      );
    };
    try {
      for await (const { seq, at, event } of this.repo.follow(subject, stop.signal)) {
        lastSeq = seq;
        firstAt ??= at;
        if (!requests.length) requests = event.requests;
        if (!event.beat) {
          maxN = Math.max(maxN, event.n);
          const reply = responseId(event);
          if (reply !== undefined) answered.add(reply);
          if (event.message && event.n > from.n) write(event.n, event.message);
        } else if (res.headersSent) {
          res.write(': alive\n\n');
        }
        if (complete()) break;
        if (seq >= lastStored) open(); // caught up: from here on the stream is live
        arm(at);
      }
    } finally {
      clearTimeout(idle);
    }
    if (stop.signal.aborted) return 'client-left';
    if (!res.headersSent) {
      res.writeHead(204, { 'mcp-session-id': sessionId }).end();
      return 'complete';
    }
    res.end();
    return gone ? 'replica-gone' : 'delivered';
  }

  /** Stores an error answer for each unanswered request if nothing was stored after `lastSeq`; false when something was. */
  private async answerGone(
    subject: string,
    requests: RequestId[],
    answered: Set<RequestId>,
    maxN: number,
    lastSeq: number,
    firstAt: number | undefined,
  ): Promise<boolean> {
    const open = requests.filter((id) => !answered.has(id));
    let n = maxN;
    for (const [i, id] of open.entries()) {
      const message = {
        jsonrpc: '2.0',
        id,
        error: {
          code: McpErrorCode.InternalError,
          message:
            `The gateway replica serving this request stopped before it answered. A tools/call may still have run to its end: its outcome is recorded — ` +
            `read it with toolplane.v1.executions.list (this agent or tool set${firstAt ? `, started at ${new Date(firstAt).toISOString()}` : ''}). Calling again may run it twice.`,
          data: { code: ErrorCode.SERVICE_UNAVAILABLE, retryable: false, outcome_unknown: true },
        },
      };
      try {
        // The first answer is conditional (nothing stored since); the others follow it at once.
        const stored =
          i === 0
            ? await this.repo.appendIfLast(subject, { n: ++n, requests, message }, lastSeq)
            : (this.repo.append(subject, { n: ++n, requests, message }), true);
        if (!stored) return false;
      } catch (e) {
        this.log.warn(`could not answer a stream whose replica is gone: ${(e as Error).message}`);
        return false;
      }
    }
    return open.length > 0;
  }
}

/** The JSON-RPC id a stored event answers, when it is a response. */
function responseId(event: McpStreamEvent): RequestId | undefined {
  const m = event.message;
  if (!m || !('id' in m) || !('result' in m || 'error' in m)) return undefined;
  const id = m.id;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}
