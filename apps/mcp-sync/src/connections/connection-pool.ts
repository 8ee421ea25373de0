import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import {
  AWAITING_USER_CODES,
  CONNECTION_PERMANENT_CODES,
  ErrorCode,
  ToolplaneError,
  type McpServerInput,
} from '@toolplane/contracts';
import { APP_CONFIG, PinnedHttp, UrlGuard } from '@toolplane/platform';
import type { McpSyncConfig } from '../mcp-sync.config';
import type { ServerSecrets } from '../store/secret-sealer';
import {
  authTemplates,
  ORG_SECRET_SOURCE,
  resolveOAuth,
  resolveRecord,
  resolveTemplate,
  templateNames,
  type OrgSecretSource,
  type TemplateCaller,
} from '../store/templates';
import { ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { McpClientConnection, describe, isSessionExpired, type ResolvedTarget } from './mcp-connection';
import { OAuthClient, type OAuthTarget } from './oauth-client';
import { StdioPolicy } from './stdio-policy';

/** A server as the pool needs it: its settings (templates unresolved) and a version that changes on update. */
export interface ServerTarget {
  id: string;
  orgId: string;
  name: string;
  transport: 'stdio' | 'sse' | 'streamable_http';
  command: string | null;
  args: string[];
  url: string | null;
  version: number;
  secrets: ServerSecrets;
  /**
   * The end user the connection is for: an `account: "user"` server (their OAuth tokens), or a
   * server whose templates resolve from their secrets. Such a target has its own pool, never
   * shared with the org or another user.
   */
  userId?: string;
  /**
   * The agent of the call, on a server whose templates resolve from secrets (an agent's fill them
   * under the user's): its pool is (server, user, agent)'s own, never another agent's. Never on an
   * untemplated server: the agent changes no value there (an `account: "user"` server's OAuth
   * tokens are the user's whatever the agent).
   */
  agentId?: string;
  /** A server being added (not stored yet): its settings, should its OAuth need a user before the add ends. */
  pendingInput?: McpServerInput;
}

export type ServerListChangedListener = (serverId: string, orgId: string) => void;

const MIN_ATTEMPT_MS = 200;

class ServerPool {
  readonly conns: McpClientConnection[] = [];
  private opening?: Promise<McpClientConnection>;
  private failures = 0;
  private nextAttemptAt = 0;

  constructor(
    readonly target: ServerTarget,
    private readonly max: number,
    private readonly factory: (deadline: number) => Promise<McpClientConnection>,
    private readonly backoff: (failures: number) => number,
  ) {}

  /** Last acquired (least recently used user pools are closed first when there are too many). */
  lastUsed = Date.now();

  /** Nothing open, nothing opening, nothing in flight: may be dropped. */
  idle(): boolean {
    return !this.opening && this.conns.every((c) => c.inFlight === 0);
  }

  live(): McpClientConnection[] {
    return this.conns.filter((c) => !c.closed);
  }

  /**
   * The least busy live connection; a new one when all are busy and the pool may grow. Failed
   * opens back off exponentially (with jitter) while the deadline allows another attempt.
   */
  async acquire(deadline: number, attempts = Infinity): Promise<McpClientConnection> {
    this.lastUsed = Date.now();
    for (let attempt = 1; ; attempt++) {
      const live = this.live().sort((a, b) => a.inFlight - b.inFlight);
      const best = live[0];
      if (best && (best.inFlight === 0 || live.length >= this.max || this.opening)) return best;
      const wait = this.nextAttemptAt - Date.now();
      if (wait > 0 && !best) {
        if (Date.now() + wait + MIN_ATTEMPT_MS > deadline) throw this.unavailable();
        await sleep(wait);
      }
      try {
        return await this.openOne(deadline);
      } catch (e) {
        if (best) return best;
        if (e instanceof ToolplaneError && (CONNECTION_PERMANENT_CODES.has(e.code) || !e.retryable)) throw e;
        if (attempt >= attempts || Date.now() + this.backoff(this.failures) + MIN_ATTEMPT_MS > deadline) throw e;
      }
    }
  }

  discard(c: McpClientConnection): void {
    const i = this.conns.indexOf(c);
    if (i >= 0) this.conns.splice(i, 1);
    void c.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.conns.splice(0).map((c) => c.close()));
  }

  private lastError?: unknown;

  private unavailable(): unknown {
    return (
      this.lastError ??
      new ToolplaneError(ErrorCode.MCP_CONNECTION_FAILED, `MCP server ${this.target.name} is unavailable (backing off)`)
    );
  }

  private openOne(deadline: number): Promise<McpClientConnection> {
    this.opening ??= this.factory(deadline)
      .then(
        (c) => {
          this.failures = 0;
          this.nextAttemptAt = 0;
          this.conns.push(c);
          return c;
        },
        (e: unknown) => {
          this.lastError = e;
          // Waiting for a person, not for the server: no backoff (the answer comes from memory until they authorize).
          if (e instanceof ToolplaneError && AWAITING_USER_CODES.has(e.code)) throw e;
          this.failures += 1;
          this.nextAttemptAt = Date.now() + this.backoff(this.failures);
          throw e;
        },
      )
      .finally(() => {
        this.opening = undefined;
      });
    return this.opening;
  }
}

