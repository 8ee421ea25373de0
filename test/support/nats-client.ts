import {
  connect,
  headers as natsHeaders,
  type ConnectionOptions,
  type MsgHdrs,
  type NatsConnection,
} from '@nats-io/transport-node';
import { Headers, requestDescriptorFor, type AppName } from '@toolplane/contracts';
import { natsUrl } from './env';
import { operatorToken, sealerOf } from './identity';

export interface ReqOptions {
  timeoutMs?: number;
  headers?: MsgHdrs;
  /**
   * The org token to send: by default one for the payload's `org_id` (minted once per org through
   * toolplane.v1.auth.tokens.create with the run's operator token; the operator token itself for
   * toolplane.v1.auth.*). `null` sends no authorization header.
   */
  token?: string | null;
  /**
   * Internal subjects: the service the request is sealed as (by default the subject's first
   * allowed caller, as that service would send it); `null` sends it unsealed, as an outsider.
   */
  as?: AppName | null;
}

/** Org tokens minted so far, per operator token and org (valid on every stack of the run: one key ring). */
const tokens = new Map<string, Promise<string>>();
/** The org whose token goes with payloads that name none (schemas.*). */
export const DEFAULT_TEST_ORG = 'tp-test-default';

/**
 * A raw NATS client, as any agent runtime would use: plain JSON bytes on a subject and an org
 * token in the `authorization` header, no Toolplane library in between.
 */
export class RawClient {
  private constructor(
    readonly nc: NatsConnection,
    readonly prefix: string,
    private readonly operator: () => string,
  ) {}

  /**
   * `operatorToken`: the platform operator token of a stack with its own key ring (default: the
   * run's); `nats`: another server or NATS credentials (an agent user: its inbox prefix too).
   */
  static async connect(
    prefix: string,
    opts: { operatorToken?: string; nats?: ConnectionOptions } = {},
  ): Promise<RawClient> {
    const operator = opts.operatorToken;
    return new RawClient(
      await connect({ servers: natsUrl(), name: 'test-client', noAsyncTraces: true, ...opts.nats }),
      prefix,
      operator ? () => operator : operatorToken,
    );
  }

  subject(s: string): string {
    return this.prefix ? `${this.prefix}.${s}` : s;
  }

  /** Sends `body` (an object is JSON-encoded; a string or bytes go as they are) and parses the reply. */
  async req<T = any>(subject: string, body: unknown, opts: ReqOptions = {}): Promise<T> {
    const data = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
    const headers = opts.headers ?? natsHeaders();
    const d = requestDescriptorFor(subject);
    const as = subject.startsWith('toolplane.internal.') && opts.as !== null ? (opts.as ?? d?.callers?.[0]) : undefined;
    if (as && d) {
      // As that service sends it: sealed to the serving app; the reply is opened the same way.
      const sealer = sealerOf(as);
      const sealed = sealer.sealRequest(
        this.subject(subject),
        d.servedBy,
        typeof data === 'string' ? new TextEncoder().encode(data) : data,
      );
      headers.set(Headers.SERVICE_SEAL, sealed.header);
      const msg = await this.nc.request(this.subject(subject), sealed.data, {
        timeout: opts.timeoutMs ?? 15_000,
        headers,
      });
      const seal = msg.headers?.get(Headers.SERVICE_SEAL) ?? '';
      const reply = seal ? sealer.openReply(this.subject(subject), d.servedBy, sealed.nonce, seal, msg.data) : msg.data;
      return JSON.parse(new TextDecoder().decode(reply)) as T;
    }
    if (opts.token !== null && !headers.has('authorization', 'insensitive')) {
      const token =
        opts.token ?? (subject.startsWith('toolplane.v1.auth.') ? this.operator() : await this.tokenFor(orgOf(body)));
      headers.set('authorization', `Bearer ${token}`);
    }
    const msg = await this.nc.request(this.subject(subject), data, { timeout: opts.timeoutMs ?? 15_000, headers });
    return JSON.parse(new TextDecoder().decode(msg.data)) as T;
  }

  /**
   * `req` for a test's setup steps: an error reply throws (naming the subject), except from
   * tools.execute, whose error replies are what the tests look at.
   */
  async call<T = any>(subject: string, body: Record<string, unknown>, timeoutMs: number): Promise<T> {
    const r = await this.req(subject, body, { timeoutMs });
    if (subject !== 'toolplane.v1.tools.execute' && r?.error) throw new Error(`${subject}: ${JSON.stringify(r.error)}`);
    return r as T;
  }

  /** An org token with every scope but admin (cached per org for the run). */
  tokenFor(org: string): Promise<string> {
    const key = `${this.operator()}\u0000${org}`;
    let t = tokens.get(key);
    if (!t) {
      t = this.mint(org, { name: 'tests' }).then((r) => r.token);
      tokens.set(key, t);
      t.catch(() => tokens.delete(key));
    }
    return t;
  }

  /** A fresh token through the public API (`toolplane.v1.auth.tokens.create`), as the operator or as `as`. */
  async mint(
    org: string,
    req: { name?: string; scopes?: string[]; ttl_s?: number; user_id?: string } = {},
    as?: string,
  ): Promise<{ token: string; token_id: string; scopes: string[]; expires_at: string }> {
    const r = await this.req(
      'toolplane.v1.auth.tokens.create',
      { org_id: org, name: req.name ?? 'tests', ...req },
      { token: as ?? this.operator() },
    );
    if (r.error) throw new Error(`could not mint a token for ${org}: ${r.error.code} ${r.error.message}`);
    return r;
  }

  headers(): MsgHdrs {
    return natsHeaders();
  }

  async close(): Promise<void> {
    await this.nc.close();
  }
}

/** The org a request names (its JSON `org_id`), else the default test org. */
function orgOf(body: unknown): string {
  let value = body;
  if (typeof body === 'string' || body instanceof Uint8Array) {
    try {
      value = JSON.parse(typeof body === 'string' ? body : new TextDecoder().decode(body));
    } catch {
      return DEFAULT_TEST_ORG;
    }
  }
  const org = (value as { org_id?: unknown } | null)?.org_id;
  return typeof org === 'string' && /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(org) ? org : DEFAULT_TEST_ORG;
}
