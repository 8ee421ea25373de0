import { tmpdir } from 'node:os';
import { isAbsolute, join, normalize } from 'node:path';
import { z } from 'zod';
import { baseEnvShape, boolEnv, ConfigError, databaseEnvShape, jsonEnv, parseEnv } from '@toolplane/platform';

/** The stdio server's working directory and HOME: a tmpfs of its own, which no bind passes through (unlike /tmp, where a read path under /tmp leaves its mount points). */
export const STDIO_HOME = '/sandbox';

/** One command an operator lets tenants run as a stdio MCP server. */
export const StdioAllowEntry = z.strictObject({
  /** Absolute path of the program, matched exactly. */
  command: z.string().refine((c) => isAbsolute(c) && normalize(c) === c, 'an absolute, normalized path'),
  /** One pattern per argument, each matched in full (anchored); the argument count must match too. */
  args: z.array(z.string()).max(64).default([]),
  /** Directories the server may read (its code and data): bound read-only, nothing else of the host but system directories. */
  read_paths: z
    .array(
      z
        .string()
        .refine((p) => isAbsolute(p) && normalize(p) === p, 'absolute, normalized paths')
        .refine(
          (p) => p !== STDIO_HOME && !p.startsWith(`${STDIO_HOME}/`),
          `not under ${STDIO_HOME}, the server's own working directory`,
        ),
    )
    .max(32)
    .default([]),
  /** Names of env vars a tenant may set for it (default: any but loader and interpreter injection variables). */
  env: z
    .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/))
    .max(128)
    .optional(),
});
export type StdioAllowEntry = z.infer<typeof StdioAllowEntry>;

const ms = (def: number, min = 100) => z.coerce.number().int().min(min).default(def);
const list = z
  .string()
  .default('')
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