/**
 * Live MCP sessions per server, reused across calls and syncs: connect and initialize are each
 * bounded, failed connects back off, a closed session is replaced on next use, an expired
 * Streamable HTTP session (404) is rebuilt and the request retried once, idle sessions close.
 *
 * One pool per server for the org, and one per caller where the connection is the caller's own:
 * (server, end user) for an `account: "user"` server (their OAuth tokens), (server, end user, agent)
 * for a server whose templates resolve from secrets (the user's, then the agent's, then the org's:
 * values that may differ per user and per agent). A client or transport is never shared across
 * users or agents. Caller pools are bounded together (MCP_POOL_MAX_USER_POOLS, least recently used
 * idle pool closed first) and dropped once their sessions closed idle.
 */
@Injectable()
export class ConnectionPool implements OnModuleDestroy {
  private readonly log = new Logger(ConnectionPool.name);
  private readonly pools = new Map<string, ServerPool>();
  private readonly listeners: ServerListChangedListener[] = [];
  private readonly guard: UrlGuard;
  private readonly reaper: NodeJS.Timeout;

  constructor(
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
    @Inject(ORG_SECRET_SOURCE) private readonly secrets: OrgSecretSource,
    private readonly oauth: OAuthClient,
    readonly stdio: StdioPolicy,
  ) {
    this.guard = new UrlGuard({
      profile: config.TOOLPLANE_PROFILE,
      allowed: config.MCP_ALLOWED_HOSTS,
      allowlistSetting: 'MCP_ALLOWED_HOSTS',
      codes: { refused: ErrorCode.MCP_URL_REFUSED, unresolved: ErrorCode.MCP_CONNECTION_FAILED },
    });
    this.reaper = setInterval(() => this.closeIdle(), Math.min(30_000, config.MCP_IDLE_CLOSE_MS)).unref();
  }

  get urlGuard(): UrlGuard {
    return this.guard;
  }

  onListChanged(listener: ServerListChangedListener): void {
    this.listeners.push(listener);
  }

  /**
   * Runs `fn` on a live session of the server, connecting if needed (at most `attempts` tries,
   * backing off between them, within `deadline`). On a 404 session error the session is rebuilt
   * and `fn` runs once more (the server never ran the first attempt).
   */
  async withConnection<T>(
    target: ServerTarget,
    deadline: number,
    fn: (c: McpClientConnection) => Promise<T>,
    attempts = Infinity,
  ): Promise<T> {
    const pool = this.poolFor(target);
    const conn = await pool.acquire(deadline, attempts);
    try {
      return await conn.use(() => fn(conn));
    } catch (e) {
      if (isBrokenConnection(e)) {
        // The transport failed under the request (server gone, stream cut): replace it on next use.
        pool.discard(conn);
        throw new ToolplaneError(
          ErrorCode.MCP_CONNECTION_FAILED,
          `Lost the connection to MCP server ${target.name}: ${describe(e)}`,
          { server: target.name },
          { cause: e },
        );
      }
      if (!isSessionExpired(e)) throw e;
      this.log.log(`session of ${target.name} (${target.id}) expired: re-initializing`);
      pool.discard(conn);
      const fresh = await pool.acquire(deadline, attempts);
      return fresh.use(() => fn(fresh));
    }
  }

