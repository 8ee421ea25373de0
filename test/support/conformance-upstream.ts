/**
 * An MCP server that does what the official conformance suite's server scenarios
 * (@modelcontextprotocol/conformance) ask of the tools they call — `test_simple_text`,
 * `test_image_content`, `test_audio_content`, `test_embedded_resource`,
 * `test_multiple_content_types`, `test_error_handling`, `test_tool_with_progress`,
 * `test_reconnection` and `json_schema_2020_12_tool` — so that the gateway can be tested with
 * the suite: this server synced into an org, its tools attached to an agent, the suite pointed at
 * the agent's endpoint. Built on the SDK's low-level `Server` (tool definitions go out exactly as
 * written here, JSON Schema 2020-12 keywords included) over Streamable HTTP on a loopback port,
 * stateful, with an event store so that `test_reconnection` can close its stream mid-call and
 * the client resume it (SEP-1699). Resources, prompts, completion, logging, sampling and
 * elicitation are left out: the gateway serves tools only.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport, type EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type JSONRPCMessage,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { crc32, deflateSync } from 'node:zlib';
import { LoopbackMcpServer, sleep } from './mcp-servers';

/** A 1×1 red PNG, built here rather than pasted: signature, IHDR, IDAT (one filtered row), IEND. */
function redPixelPng(): string {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]); // 1×1, 8 bits, RGB
  const idat = deflateSync(Buffer.from([0, 255, 0, 0])); // filter 0, one red pixel
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', idat),
    chunk('IEND', Buffer.alloc(0)),
  ]).toString('base64');
}

/** 10 ms of silence as a WAV: RIFF header, 16-bit mono PCM at 8 kHz. */
function silentWav(): string {
  const samples = 80;
  const b = Buffer.alloc(44 + samples * 2);
  b.write('RIFF', 0, 'latin1');
  b.writeUInt32LE(36 + samples * 2, 4);
  b.write('WAVEfmt ', 8, 'latin1');
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20); // PCM
  b.writeUInt16LE(1, 22); // mono
  b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(16000, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36, 'latin1');
  b.writeUInt32LE(samples * 2, 40);
  return b.toString('base64');
}

export const PNG = redPixelPng();
export const WAV = silentWav();
const noArgs = { type: 'object', properties: {} } as const;

type Extra = { notify: (progress: number, total: number) => Promise<void>; closeStream?: () => void };
interface ConformanceTool {
  def: Tool;
  run: (extra: Extra) => Promise<CallToolResult>;
}

/** The tools, as the suite's scenario descriptions specify them (names, arguments, results). */
export const CONFORMANCE_TOOLS: ConformanceTool[] = [
  {
    def: {
      name: 'test_simple_text',
      title: 'Simple text',
      description: 'Returns a simple text response.',
      inputSchema: noArgs,
    },
    run: async () => ({ content: [{ type: 'text', text: 'This is a simple text response for testing.' }] }),
  },
  {
    def: { name: 'test_image_content', description: 'Returns a 1x1 red PNG.', inputSchema: noArgs },
    run: async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }),
  },
  {
    def: { name: 'test_audio_content', description: 'Returns a short silent WAV.', inputSchema: noArgs },
    run: async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }),
  },
  {
    def: { name: 'test_embedded_resource', description: 'Returns an embedded text resource.', inputSchema: noArgs },
    run: async () => ({
      content: [
        {
          type: 'resource',
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.',
          },
        },
      ],
    }),
  },
  {
    def: {
      name: 'test_multiple_content_types',
      description: 'Returns text, an image and a resource.',
      inputSchema: noArgs,
    },
    run: async () => ({
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: {
            uri: 'test://mixed-content-resource',
            mimeType: 'application/json',
            text: JSON.stringify({ test: 'data', value: 123 }),
          },
        },
      ],
    }),
  },
  {
    def: { name: 'test_error_handling', description: 'Always fails (a tool error).', inputSchema: noArgs },
    run: async () => ({
      isError: true,
      content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
    }),
  },
  {
    def: {
      name: 'test_tool_with_progress',
      description: 'Reports progress 0, 50 and 100 of 100, 50 ms apart.',
      inputSchema: noArgs,
    },
    run: async ({ notify }) => {
      for (const p of [0, 50, 100]) {
        if (p) await sleep(50);
        await notify(p, 100);
      }
      return { content: [{ type: 'text', text: 'Progress reported: 0, 50, 100 of 100.' }] };
    },
  },
  {
    def: {
      name: 'test_reconnection',
      description: 'Closes its SSE stream mid-call, then answers (the client resumes with Last-Event-ID).',
      inputSchema: noArgs,
    },
    run: async ({ closeStream }) => {
      await sleep(20);
      closeStream?.();
      await sleep(150);
      return { content: [{ type: 'text', text: 'Answered after the stream was closed.' }] };
    },
  },
  {
    def: {
      name: 'json_schema_2020_12_tool',
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
        additionalProperties: false,
      },
    },
    run: async () => ({ content: [{ type: 'text', text: 'ok' }] }),
  },
];

/** Events of every stream, kept for replay after a Last-Event-ID (ids are `<stream>_<n>`). */
class MemoryEventStore implements EventStore {
  private readonly events: Array<{ id: string; stream: string; message: JSONRPCMessage }> = [];
  private n = 0;

  async storeEvent(stream: string, message: JSONRPCMessage): Promise<string> {
    const id = `${stream}_${++this.n}`;
    this.events.push({ id, stream, message });
    return id;
  }

  async getStreamIdForEventId(id: string): Promise<string | undefined> {
    return this.events.find((e) => e.id === id)?.stream;
  }

  async replayEventsAfter(
    lastId: string,
    { send }: { send: (id: string, m: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const at = this.events.findIndex((e) => e.id === lastId);
    const stream = this.events[at]?.stream ?? '';
    for (const e of this.events.slice(at + 1))
      if (e.stream === stream && Object.keys(e.message).length) await send(e.id, e.message);
    return stream;
  }
}

export class ConformanceUpstream extends LoopbackMcpServer {
  /** Tool calls served, by name (what reached this server through the gateway). */
  readonly calls: string[] = [];

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const s = this.sessions.get(sid);
      if (!s) {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      if (req.method === 'DELETE') this.sessions.delete(sid);
      await s.transport.handleRequest(req, res);
      return;
    }
    const server = this.makeServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new MemoryEventStore(),
      retryInterval: 100,
      onsessioninitialized: (id) => void this.sessions.set(id, { transport, server }),
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }

  private makeServer(): Server {
    const server = new Server({ name: 'conformance-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: CONFORMANCE_TOOLS.map((t) => t.def) }));
    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      const tool = CONFORMANCE_TOOLS.find((t) => t.def.name === req.params.name);
      this.calls.push(req.params.name);
      if (!tool) return { isError: true, content: [{ type: 'text', text: `Unknown tool: ${req.params.name}` }] };
      const progressToken = req.params._meta?.progressToken;
      const notify = async (progress: number, total: number) => {
        if (progressToken !== undefined)
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress, total },
          });
      };
      return tool.run({ notify, closeStream: extra.closeSSEStream });
    });
    return server;
  }
}
