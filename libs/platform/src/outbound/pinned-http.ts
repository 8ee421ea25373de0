import { ToolplaneError } from '@toolplane/contracts';
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { bare, type UrlGuard } from './url-guard';

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface PinnedHttpOptions {
  /**
   * How long a host's vetted addresses are used before a request resolves and vets the name again
   * (open keep-alive sockets stay where they are). Default: for the life of this object.
   */
  ttlMs?: number;
  /** Bound on establishing one TCP (and TLS) connection; undici's default (10 s) when absent. */
  connectTimeoutMs?: number;
}

interface Pin {
  addresses: LookupAddress[];
  expiresAt: number;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** Hosts kept before expired pins are swept (a pin set is per connection or per service: small). */
const SWEEP_AT = 256;

/**
 * Outbound HTTP on a tenant's behalf (MCP servers, OAuth endpoints, fetch_webpage) with the SSRF decision pinned to the connection
 * (no DNS rebinding): a host name is resolved and every address vetted by the UrlGuard once (per
 * `ttlMs`), and the sockets of this object's undici Agent connect only to those addresses — its
 * `lookup` answers from the pins and never asks DNS, and every new socket (redirect targets
 * included, IP literals too) is vetted before it connects. TLS SNI, certificate checks and the
 * Host header keep the URL's host name. A request to a pinned host costs a map lookup, no DNS.
 */
export class PinnedHttp {
  private readonly pins = new Map<string, Pin>();
  private readonly pending = new Map<string, Promise<Pin>>();
  private readonly agent: Agent;
  private readonly ttlMs: number;

  constructor(
    private readonly guard: UrlGuard,
    opts: PinnedHttpOptions = {},
  ) {
    this.ttlMs = opts.ttlMs ?? Infinity;
    const connect = buildConnector({
      allowH2: false,
      ...(opts.connectTimeoutMs !== undefined ? { timeout: opts.connectTimeoutMs } : {}),
      lookup: (hostname: string, options: unknown, callback: LookupCallback) =>
        this.lookup(hostname, options, callback),
    } as buildConnector.BuildOptions);
    this.agent = new Agent({
      allowH2: false,
      // Every new socket: a host this object has not vetted yet (a redirect target) is vetted
      // first; a pinned host keeps its pin (a request refreshes an expired one in `vet`).
      connect: (options, callback) => {
        this.pin(options.hostname, `${options.protocol}//${options.host ?? options.hostname}`, true).then(
          () => connect(options, callback),
          (e: Error) => callback(e, null),
        );
      },
    });
  }

  /**
   * Checks a URL before a request: http(s) only, the host vetted and pinned (resolved at most once
   * per ttl). Throws the guard's refusal (EgressRefused) or its `unresolved` error.
   */
  async vet(rawUrl: string | URL): Promise<URL> {
    const url = this.guard.parse(rawUrl);
    await this.pin(url.hostname, url.origin);
    return url;
  }

  /** A WHATWG fetch whose connections go only to vetted addresses (for the SDK transports' `fetch` option). */
  readonly fetch: FetchLike = async (input, init) => {
    let target: string | URL;
    let request: RequestInit | undefined = init;
    if (typeof input === 'string' || input instanceof URL) target = input;
    else {
      target = input.url;
      request = {
        method: input.method,
        headers: input.headers,
        body: input.body,
        signal: input.signal,
        duplex: 'half',
        ...init,
      } as RequestInit;
    }
    await this.vet(target);
    try {
      return (await undiciFetch(target, { ...request, dispatcher: this.agent } as Parameters<
        typeof undiciFetch
      >[1])) as unknown as Response;
    } catch (e) {
      // A refusal at connect time (a redirect to a refused host) comes back as fetch's cause.
      const cause = (e as { cause?: unknown }).cause;
      if (cause instanceof ToolplaneError) throw cause;
      throw e;
    }
  };

  /** The addresses a host is pinned to now (tests, diagnostics). */
  pinned(hostname: string): string[] {
    return (this.pins.get(bare(hostname))?.addresses ?? []).map((a) => a.address);
  }

  /** Closes every socket (in-flight requests fail); the pins go too. */
  async close(): Promise<void> {
    this.pins.clear();
    await this.agent.destroy().catch(() => undefined);
  }

  /**
   * The vetted addresses of a host: resolved and checked once, then reused until they expire (or,
   * with `anyAge`, as long as there are some).
   */
  private pin(hostname: string, where?: string, anyAge = false): Promise<Pin> {
    const host = bare(hostname);
    const hit = this.pins.get(host);
    if (hit && (anyAge || hit.expiresAt > Date.now())) return Promise.resolve(hit);
    let p = this.pending.get(host);
    if (!p) {
      p = this.guard
        .vetHost(host, where)
        .then((addresses) => {
          if (this.pins.size >= SWEEP_AT)
            for (const [k, v] of this.pins) if (v.expiresAt <= Date.now()) this.pins.delete(k);
          const pin: Pin = {
            addresses: addresses.map((address) => ({ address, family: isIP(address) })),
            expiresAt: Date.now() + this.ttlMs,
          };
          this.pins.set(host, pin);
          return pin;
        })
        .finally(() => this.pending.delete(host));
      this.pending.set(host, p);
    }
    return p;
  }

  /**
   * net.connect's `lookup`: only the pinned addresses (expired or not: they were vetted, and the
   * connector pins a host before its first socket), never DNS. An unpinned name fails with ENOTFOUND.
   */
  private lookup(hostname: string, options: unknown, callback: LookupCallback): void {
    const o = (typeof options === 'number' ? { family: options } : (options ?? {})) as {
      family?: number | string;
      all?: boolean;
    };
    const family = o.family === 'IPv4' ? 4 : o.family === 'IPv6' ? 6 : Number(o.family ?? 0);
    let addresses = this.pins.get(bare(hostname))?.addresses ?? [];
    if (family === 4 || family === 6) addresses = addresses.filter((a) => a.family === family);
    if (addresses.length === 0) {
      const err: NodeJS.ErrnoException = Object.assign(new Error(`${hostname} has no vetted address`), {
        code: 'ENOTFOUND',
        hostname,
      });
      process.nextTick(() => callback(err, o.all ? [] : '', 0));
      return;
    }
    const first = addresses[0]!;
    process.nextTick(() =>
      o.all
        ? callback(
            null,
            addresses.map((a) => ({ ...a })),
          )
        : callback(null, first.address, first.family),
    );
  }
}