  /**
   * The target a call by this end user (and agent) takes: an `account: "user"` server's is the
   * user's own (no user: MCP_AUTHORIZATION_REQUIRED, nobody can authorize for nobody); a server
   * whose templates resolve from secrets is the (user, agent)'s own (their values may differ); any
   * other is the org's.
   */
  forCaller(target: ServerTarget, userId: string | undefined, agentId?: string): ServerTarget {
    const s = target.secrets;
    const perUser = s.auth?.type === 'oauth' && s.auth.account === 'user';
    if (perUser && !userId) {
      throw new ToolplaneError(
        ErrorCode.MCP_AUTHORIZATION_REQUIRED,
        `MCP server ${target.name} acts as each end user's own account: the call needs a user_id (the user connects their account on their first call)`,
        { server_id: target.id, server_name: target.name },
        false,
      );
    }
    const templated = templatesOf(s).length > 0;
    if (!templated) return perUser ? { ...target, userId } : target;
    if (!userId && !agentId) return target;
    return { ...target, ...(userId ? { userId } : {}), ...(agentId ? { agentId } : {}) };
  }

  /** The server's OAuth as a flow needs it (client secret templates resolved; the user's when the target has one), or null for another auth. */
  async oauthTarget(t: ServerTarget): Promise<OAuthTarget | null> {
    const auth = t.secrets.auth;
    if (auth?.type !== 'oauth' || !t.url || t.transport === 'stdio') return null;
    const names = templateNames(authTemplates(auth));
    return this.oauthTargetOf(t, auth, names.length ? await this.secrets.lookup(t.orgId, names, callerOf(t)) : {});
  }

  /** Closes the server's sessions (after an update or a removal). */
  async drop(serverId: string): Promise<void> {
    const dropped: ServerPool[] = [];
    for (const [key, pool] of this.pools) {
      if (pool.target.id === serverId) {
        this.pools.delete(key);
        dropped.push(pool);
      }
    }
    this.oauth.forget(serverId);
    await Promise.all(dropped.map((p) => p.closeAll()));
  }

  /**
   * Closes every session of the org's servers (the org's and every caller's) and forgets every
   * token cached for them: the org was deleted. Done synchronously up to the closes, so a call
   * that comes after finds no pool. Returns how many servers had pools.
   */
  async dropOrg(orgId: string): Promise<number> {
    const servers = new Set<string>();
    const dropped: ServerPool[] = [];
    for (const [key, pool] of this.pools) {
      if (pool.target.orgId !== orgId) continue;
      this.pools.delete(key);
      dropped.push(pool);
      servers.add(pool.target.id);
    }
    for (const id of servers) this.oauth.forget(id);
    await Promise.all(dropped.map((p) => p.closeAll()));
    return servers.size;
  }

  /** Closes one end user's sessions of the server (whatever the agent) and forgets their tokens in memory (revoked, or authorized anew). */
  async dropUser(serverId: string, userId: string): Promise<void> {
    const dropped: ServerPool[] = [];
    for (const [key, pool] of this.pools) {
      if (pool.target.id === serverId && pool.target.userId === userId) {
        this.pools.delete(key);
        dropped.push(pool);
      }
    }
    this.oauth.forget(serverId, userId);
    await Promise.all(dropped.map((p) => p.closeAll()));
  }

  /** The server's stored version changed without a settings change (first insert): keep its sessions. */
  retag(serverId: string, version: number): void {
    const pool = this.pools.get(serverId); // the org's pool: a server being added has no user pools yet
    if (!pool) return;
    pool.target.version = version;
    delete pool.target.pendingInput; // stored now: a later authorization is the stored server's
  }

