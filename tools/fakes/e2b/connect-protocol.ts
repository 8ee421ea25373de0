/**
 * The server side of the Connect protocol (https://connectrpc.com/docs/protocol) as envd speaks it
 * to the e2b SDK: JSON encoding only, because the SDK's transport is
 * `createConnectTransport({ useBinaryFormat: false })` (e2b `Sandbox` constructor), no compression
 * (connect-web neither sends nor accepts any).
 *
 * - Unary: `POST /<package.Service>/<Method>`, `Content-Type: application/json`, the request
 *   message as a JSON body; the answer is 200 with the response message as JSON, or an error
 *   status (connect's `codeToHttpStatus`) with `{"code": "<snake_case code>", "message": ...}`.
 * - Server streaming: `Content-Type: application/connect+json`, request and response bodies are
 *   envelopes — 1 flags byte, 4-byte big-endian length, the JSON message. The response is always
 *   200; the last envelope has flag 0x02 (end of stream) and carries `{}` or `{"error": {...}}`.
 *   connect-web throws "missing EndStreamResponse" when a stream closes without one.
 * - `Connect-Timeout-Ms`: the deadline the client set (`timeoutMs` of `commands.run`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export type ConnectCode =
  | 'canceled'
  | 'unknown'
  | 'invalid_argument'
  | 'deadline_exceeded'
  | 'not_found'
  | 'already_exists'
  | 'permission_denied'
  | 'resource_exhausted'
  | 'failed_precondition'
  | 'aborted'
  | 'out_of_range'
  | 'unimplemented'
  | 'internal'
  | 'unavailable'
  | 'data_loss'
  | 'unauthenticated';

/** HTTP status of a unary error, as connect's `codeToHttpStatus` (protocol-connect/http-status.js). */
const HTTP_STATUS: Record<ConnectCode, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

/** An RPC failure with its Connect code: what the SDK's `handleRpcError` maps to its typed errors. */
export class RpcError extends Error {
  constructor(
    readonly code: ConnectCode,
    message: string,
  ) {
    super(message);
  }
}

export const CONTENT_TYPE_UNARY = 'application/json';
export const CONTENT_TYPE_STREAM = 'application/connect+json';
const FLAG_END_STREAM = 0x02;
const FLAG_COMPRESSED = 0x01;

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function envelope(flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** The one request message of a server-streaming call (connect-web sends exactly one envelope). */
export function parseStreamRequest(body: Buffer): unknown {
  if (body.length < 5) throw new RpcError('invalid_argument', 'protocol error: incomplete envelope');
  const flags = body.readUInt8(0);
  const length = body.readUInt32BE(1);
  if (flags & FLAG_COMPRESSED) throw new RpcError('internal', 'protocol error: compressed messages are not supported');
  if (body.length < 5 + length) throw new RpcError('invalid_argument', 'protocol error: incomplete envelope');
  return parseJson(body.subarray(5, 5 + length));
}

export function parseUnaryRequest(body: Buffer): unknown {
  return body.length === 0 ? {} : parseJson(body);
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new RpcError('invalid_argument', 'unmarshal message: invalid JSON');
  }
}

/** `Connect-Timeout-Ms` (at most 10 digits, per the protocol), or undefined for no deadline. */
export function parseTimeoutMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value || !/^\d{1,10}$/.test(value)) return undefined;
  return Number(value);
}

export function sendUnary(res: ServerResponse, message: unknown): void {
  const body = Buffer.from(JSON.stringify(message));
  res.writeHead(200, { 'content-type': CONTENT_TYPE_UNARY, 'content-length': body.length }).end(body);
}

export function sendUnaryError(res: ServerResponse, error: RpcError): void {
  const body = Buffer.from(JSON.stringify({ code: error.code, message: error.message }));
  res
    .writeHead(HTTP_STATUS[error.code], { 'content-type': CONTENT_TYPE_UNARY, 'content-length': body.length })
    .end(body);
}

/**
 * The response side of one server-streaming call. Writes are chained so `destroy` can cut the
 * connection after everything already sent has reached the socket (what a dropped proxy or a dead
 * sandbox VM looks like to the client: undici reports `terminated`).
 */
export class ServerStream {
  private pending: Promise<void> = Promise.resolve();
  private finished = false;
  private readonly closeHandlers: Array<() => void> = [];

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, { 'content-type': CONTENT_TYPE_STREAM });
    res.flushHeaders();
    res.on('close', () => {
      this.finished = true;
      for (const handler of this.closeHandlers.splice(0)) handler();
    });
  }

  /** The stream ended (normally, by error, or because the client or the fake cut it). */
  get closed(): boolean {
    return this.finished;
  }

  onClose(handler: () => void): void {
    if (this.finished) handler();
    else this.closeHandlers.push(handler);
  }

  send(message: unknown): Promise<void> {
    return this.write(envelope(0, Buffer.from(JSON.stringify(message))));
  }

  /** The end-of-stream envelope (`{}` or `{"error": {code, message}}`), then the end of the body. */
  end(error?: RpcError): Promise<void> {
    if (this.finished) return this.pending;
    const endStream = error ? { error: { code: error.code, message: error.message } } : {};
    const done = this.write(envelope(FLAG_END_STREAM, Buffer.from(JSON.stringify(endStream))));
    this.finished = true;
    return (this.pending = done.then(() => new Promise<void>((resolve) => this.res.end(resolve))));
  }

  /** Cuts the connection (no end-of-stream envelope) once what was already written is flushed. */
  destroy(): Promise<void> {
    this.finished = true;
    return (this.pending = this.pending.then(() => {
      if (!this.res.writableEnded) this.res.destroy();
    }));
  }

  private write(chunk: Buffer): Promise<void> {
    if (this.finished) return this.pending;
    this.pending = this.pending.then(
      () =>
        new Promise<void>((resolve) => {
          if (this.res.destroyed) return resolve();
          this.res.write(chunk, () => resolve());
        }),
    );
    return this.pending;
  }
}
