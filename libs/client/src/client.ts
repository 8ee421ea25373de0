import {
  connect,
  headers as natsHeaders,
  type ConnectionOptions,
  type MsgHdrs,
  type NatsConnection,
} from '@nats-io/transport-node';
import { context, propagation, trace, type TextMapSetter } from '@opentelemetry/api';
import {
  ErrorEnvelope,
  FINAL_EXECUTION_STATES,
  Headers,
  type ExecutionRecord,
  type ReplyOf,
  type RequestDescriptor,
  type RequestIn,
} from '@toolplane/contracts';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { API, buildFacade, type CallOptions, type Facade, type RetryPolicy } from './api';
import { ClientErrorCode, ToolplaneError } from './errors';
import { subscribeEvents, type EventsOptions, type ToolplaneEvent } from './events';
import { backoffDelay, DEFAULT_RETRY, isIdempotent, sleep } from './retry';

export interface ClientOptions {
  /** An open NATS connection (the caller owns it), or the options to open one (URL, token, creds, TLS). */
  nats: NatsConnection | ConnectionOptions;
  /** The org token (`authorization: Bearer …` on every request), or a function giving the current one. */
  token?: string | (() => string);
  /** The org every request is for: filled into requests that name no `org_id`. */
  org?: string;
  /** The deployment's subject prefix (test stacks prefix every subject); empty in production. */
  prefix?: string;
  /** Each attempt's reply timeout (default 15 s). */
  timeoutMs?: number;
  /** Retries of retryable errors on idempotent calls (default 4 attempts, 100 ms base, 2 s cap). */
  retry?: Partial<RetryPolicy>;
  /** How `events()` checks who published each event, by default: the services' keys (`publisherKeys` or `keysDir`), or `verify: false`. */
  events?: Pick<EventsOptions, 'publisherKeys' | 'keysDir' | 'verify'>;
}

