import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { McpSessionClosed, McpSessionRelayed } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { EndpointToolsService } from '../tools/endpoint-tools.service';

interface OpenStream {
  org: string;
  endpoint: string;
  server: Server;
}

/**
 * What this replica is doing for sessions right now: the transports of requests it serves (a
 * tools/call may wait on the client: an elicitation, a cancellation), and the GET streams it
 * holds open (where list_changed goes). A client's message for a request of its session may
 * reach any replica: `relay` sends it, sealed, to every replica, and the one holding the request
 * hands it to its transport.
 */
@Injectable()
export class LiveSessions implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(LiveSessions.name);
  private readonly serving = new Map<string, Set<Transport>>();
  private readonly streams = new Map<string, Set<OpenStream>>();
  private readonly subs: Array<{ unsubscribe(): void } | (() => void)> = [];

  constructor(
    private readonly messaging: MessagingClient,
    private readonly endpointTools: EndpointToolsService,
  ) {}

  onModuleInit(): void {
    this.subs.push(
      this.messaging.subscribeSealed(McpSessionRelayed, (p) => this.deliver(p.session_id, p.message as JSONRPCMessage)),
      this.messaging.subscribeSealed(McpSessionClosed, (p) => this.closeStreams(p.session_id)),
      this.endpointTools.onListChanged((org, endpoint) => this.listChanged(org, endpoint)),
    );
  }

  onModuleDestroy(): void {
    for (const s of this.subs) (typeof s === 'function' ? s : () => s.unsubscribe())();
  }

  /** A transport serving a request of `sessionId` here, until `release`. */
  serve(sessionId: string, transport: Transport): () => void {
    let set = this.serving.get(sessionId);
    if (!set) this.serving.set(sessionId, (set = new Set()));
    set.add(transport);
    return () => {
      set.delete(transport);
      if (!set.size && this.serving.get(sessionId) === set) this.serving.delete(sessionId);
    };
  }

  /** A GET stream of the session, open here until `release`. */
  openStream(sessionId: string, stream: OpenStream): () => void {
    let set = this.streams.get(sessionId);
    if (!set) this.streams.set(sessionId, (set = new Set()));
    set.add(stream);
    return () => {
      set.delete(stream);
      if (!set.size && this.streams.get(sessionId) === set) this.streams.delete(sessionId);
    };
  }

  /** The client's responses and notifications of a session: to whichever replica serves its requests. */
  relay(sessionId: string, messages: JSONRPCMessage[]): void {
    for (const message of messages)
      this.messaging.notify(McpSessionRelayed, { session_id: sessionId, message: message as Record<string, unknown> });
  }

  get counts(): { serving: number; streams: number } {
    return { serving: this.serving.size, streams: this.streams.size };
  }

  private deliver(sessionId: string, message: JSONRPCMessage): void {
    for (const t of this.serving.get(sessionId) ?? []) t.onmessage?.(message);
  }

  private listChanged(org: string, endpoint: string | undefined): void {
    for (const set of this.streams.values()) {
      for (const s of set) {
        if (s.org !== org || (endpoint !== undefined && s.endpoint !== endpoint)) continue;
        s.server.sendToolListChanged().catch((e: Error) => this.log.debug(`list_changed not sent: ${e.message}`));
      }
    }
  }

  private closeStreams(sessionId: string): void {
    for (const s of this.streams.get(sessionId) ?? []) void s.server.close().catch(() => undefined);
    this.streams.delete(sessionId);
  }
}
