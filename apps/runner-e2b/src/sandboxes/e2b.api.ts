import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import {
  AuthenticationError,
  CommandExitError,
  NotFoundError,
  RateLimitError,
  Sandbox,
  SandboxError,
  ServiceBusyError,
  TimeoutError,
  type SandboxInfo,
} from 'e2b';
import type { E2bRunnerConfig } from '../runner-e2b.config';

/** The E2B connection of one org: its API key (from its provider-scoped secret, else the runner's) and the endpoints. */
export interface E2bAccount {
  apiKey: string;
}

/**
 * The only user of the `e2b` SDK's control plane: every call names the org's key explicitly (the
 * SDK never falls back to a process-wide E2B_API_KEY for an org) and the endpoints of the config.
 */
export class E2bApi {
  constructor(private readonly c: E2bRunnerConfig) {}

  /** Connection options of one org's requests (apiUrl/sandboxUrl: the SDK's own options, typed internal). */
  connection(account: E2bAccount) {
    return {
      apiKey: account.apiKey,
      ...(this.c.E2B_API_URL ? { apiUrl: this.c.E2B_API_URL } : {}),
      ...(this.c.E2B_SANDBOX_URL ? { sandboxUrl: this.c.E2B_SANDBOX_URL } : {}),
      ...(this.c.E2B_DOMAIN ? { domain: this.c.E2B_DOMAIN } : {}),
      requestTimeoutMs: this.c.E2B_REQUEST_TIMEOUT_MS,
      retries: this.c.E2B_API_RETRIES,
    };
  }

  create(
    account: E2bAccount,
    o: { template: string; metadata: Record<string, string>; timeoutMs: number; network: boolean; allowOut: string[] },
  ): Promise<Sandbox> {
    return Sandbox.create(o.template, {
      ...this.connection(account),
      metadata: o.metadata,
      timeoutMs: o.timeoutMs,
      // No internet: everything denied but the package index hosts (pip and npm run in the sandbox).
      ...(o.network
        ? { allowInternetAccess: true }
        : o.allowOut.length
          ? { network: { denyOut: ['0.0.0.0/0'], allowOut: o.allowOut } }
          : { allowInternetAccess: false }),
    });
  }

  connect(account: E2bAccount, sandboxId: string, timeoutMs: number): Promise<Sandbox> {
    return Sandbox.connect(sandboxId, { ...this.connection(account), timeoutMs });
  }

  /** Every running sandbox of the account carrying all these metadata tags. */
  async list(account: E2bAccount, metadata: Record<string, string>): Promise<SandboxInfo[]> {
    const pages = Sandbox.list({ ...this.connection(account), query: { metadata, state: ['running'] } } as Parameters<
      typeof Sandbox.list
    >[0]);
    const out: SandboxInfo[] = [];
    while (pages.hasNext && out.length < 10_000) out.push(...(await pages.nextItems()));
    return out;
  }

  kill(account: E2bAccount, sandboxId: string): Promise<boolean> {
    return Sandbox.kill(sandboxId, this.connection(account) as Parameters<typeof Sandbox.kill>[1]);
  }
}

/** The sandbox is gone (killed, expired, never existed): its calls end, it leaves the pool. */
export function isSandboxGone(e: unknown): boolean {
  if (e instanceof NotFoundError) return true; // SandboxNotFoundError, and envd's 404 for a sandbox
  if (e instanceof TimeoutError && /killed|end of life|not found|timeout/i.test(e.message)) return true;
  return e instanceof SandboxError && e.statusCode === 404;
}

/** A command that exited non-zero: its exit code (the SDK throws for it). */
export function exitCodeOf(e: unknown): number | undefined {
  return e instanceof CommandExitError ? e.exitCode : undefined;
}

/**
 * The typed error of an E2B failure before the tool started (the org's fallback list applies to
 * PROVIDER_UNAVAILABLE and PROVIDER_RATE_LIMITED). The message never carries the API key.
 */
export function providerError(e: unknown, account: E2bAccount | undefined, what: string): ToolplaneError {
  if (e instanceof ToolplaneError) return e;
  const raw = e instanceof Error ? e.message : String(e);
  const message = scrub(`${what}: ${raw}`, account);
  const status = e instanceof SandboxError ? e.statusCode : undefined;
  if (e instanceof AuthenticationError || status === 401 || status === 403) {
    return new ToolplaneError(
      ErrorCode.PROVIDER_AUTH_FAILED,
      `E2B refused the API key (${message}): set the org's sandbox secret E2B_API_KEY (provider e2b)`,
      { provider: 'e2b' },
    );
  }
  if (e instanceof RateLimitError || status === 429)
    return new ToolplaneError(ErrorCode.PROVIDER_RATE_LIMITED, `E2B is rate-limiting this account (${message})`, {
      provider: 'e2b',
    });
  if (e instanceof ServiceBusyError || (status !== undefined && status >= 500) || /^5\d\d:/.test(raw)) {
    return new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, `E2B is unavailable (${message})`, { provider: 'e2b' });
  }
  if (e instanceof SandboxError && status !== undefined && status >= 400) {
    return new ToolplaneError(ErrorCode.SANDBOX_FAILURE, `E2B refused the request (${message})`, {
      provider: 'e2b',
      status,
    });
  }
  // Unreachable (DNS, refused, reset), timed out, or an answer the SDK could not read.
  return new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, `E2B could not be reached (${message})`, {
    provider: 'e2b',
  });
}

/** A text with the account's API key (if any) masked. */
export function scrub(text: string, account: E2bAccount | undefined): string {
  const key = account?.apiKey;
  return key && key.length >= 4 ? text.split(key).join('***') : text;
}