const setter: TextMapSetter<MsgHdrs> = { set: (carrier, key, value) => carrier.set(key, value) };
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The Toolplane client of an agent runtime or operator tool: one typed method per public subject
 * (`client.tools.get({...})`, generated from the contracts' descriptors), plus the helpers an agent
 * step needs. Errors reject with `ToolplaneError`.
 */
export class ToolplaneClient {
  readonly tools: Facade<typeof API.tools>;
  readonly agents: Facade<typeof API.agents>;
  readonly toolsets: Facade<typeof API.toolsets>;
  readonly schemas: Facade<typeof API.schemas>;
  readonly executions: Facade<typeof API.executions>;
  readonly secrets: Facade<typeof API.secrets>;
  readonly webhooks: Facade<typeof API.webhooks>;
  readonly sandboxConfigs: Facade<typeof API.sandboxConfigs>;
  readonly mcp: Facade<typeof API.mcp>;
  readonly connections: Facade<typeof API.connections>;
  readonly auth: Facade<typeof API.auth>;
  readonly prefix: string;
  private readonly retryPolicy: RetryPolicy;

  private constructor(
    readonly nc: NatsConnection,
    private readonly owned: boolean,
    private readonly opts: ClientOptions,
  ) {
    this.prefix = opts.prefix ?? '';
    this.retryPolicy = { ...DEFAULT_RETRY, ...opts.retry };
    const api = buildFacade(API, (d: RequestDescriptor, req: unknown, o?: CallOptions) =>
      this.call(d, req as never, o),
    );
    this.tools = api.tools;
    this.agents = api.agents;
    this.toolsets = api.toolsets;
    this.schemas = api.schemas;
    this.executions = api.executions;
    this.secrets = api.secrets;
    this.webhooks = api.webhooks;
    this.sandboxConfigs = api.sandboxConfigs;
    this.mcp = api.mcp;
    this.connections = api.connections;
    this.auth = api.auth;
  }

  static async connect(opts: ClientOptions): Promise<ToolplaneClient> {
    const given = 'request' in opts.nats && typeof (opts.nats as NatsConnection).request === 'function';
    const nc = given
      ? (opts.nats as NatsConnection)
      : await connect({ name: 'toolplane-client', noAsyncTraces: true, ...(opts.nats as ConnectionOptions) });
    return new ToolplaneClient(nc, !given, opts);
  }

  /** The same connection and settings with another token (e.g. an operator's for `auth.*`). */
  withToken(token: string | (() => string)): ToolplaneClient {
    return new ToolplaneClient(this.nc, false, { ...this.opts, token });
  }

  /**
   * Calls any request descriptor (also one newer than this facade): validates the request, sends it
   * with the token and the active trace context, maps an error envelope to `ToolplaneError`, and
   * retries retryable failures of idempotent calls with backoff and jitter.
   */
  async call<D extends RequestDescriptor>(d: D, req: RequestIn<D>, opts: CallOptions = {}): Promise<ReplyOf<D>> {
    const body = this.withOrg(req);
    const checked = d.request.safeParse(body);
    if (!checked.success) {
      throw new ToolplaneError({
        code: ClientErrorCode.CONTRACT_VIOLATION,
        message: checked.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '),
        retryable: false,
        subject: d.subject,
      });
    }
    const policy = opts.retry === false ? { ...this.retryPolicy, attempts: 1 } : { ...this.retryPolicy, ...opts.retry };
    const attempts = isIdempotent(d, body) ? Math.max(1, policy.attempts) : 1;
    const data = encoder.encode(JSON.stringify(body));
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(d, data, opts);
      } catch (e) {
        if (!(e instanceof ToolplaneError) || !e.retryable || attempt >= attempts || opts.signal?.aborted) throw e;
        await sleep(backoffDelay(policy, attempt - 1), opts.signal).catch(() => {
          throw aborted(d.subject);
        });
      }
    }
  }

  private async once<D extends RequestDescriptor>(d: D, data: Uint8Array, opts: CallOptions): Promise<ReplyOf<D>> {
    if (opts.signal?.aborted) throw aborted(d.subject);
    const h = natsHeaders();
    propagation.inject(context.active(), h, setter);
    const token = typeof this.opts.token === 'function' ? this.opts.token() : this.opts.token;
    if (token) h.set(Headers.AUTHORIZATION, `Bearer ${token}`);
    const traceId = trace.getSpanContext(context.active())?.traceId ?? '';
    const subject = this.prefix ? `${this.prefix}.${d.subject}` : d.subject;
    const request = this.nc.request(subject, data, {
      timeout: opts.timeoutMs ?? this.opts.timeoutMs ?? 15_000,
      headers: h,
    });
    let msg;
    if (opts.signal) {
      const signal = opts.signal;
      let onAbort: () => void = () => undefined;
      const abortP = new Promise<never>((_, reject) => {
        onAbort = () => reject(aborted(d.subject));
        signal.addEventListener('abort', onAbort, { once: true });
      });
      request.catch(() => undefined);
      try {
        msg = await Promise.race([request, abortP]).catch((e) => {
          throw e instanceof ToolplaneError ? e : ToolplaneError.fromTransport(d.subject, e as unknown, traceId);
        });
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    } else {
      msg = await request.catch((e) => {
        throw ToolplaneError.fromTransport(d.subject, e, traceId);
      });
    }
    let json: unknown;
    try {
      json = JSON.parse(decoder.decode(msg.data));
    } catch {
      throw new ToolplaneError({
        code: ClientErrorCode.MALFORMED_REPLY,
        message: `${d.subject} answered with something other than JSON`,
        retryable: false,
        trace_id: traceId,
        subject: d.subject,
      });
    }
    if (json && typeof json === 'object' && 'error' in json) {
      const env = ErrorEnvelope.safeParse(json);
      if (env.success) throw ToolplaneError.fromEnvelope(d.subject, env.data.error);
    }
    const reply = d.reply.safeParse(json);
    if (!reply.success) {
      throw new ToolplaneError({
        code: ClientErrorCode.MALFORMED_REPLY,
        message: `${d.subject} answered outside its contract: ${reply.error.issues[0]?.message ?? ''}`,
        retryable: false,
        trace_id: traceId,
        subject: d.subject,
      });
    }
    return reply.data as ReplyOf<D>;
  }

  private withOrg(req: unknown): unknown {
    if (!this.opts.org || !req || typeof req !== 'object' || 'org_id' in req) return req;
    return { org_id: this.opts.org, ...req };
  }

  /**
   * Every item of a paginated list, page after page (`cursor` / `next_cursor`), e.g.
   * `for await (const t of client.paginate(client.tools.list, {org_id}, 'tools'))`.
   */
  async *paginate<Req extends { cursor?: string }, K extends string, Item>(
    method: (req: Req, opts?: CallOptions) => Promise<{ [k in K]: Item[] } & { next_cursor?: string | null }>,
    req: Req,
    key: K,
    opts?: CallOptions,
  ): AsyncGenerator<Item> {
    let cursor = req.cursor;
    do {
      const page = await method({ ...req, cursor }, opts);
      for (const item of page[key]) yield item;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** Registers (creates or updates) the Python tool in `path`; its name defaults to the function's. */
  async registerPythonFile(
    path: string,
    tool: Partial<RequestIn<typeof API.tools.upsert>['tool']> = {},
    opts?: CallOptions,
  ): Promise<ReplyOf<typeof API.tools.upsert>['tool']> {
    const source_code = await readFile(path, 'utf8');
    if (!source_code.trim())
      throw new ToolplaneError({
        code: ClientErrorCode.CONTRACT_VIOLATION,
        message: `${basename(path)} is empty`,
        retryable: false,
        subject: API.tools.upsert.subject,
      });
    const r = await this.tools.upsert(
      { org_id: this.requireOrg(), tool: { ...tool, source_code, source_type: 'python' } } as RequestIn<
        typeof API.tools.upsert
      >,
      opts,
    );
    return r.tool;
  }

  /** The model-ready tool definitions of an agent (default format openai_chat). */
  definitionsFor(
    agentId: string,
    req: Partial<RequestIn<typeof API.agents.tools.definitions>> = {},
    opts?: CallOptions,
  ): Promise<ReplyOf<typeof API.agents.tools.definitions>> {
    return this.agents.tools.definitions(
      { org_id: this.requireOrg(), agent_id: agentId, format: 'openai_chat', ...req } as RequestIn<
        typeof API.agents.tools.definitions
      >,
      opts,
    );
  }

  /** Runs the tool calls of one agent step (results in input order; one failure never fails the batch). */
  executeBatch(
    calls: RequestIn<typeof API.tools.executeBatch>['calls'],
    req: Partial<RequestIn<typeof API.tools.executeBatch>> = {},
    opts?: CallOptions,
  ): Promise<ReplyOf<typeof API.tools.executeBatch>> {
    return this.tools.executeBatch(
      { org_id: this.requireOrg(), ...req, calls } as RequestIn<typeof API.tools.executeBatch>,
      opts,
    );
  }

  /**
   * Waits until an execution reaches a final state (succeeded, failed, denied, expired) by polling
   * `executions.get`, and returns its record and result. EXECUTION_NOT_FOUND right after an
   * execute (its record is written just after) is waited out too. Abort with `signal`.
   */
  async waitFor(
    executionId: string,
    opts: {
      intervalMs?: number;
      timeoutMs?: number;
      signal?: AbortSignal;
      until?: (e: ExecutionRecord) => boolean;
    } = {},
  ): Promise<ReplyOf<typeof API.executions.get>> {
    const deadline = Date.now() + (opts.timeoutMs ?? 5 * 60_000);
    const done = opts.until ?? ((e: ExecutionRecord) => FINAL_EXECUTION_STATES.has(e.status));
    let interval = opts.intervalMs ?? 100;
    for (;;) {
      try {
        const r = await this.executions.get(
          { org_id: this.requireOrg(), execution_id: executionId } as RequestIn<typeof API.executions.get>,
          { signal: opts.signal },
        );
        if (done(r.execution)) return r;
      } catch (e) {
        if (!(e instanceof ToolplaneError && e.code === 'EXECUTION_NOT_FOUND')) throw e;
      }
      if (Date.now() >= deadline) {
        throw new ToolplaneError({
          code: ClientErrorCode.REQUEST_TIMEOUT,
          message: `execution ${executionId} did not finish in time`,
          retryable: true,
          subject: API.executions.get.subject,
        });
      }
      await sleep(interval, opts.signal).catch(() => {
        throw aborted(API.executions.get.subject);
      });
      interval = Math.min(interval * 1.5, 2_000);
    }
  }

  /** Typed events from the JetStream stream TOOLPLANE_EVENTS (ordered consumer; see `EventsOptions`). */
  events(opts: EventsOptions = {}): AsyncGenerator<ToolplaneEvent> {
    return subscribeEvents(this.nc, this.prefix, { ...this.opts.events, ...opts });
  }

  /** Closes the connection if the client opened it. */
  async close(): Promise<void> {
    if (this.owned) await this.nc.close();
  }

  private requireOrg(): string {
    if (!this.opts.org)
      throw new ToolplaneError({
        code: ClientErrorCode.CONTRACT_VIOLATION,
        message: 'this helper needs the client option `org`',
        retryable: false,
        subject: '',
      });
    return this.opts.org;
  }
}

function aborted(subject: string): ToolplaneError {
  return new ToolplaneError({
    code: ClientErrorCode.ABORTED,
    message: `${subject}: aborted`,
    retryable: false,
    subject,
  });
}