  liveConnections(serverId: string, userId?: string, agentId?: string): number {
    return (
      this.pools.get(poolKey({ id: serverId, ...(userId ? { userId } : {}), ...(agentId ? { agentId } : {}) }))?.live()
        .length ?? 0
    );
  }

  /** How many caller pools ((server, end user) or (server, end user, agent)) are kept. */
  userPools(): number {
    let n = 0;
    for (const p of this.pools.values()) if (isCallerPool(p.target)) n += 1;
    return n;
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.reaper);
    await Promise.all([...this.pools.values()].map((p) => p.closeAll()));
    this.pools.clear();
  }

  private poolFor(target: ServerTarget): ServerPool {
    const key = poolKey(target);
    const existing = this.pools.get(key);
    if (existing && existing.target.version === target.version) return existing;
    if (existing) void existing.closeAll();
    if (!existing && isCallerPool(target)) this.makeRoomForUser();
    const max = target.transport === 'stdio' ? 1 : this.config.MCP_POOL_MAX_CONNECTIONS;
    const pool = new ServerPool(
      target,
      max,
      (deadline) => this.open(target, deadline),
      (n) => this.backoff(n),
    );
    this.pools.set(key, pool);
    return pool;
  }

  /** At the bound of caller pools: the least recently used idle one goes (a busy one is never cut; the bound may then be passed for a while). */
  private makeRoomForUser(): void {
    if (this.userPools() < this.config.MCP_POOL_MAX_USER_POOLS) return;
    let victim: [string, ServerPool] | undefined;
    for (const entry of this.pools) {
      const p = entry[1];
      if (isCallerPool(p.target) && p.idle() && (!victim || p.lastUsed < victim[1].lastUsed)) victim = entry;
    }
    if (!victim) return;
    this.pools.delete(victim[0]);
    this.forgetTokensOf(victim[1].target);
    void victim[1].closeAll();
    this.log.debug(`closed the least recently used caller pool of ${victim[1].target.name} (MCP_POOL_MAX_USER_POOLS)`);
  }

  /** A user's tokens in memory, once a pool of theirs is gone (read again from credentials when they come back); an agent's pool holds none. */
  private forgetTokensOf(t: ServerTarget): void {
    if (t.userId) this.oauth.forget(t.id, t.userId);
  }

  private async open(target: ServerTarget, deadline: number): Promise<McpClientConnection> {
    if (target.transport === 'stdio' && !this.config.MCP_STDIO_ENABLED) {
      throw new ToolplaneError(
        ErrorCode.MCP_TRANSPORT_DISABLED,
        'stdio MCP servers are disabled here (MCP_STDIO_ENABLED)',
        undefined,
        false,
      );
    }
    if (target.transport === 'stdio') this.stdio.check(target.command!, target.args ?? [], {});
    const resolved = await this.resolve(target);
    const remaining = () => Math.max(1, deadline - Date.now());
    // The session's one DNS lookup: its HTTP requests go only to the addresses vetted here.
    let http: PinnedHttp | undefined;
    if (resolved.url) {
      http = new PinnedHttp(this.guard, { connectTimeoutMs: this.config.MCP_CONNECT_TIMEOUT_MS });
      try {
        await http.vet(resolved.url);
      } catch (e) {
        await http.close();
        throw e;
      }
    }
    const conn = await McpClientConnection.open(resolved, {
      connectTimeoutMs: Math.min(this.config.MCP_CONNECT_TIMEOUT_MS, remaining()),
      initializeTimeoutMs: Math.min(this.config.MCP_INITIALIZE_TIMEOUT_MS, remaining()),
      http,
      stdio: this.stdio,
      onListChanged: () => this.listeners.forEach((l) => l(target.id, target.orgId)),
      onClose: () => this.log.debug(`session of ${target.name} (${target.id}) closed`),
    });
    this.log.log(
      `connected to MCP server ${target.name} (${target.transport}) for org ${target.orgId}${target.userId ? ' for an end user' : ''}${target.agentId ? ' for an agent' : ''}`,
    );
    return conn;
  }

  /** Resolves `{{VAR}}` templates now, at connect time: the target's user's secrets, then its agent's, then the org's. */
  private async resolve(t: ServerTarget): Promise<ResolvedTarget> {
    const s = t.secrets;
    const names = templatesOf(s);
    const values = names.length ? await this.secrets.lookup(t.orgId, names, callerOf(t)) : {};
    const resolved: ResolvedTarget = {
      name: t.name,
      transport: t.transport,
      command: t.command,
      args: t.args,
      env: resolveRecord(s.env, values, 'env'),
      url: t.url,
      headers: resolveRecord(s.headers, values, 'header'),
    };
    const auth = s.auth;
    if (auth?.type === 'bearer') {
      const header = `Bearer ${resolveTemplate(auth.token, values, 'auth.token')}`;
      resolved.authorization = async () => header;
    } else if (auth?.type === 'oauth' && t.url && t.transport !== 'stdio') {
      const target = this.oauthTargetOf(t, auth, values);
      resolved.authorization = () => this.oauth.authorization(target);
      resolved.onChallenge = (res, sent) => this.oauth.challenge(target, res, sent);
    }
    return resolved;
  }

  private oauthTargetOf(
    t: ServerTarget,
    auth: Extract<ServerSecrets['auth'], { type: 'oauth' }>,
    values: Record<string, string>,
  ): OAuthTarget {
    // The state object is the server's own (shared by its users: discovery and the registered client): what a flow learns is kept with it.
    return {
      orgId: t.orgId,
      serverId: t.id,
      // Only an `account: "user"` server has a user's tokens; a templated org server keeps the org's.
      ...(t.userId && auth.account === 'user' ? { userId: t.userId } : {}),
      name: t.name,
      url: t.url!,
      transport: t.transport === 'sse' ? 'sse' : 'streamable_http',
      auth: resolveOAuth(auth, values),
      state: (t.secrets.oauth ??= {}),
      ...(t.pendingInput ? { input: t.pendingInput } : {}),
    };
  }

  private backoff(failures: number): number {
    const base = Math.min(
      this.config.MCP_RECONNECT_MAX_MS,
      this.config.MCP_RECONNECT_BASE_MS * 2 ** Math.max(0, failures - 1),
    );
    return Math.round(base * (0.5 + Math.random() * 0.5));
  }

  private closeIdle(): void {
    const cutoff = Date.now() - this.config.MCP_IDLE_CLOSE_MS;
    for (const [key, pool] of this.pools) {
      for (const c of pool.live()) if (c.inFlight === 0 && c.lastUsed < cutoff) pool.discard(c);
      // A caller's pool left with nothing: gone (the next call of that caller opens a new one).
      if (isCallerPool(pool.target) && pool.live().length === 0 && pool.idle() && pool.lastUsed < cutoff) {
        this.pools.delete(key);
        this.forgetTokensOf(pool.target);
      }
    }
  }
}