export const mcpSyncEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8086),
  ...databaseEnvShape,
  /** stdio servers spawn local processes: on by default in development only, and only the allowlisted commands. */
  MCP_STDIO_ENABLED: boolEnv.optional(),
  /**
   * The programs tenants may run as stdio MCP servers, as JSON:
   * `[{"command": "/abs/program", "args": ["^pattern$", ...], "read_paths": ["/abs/dir"], "env": ["NAME"]?}]`.
   * Empty: no stdio server can run.
   */
  MCP_STDIO_ALLOWED_COMMANDS: jsonEnv(
    z.array(StdioAllowEntry).max(256),
    '[]',
    '[{"command": "/abs/program", "args": ["^pattern$"], "read_paths": ["/abs/dir"]}]',
  ),
  /** `bwrap`: each stdio server in a bubblewrap sandbox (refuses stdio when bubblewrap is missing); `unsafe`: a plain child process, announced at start. */
  MCP_STDIO_ISOLATION: z.enum(['bwrap', 'unsafe']).default('bwrap'),
  MCP_STDIO_BWRAP: z.string().default('/usr/bin/bwrap'),
  /** Unprivileged host ids of the stdio sandboxes when mcp-sync runs as root. */
  MCP_STDIO_RUN_AS_UID: z.coerce.number().int().min(1).default(65534),
  MCP_STDIO_RUN_AS_GID: z.coerce.number().int().min(1).default(65534),
  /** Where the sandbox support files (seccomp filter, confinement script) are written. */
  MCP_STDIO_WORK_ROOT: z.string().default(join(tmpdir(), 'toolplane-mcp-stdio')),
  MCP_CONNECT_TIMEOUT_MS: ms(10_000),
  MCP_INITIALIZE_TIMEOUT_MS: ms(10_000),
  /** Per page of tools/list. */
  MCP_LIST_TIMEOUT_MS: ms(15_000),
  MCP_LIST_MAX_PAGES: z.coerce.number().int().min(1).max(10_000).default(200),
  MCP_MAX_TOOLS_PER_SERVER: z.coerce.number().int().min(1).max(10_000).default(5000),
  /** Live connections kept per server (calls spread over them; stdio servers keep one). */
  MCP_POOL_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(64).default(4),
  /**
   * Servers connected per caller (an `account: "user"` server per end user, a server whose
   * templates use secrets per end user and agent): at most this many such pools are kept, all
   * servers together; past it the least recently used idle one is closed.
   */
  MCP_POOL_MAX_USER_POOLS: z.coerce.number().int().min(1).max(100_000).default(1000),
  /** A connection unused this long is closed. */
  MCP_IDLE_CLOSE_MS: ms(600_000, 1000),
  MCP_RECONNECT_BASE_MS: ms(250, 10),
  MCP_RECONNECT_MAX_MS: ms(30_000, 10),
  /** Periodic resync of every server; 0 disables it. */
  MCP_RESYNC_INTERVAL_MS: z.coerce.number().int().min(0).default(900_000),
  /** ± this fraction of the interval, so servers do not all resync at once. */
  MCP_RESYNC_JITTER: z.coerce.number().min(0).max(1).default(0.2),
  /** How often this replica looks for servers due a resync. */
  MCP_RESYNC_TICK_MS: ms(15_000, 50),
  /** A burst of tools/list_changed notifications becomes one resync after this quiet time. */
  MCP_LIST_CHANGED_DEBOUNCE_MS: ms(300, 0),
  /** Hosts (names or IPs) and CIDRs a server URL may reach even though they are private/loopback/link-local. */
  MCP_ALLOWED_HOSTS: list,
  /**
   * Legacy only: the AES-256-GCM key (base64 of 32 bytes) that sealed server secrets before they
   * moved onto the credentials key ring; rows sealed with it are read once more and sealed again.
   */
  MCP_ENCRYPTION_KEY: z.string().optional(),
  MCP_ENCRYPTION_KEY_FILE: z.string().startsWith('/', 'an absolute path').optional(),
  /** Development profile only: where an earlier version kept its generated key (read for legacy rows). */
  MCP_DEV_KEY_FILE: z.string().default('.toolplane/mcp-sync-dev.key'),
  /**
   * A tool call finds its server (and opened secrets) in memory this long at most; updates and
   * removals (sync/removal events from any replica) evict it at once. 0: read it on every call.
   */
  MCP_SERVER_CACHE_TTL_MS: z.coerce.number().int().min(0).max(600_000).default(2000),
  REGISTRY_REQUEST_TIMEOUT_MS: ms(30_000),
  /**
   * Largest registry message a sync sends (serialized JSON): a bigger tool set is staged in pages
   * under it, then applied at once. Also capped by the NATS server's max_payload (less 4 KiB).
   */
  MCP_SYNC_MESSAGE_BYTES: z.coerce
    .number()
    .int()
    .min(16 * 1024, 'at least 16384 (16 KiB)')
    .max(64 * 1024 * 1024, 'at most 67108864 (64 MiB, the NATS limit)')
    .default(512 * 1024),
  /** Resolving a server's `{{VAR}}` templates from the org's secrets (credentials service). */
  CREDENTIALS_REQUEST_TIMEOUT_MS: ms(5_000),
  /** How long an OAuth authorization URL (its state and PKCE verifier) stays valid. */
  MCP_OAUTH_STATE_TTL_MS: ms(600_000, 1000),
  /** How often every server's sealed secrets are checked and sealed again when their key is no longer the key ring's active one (0: only at start). */
  MCP_RESEAL_INTERVAL_MS: z.coerce.number().int().min(0).default(3_600_000),
  /** Where authorization servers send the browser back (authorization code) when a server's auth names no redirect_uri. */
  MCP_OAUTH_REDIRECT_URI: z.url().default('http://localhost/toolplane/oauth/callback'),
  /**
   * This deployment's OAuth Client ID Metadata Document (an https URL with a path, served by the
   * operator): used as the client_id with authorization servers that support it (instead of DCR).
   */
  MCP_OAUTH_CLIENT_METADATA_URL: z.url({ protocol: /^https$/ }).optional(),
};
export type McpSyncConfig = Omit<z.infer<z.ZodObject<typeof mcpSyncEnvShape>>, 'MCP_STDIO_ENABLED'> & {
  MCP_STDIO_ENABLED: boolean;
};

export function loadMcpSyncConfig(env: NodeJS.ProcessEnv = process.env): McpSyncConfig {
  const c = parseEnv('mcp-sync', mcpSyncEnvShape, env);
  const problems: string[] = [];
  if (c.MCP_ENCRYPTION_KEY !== undefined && Buffer.from(c.MCP_ENCRYPTION_KEY, 'base64').length !== 32)
    problems.push('  MCP_ENCRYPTION_KEY: must be base64 of 32 bytes');
  if (c.MCP_ENCRYPTION_KEY !== undefined && c.MCP_ENCRYPTION_KEY_FILE !== undefined)
    problems.push('  MCP_ENCRYPTION_KEY_FILE: give MCP_ENCRYPTION_KEY or MCP_ENCRYPTION_KEY_FILE, not both');
  if (c.MCP_RECONNECT_BASE_MS > c.MCP_RECONNECT_MAX_MS)
    problems.push('  MCP_RECONNECT_BASE_MS: must not exceed MCP_RECONNECT_MAX_MS');
  if (problems.length) throw new ConfigError(`mcp-sync: invalid configuration\n${problems.join('\n')}`);
  return { ...c, MCP_STDIO_ENABLED: c.MCP_STDIO_ENABLED ?? c.TOOLPLANE_PROFILE === 'development' };
}
