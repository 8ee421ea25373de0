import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { ClientError, Status } from 'nice-grpc';
import { createHash } from 'node:crypto';
import {
  AlreadyExistsError,
  ClientClosedError,
  ConflictError,
  ModalClient,
  NotFoundError,
  ResourceExhaustedError,
  TimeoutError,
  type App,
  type Image,
  type Sandbox,
} from 'modal';
import type { ModalRunnerConfig } from '../runner-modal.config';

/** One org's Modal credentials (its provider-scoped secrets, or the runner's own). */
export interface ModalAccount {
  tokenId: string;
  tokenSecret: string;
}

/** Where the image's virtualenv lives (requirements installed at build time). */
export const VENV_DIR = '/opt/toolplane-venv';

/**
 * The Modal SDK as runner-modal uses it: one client per token pair (an org's sandboxes are only
 * ever reached with its own credentials), the app, images built once per (base, requirements)
 * and found again by their definition, sandboxes created, listed by tags and terminated.
 */
export class ModalApi {
  private readonly clients = new Map<string, { client: ModalClient; app?: Promise<App> }>();
  private readonly images = new Map<string, Promise<Image>>();

  constructor(private readonly c: ModalRunnerConfig) {}

  client(account: ModalAccount): ModalClient {
    return this.entry(account).client;
  }

  app(account: ModalAccount): Promise<App> {
    const e = this.entry(account);
    e.app ??= e.client.apps.fromName(this.c.MODAL_APP, {
      createIfMissing: true,
      ...(this.c.MODAL_ENVIRONMENT ? { environment: this.c.MODAL_ENVIRONMENT } : {}),
    });
    e.app.catch(() => (e.app = undefined));
    return e.app;
  }

  /**
   * The image of a requirements set: the base, plus a virtualenv with the requirements, plus Node
   * for TypeScript/JavaScript tools (MODAL_NODE_INSTALL), built once (Modal finds a built image
   * again by its definition).
   */
  image(account: ModalAccount, pip: string[], node = false): Promise<Image> {
    const key = `${accountKey(account)}/${JSON.stringify(pip)}/${node}`;
    let image = this.images.get(key);
    if (!image) {
      image = (async () => {
        const base = this.client(account).images.fromRegistry(this.c.MODAL_IMAGE);
        const runs = [
          ...(node ? [`RUN ${this.c.MODAL_NODE_INSTALL}`] : []),
          ...(pip.length ? [`RUN ${this.pipCommand(pip)}`] : []),
        ];
        const built = runs.length ? base.dockerfileCommands(runs) : base;
        return built.build(await this.app(account));
      })();
      image.catch(() => this.images.delete(key));
      this.images.set(key, image);
    }
    return image;
  }

  async create(
    account: ModalAccount,
    image: Image,
    o: { tags: Record<string, string>; network: boolean; cpu: number; memoryMiB: number },
  ): Promise<Sandbox> {
    return this.client(account).sandboxes.create(await this.app(account), image, {
      tags: o.tags,
      blockNetwork: !o.network,
      cpu: o.cpu,
      memoryMiB: o.memoryMiB,
      timeoutMs: this.c.MODAL_SANDBOX_TIMEOUT_S * 1000,
    });
  }

  /** Every running sandbox of the account's app carrying all these tags. */
  async list(account: ModalAccount, tags: Record<string, string>): Promise<Sandbox[]> {
    const app = await this.app(account);
    const out: Sandbox[] = [];
    for await (const s of this.client(account).sandboxes.list({ appId: app.appId, tags })) {
      out.push(s);
      if (out.length >= 10_000) break;
    }
    return out;
  }

  private pipCommand(pip: string[]): string {
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const args = [
      ...(this.c.MODAL_PIP_NO_INDEX ? ['--no-index'] : []),
      ...(this.c.MODAL_PIP_INDEX_URL ? ['--index-url', this.c.MODAL_PIP_INDEX_URL] : []),
      ...this.c.MODAL_PIP_FIND_LINKS.flatMap((l) => ['--find-links', l]),
    ];
    return `python3 -m venv ${VENV_DIR} && ${VENV_DIR}/bin/python3 -m pip install --disable-pip-version-check --no-input ${[...args, ...pip].map(q).join(' ')}`;
  }

  private entry(account: ModalAccount) {
    const key = accountKey(account);
    let e = this.clients.get(key);
    if (!e) {
      e = {
        client: new ModalClient({
          tokenId: account.tokenId,
          tokenSecret: account.tokenSecret,
          logLevel: this.c.MODAL_SDK_LOG_LEVEL,
          ...(this.c.MODAL_ENVIRONMENT ? { environment: this.c.MODAL_ENVIRONMENT } : {}),
        }),
      };
      this.clients.set(key, e);
    }
    return e;
  }
}

function accountKey(a: ModalAccount): string {
  return createHash('sha256').update(a.tokenId).update('\0').update(a.tokenSecret).digest('hex');
}

/** The sandbox is gone (terminated, timed out, never scheduled): the call may go to another one. */
export function isSandboxGone(e: unknown): boolean {
  if (e instanceof NotFoundError || e instanceof ConflictError || e instanceof ClientClosedError) return true;
  return e instanceof ClientError && (e.code === Status.NOT_FOUND || e.code === Status.FAILED_PRECONDITION);
}

/**
 * The SDK's deadline of an exec: a plain `Error("Deadline exceeded while waiting for exec …")`
 * (or while polling / streaming its stdio), or its TimeoutError.
 */
export function isDeadline(e: unknown): boolean {
  return (
    e instanceof TimeoutError ||
    (e instanceof Error && /^Deadline exceeded/.test(e.message)) ||
    (e instanceof ClientError && e.code === Status.DEADLINE_EXCEEDED)
  );
}

/** A Modal failure as its typed code (never carrying a token). */
export function providerError(e: unknown, account: ModalAccount | undefined, what: string): ToolplaneError {
  if (e instanceof ToolplaneError) return e;
  const raw = e instanceof Error ? e.message : String(e);
  const message = scrub(`${what}: ${raw}`, account);
  const code = e instanceof ClientError ? e.code : undefined;
  if (code === Status.UNAUTHENTICATED || code === Status.PERMISSION_DENIED || /missing credentials/i.test(raw)) {
    return new ToolplaneError(
      ErrorCode.PROVIDER_AUTH_FAILED,
      `Modal refused the token (${message}): set the org's sandbox secrets MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (provider modal)`,
      { provider: 'modal' },
    );
  }
  if (e instanceof ResourceExhaustedError || code === Status.RESOURCE_EXHAUSTED) {
    return new ToolplaneError(
      ErrorCode.PROVIDER_RATE_LIMITED,
      `Modal has no capacity for this workspace now (${message})`,
      { provider: 'modal' },
    );
  }
  if (isSandboxGone(e))
    return new ToolplaneError(ErrorCode.SANDBOX_LOST, `the Modal sandbox went away (${message})`, {
      provider: 'modal',
    });
  if (e instanceof AlreadyExistsError)
    return new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, message, { provider: 'modal' });
  return new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, `Modal is unavailable (${message})`, { provider: 'modal' });
}

/** Removes the account's token from a provider message. */
export function scrub(text: string, account: ModalAccount | undefined): string {
  if (!account) return text;
  let out = text;
  for (const s of [account.tokenSecret, account.tokenId]) if (s) out = out.split(s).join('[redacted]');
  return out;
}