/** The secrets a server's env, headers and auth take from `{{VAR}}` templates. */
function templatesOf(s: ServerSecrets): string[] {
  return templateNames([...Object.values(s.env ?? {}), ...Object.values(s.headers ?? {}), ...authTemplates(s.auth)]);
}

/**
 * The pool a target takes: the org's is the server id; a caller's adds its user and its agent, each
 * field in its own slot ("" for none), so (user u, no agent) and (no user, agent u) never meet.
 */
export function poolKey(t: { id: string; userId?: string; agentId?: string }): string {
  return isCallerPool(t) ? [t.id, t.userId ?? '', t.agentId ?? ''].join('\u0000') : t.id;
}

function isCallerPool(t: { userId?: string; agentId?: string }): boolean {
  return Boolean(t.userId || t.agentId);
}

function callerOf(t: ServerTarget): TemplateCaller {
  return { ...(t.userId ? { userId: t.userId } : {}), ...(t.agentId ? { agentId: t.agentId } : {}) };
}

/** Not an answer from the server: the transport itself failed (a 404 session error is handled apart). */
function isBrokenConnection(e: unknown): boolean {
  if (e instanceof ToolplaneError || isSessionExpired(e)) return false;
  if (e instanceof McpError) return e.code === McpErrorCode.ConnectionClosed;
  return true;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
