import type { ReplyOf, RequestOf, RUNNERS, ToolplaneError } from '@toolplane/contracts';
import type { LauncherSettings, Proof, RemoteSandboxLayout } from '@toolplane/sandbox';
import type { RemoteEnvironment } from './remote-pool';

/** The remote providers that run on this core (each one app: runner-e2b, runner-modal). */
export type RemoteProviderName = 'e2b' | 'modal';

/** What decides which sandboxes a call may use, as far as the core knows: the provider's request extends it. */
export interface RemoteEnvironmentRequest {
  org: string;
  /** The org's sandbox config fingerprint: a newer one in the family retires the older sandboxes. */
  fingerprint: string | null;
  /** calls_per_sandbox: calls one sandbox runs at once (1: never two). */
  lanes: number;
  pip: string[];
}

/** The keys of an environment request, made by the provider. */
export interface RemoteEnvironmentKeys {
  /** Everything a sandbox was made for (the provider's `toolplane-key` tag): a different key never shares it. */
  key: string;
  /** The sandboxes a newer key of the same family replaces (a config change retires the older ones). */
  family: string;
  /** The requirements' hash (null: the provider does not key its environments by one, or none is needed). */
  requirementsHash: string | null;
}

/** A sandbox the provider made or found again: set up, proved clean, and what it was proved against. */
export interface ReadySandbox<B> {
  box: B;
  proof: Proof;
  /** Node answers in it (TypeScript/JavaScript tools). */
  node: boolean;
}

/** A launcher command started in a sandbox. */
export interface RunningCommand {
  /** Its exit code, or what broke the stream (`lost`: nothing can be proven about the sandbox any more). */
  wait(): Promise<{ exit: number } | { lost: unknown }>;
  /** Stops it (the call was given up); the sandbox is then killed. */
  stop(): void;
}

/**
 * What a remote provider gives the core: how its sandboxes are made, found again after a restart,
 * proved clean, killed and kept alive (the pool's side), and how a call reaches one (files in,
 * one launcher command, the report out: the call's side). Everything else — leases, lanes,
 * drain-and-prove, bounds, eviction, reaping, retiring, adoption, the runs service and its
 * metrics — is the core's, written once.
 */
export interface RemoteProvider<R extends RemoteEnvironmentRequest, B> {
  readonly name: RemoteProviderName;
  /** How messages name the provider: "E2B", "Modal". */
  readonly label: string;
  /** The prefix of its app's variables ("E2B", "MODAL"): messages name the bound that was reached. */
  readonly configPrefix: string;
  /** The environment request of a call (its credentials, validated requirements): typed errors for what cannot run. */
  request(ask: RemoteEnvironmentAsk): R;
  keys(req: R): RemoteEnvironmentKeys;
  id(box: B): string;

  // The pool's side
  /** A new sandbox of the environment, set up (requirements installed) and proved clean; `progress` tells what the build does. */
  create(env: RemoteEnvironment<R, B>, progress: (line: string) => void): Promise<ReadySandbox<B>>;
  /** The environment's sandboxes of earlier runner processes that prove clean (the provider kills the superseded ones it finds). */
  discover(env: RemoteEnvironment<R, B>): Promise<Array<ReadySandbox<B>>>;
  /** Proves a drained shared sandbox clean against its last proof: the new proof, or undefined (it is killed). */
  prove(env: RemoteEnvironment<R, B>, box: B, proof: Proof): Promise<Proof | undefined>;
  kill(env: RemoteEnvironment<R, B>, box: B, reason: string): Promise<void>;
  /** Providers whose sandboxes end on a timeout of their own: renews it to at least `minMs` from now. */
  keepAlive?(box: B, minMs: number): Promise<void>;
  /** That timeout, as set at creation and by keepAlive. */
  readonly sandboxTimeoutMs?: number;

  // The call's side
  readonly launcher: { settings: LauncherSettings; layout: RemoteSandboxLayout };
  /** The interpreter Python tools of the environment run on (the launcher forks on it). */
  python(env: RemoteEnvironment<R, B>): string;
  /** Where Node tools find their modules. */
  moduleDir(env: RemoteEnvironment<R, B>): string;
  write(env: RemoteEnvironment<R, B>, box: B, files: Array<{ path: string; data: string }>): Promise<void>;
  start(
    env: RemoteEnvironment<R, B>,
    box: B,
    command: string,
    o: { envs: Record<string, string>; timeoutMs: number; stdout: (b: Buffer) => void; stderr: (b: Buffer) => void },
  ): Promise<RunningCommand>;
  read(env: RemoteEnvironment<R, B>, box: B, path: string): Promise<string>;
  /** The sandbox is gone (killed, expired): a call that had not started may go to another one. */
  isGone(e: unknown): boolean;
  /** The provider's own deadline of a command passed (the call timed out on its side). */
  isDeadline?(e: unknown): boolean;
  /** After a launcher exit that is not its own: whether the sandbox itself ended (lost, not broken). */
  ended?(box: B): Promise<boolean>;
  /** The typed error of a provider failure before the tool started (never carrying a credential). */
  providerError(e: unknown, env: RemoteEnvironment<R, B>, what: string): ToolplaneError;
  /** A provider message with the environment's credentials masked. */
  scrub(text: string, env: RemoteEnvironment<R, B>): string;
  /** Why a TypeScript/JavaScript tool cannot run in a sandbox without Node. */
  noNode(env: RemoteEnvironment<R, B>): string;
}

/** A runner's run request (the same for every remote provider). */
export type RemoteRunRequest = RequestOf<(typeof RUNNERS)['e2b']['run']>;
export type RemoteRunReply = ReplyOf<(typeof RUNNERS)['e2b']['run']>;
/** What decides a call's environment: the run (or environment) request's environment fields. */
export type RemoteEnvironmentAsk = Pick<
  RemoteRunRequest,
  | 'org_id'
  | 'provider_credentials'
  | 'sandbox_config_fingerprint'
  | 'sandbox'
  | 'pip_requirements'
  | 'npm_requirements'
  | 'source_type'
>;
