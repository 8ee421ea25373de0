import { z } from 'zod';
import { OrgId, Scope } from '@toolplane/contracts';
import { baseEnvShape, boolEnv, ConfigError, jsonEnv, parseEnv } from '@toolplane/platform';

const list = z
  .string()
  .default('')
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

/** Asymmetric JWS algorithms only: never `none`, never a shared secret (HS*). */
export const OIDC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;
const claimName = z.string().min(1).max(256);

/**
 * One identity provider whose JWT access tokens the gateway accepts (the MCP authorization spec:
 * Toolplane is the resource server, the IdP the authorization server). See oidc-verifier.ts.
 */
export const OidcIssuerConfig = z.strictObject({
  /** Compared exactly with the token's `iss`; its `/.well-known/openid-configuration` names the keys. */
  issuer: z.url({ protocol: /^https?$/ }),
  /** Accepted `aud` values. Default: the endpoint's resource URI (RFC 8707) or the gateway's public base URL. */
  audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(16)]).optional(),
  /** The issuer's JWKS; default: the `jwks_uri` of its discovery document. */
  jwks_uri: z.url({ protocol: /^https?$/ }).optional(),
  /** The org the caller acts for: a claim of the token, or one org for every token of this issuer. */
  org: z.union([z.strictObject({ claim: claimName }), z.strictObject({ value: OrgId })]),
  /** The end user's id (recorded on executions). */
  user_claim: claimName.default('sub'),
  /** Space-separated scopes (an array is accepted too); with the default, `scp` is read when `scope` is absent. */
  scope_claim: claimName.default('scope'),
  /** IdP scope → Toolplane scopes. Absent: an IdP scope that is a Toolplane scope name counts as itself. Never `admin`. */
  scope_map: z.record(z.string().min(1), z.array(Scope.exclude(['admin']))).optional(),
  algorithms: z.array(z.enum(OIDC_ALGORITHMS)).min(1).default(['RS256', 'ES256', 'EdDSA', 'PS256']),
});
export type OidcIssuerConfig = z.infer<typeof OidcIssuerConfig>;
const OIDC_EXAMPLE =
  '[{"issuer": "https://idp.example.com", "org": {"claim": "org_id"}, "scope_map": {"mcp:tools": ["tools:read", "tools:execute"]}}]';

/**
 * The MCP gateway: the HTTP edge where any MCP client reaches an agent's tools. It holds no state
 * of its own that a replica could lose (sessions are in NATS KV) and no secret but its service
 * identity and its NATS user.
 */
export const gatewayEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8091),
  /** Where MCP clients connect (`/mcp/agents/<agent_id>`, `/mcp/toolsets/<name>`). */
  GATEWAY_PORT: z.coerce.number().int().min(0).max(65535).default(8090),
  GATEWAY_HOST: z.string().default('0.0.0.0'),
  /**
   * The gateway's public base URL (scheme, host and any path prefix the Ingress adds), e.g.
   * `https://tools.example.com`: the resource of each endpoint (RFC 8707/9728) is this plus its
   * path. Default: the URL of the request (fine behind no proxy; set it behind one).
   */
  GATEWAY_PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  /**
   * DNS-rebinding protection: Origin values a browser-based client may send (comma-separated, exact
   * `scheme://host[:port]`). A request with any other Origin is refused (403). Requests without an
   * Origin (native clients) are not affected. The gateway's own public origin is always allowed.
   */
  GATEWAY_ALLOWED_ORIGINS: list,
  /** Host header values accepted (comma-separated host[:port]); empty: any (set it when clients reach the gateway by name). */
  GATEWAY_ALLOWED_HOSTS: list,
  /** A POST body larger than this is refused with 413 before it is parsed. */
  GATEWAY_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(16 * 1024 * 1024)
    .default(1024 * 1024),
  /** Requests per second per token (a token bucket of GATEWAY_RATE_BURST), past which 429 with Retry-After. */
  GATEWAY_RATE_PER_SECOND: z.coerce.number().min(0.1).default(200),
  GATEWAY_RATE_BURST: z.coerce.number().int().min(1).default(400),
  /** An idle session is forgotten after this long (its KV entry expires); the client then gets 404 and initializes again. */
  GATEWAY_SESSION_TTL_MS: z.coerce.number().int().min(10_000).default(3_600_000),
  /** tools/call waits at most this long for a result (the client's own timeout is usually shorter: it cancels first). */
  GATEWAY_CALL_TIMEOUT_MS: z.coerce.number().int().min(1000).default(300_000),
  /** How long an approval asked through elicitation may wait for the person at the client. */
  GATEWAY_ELICITATION_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000),
  /** tools/list page size. */
  GATEWAY_PAGE_SIZE: z.coerce.number().int().min(1).max(200).default(100),
  /**
   * Answer a POST as plain JSON when nothing can come before its answers (no progress token, no
   * approval to ask for by elicitation, no waiting tasks/result): no SSE stream and nothing stored
   * for it. Off: every request that carries a call is answered on an SSE stream.
   */
  GATEWAY_JSON_RESPONSES: boolEnv.default(true),
  /**
   * Resumable SSE streams (MCP "Resumability and Redelivery"): every event sent on a POST's SSE
   * stream is stored in JetStream, and a client whose connection broke resumes it (GET with
   * Last-Event-ID) on any replica. Off: no event is stored, and a dropped connection cancels its call.
   */
  GATEWAY_RESUMABLE_STREAMS: boolEnv.default(true),
  /** How long stored SSE events are kept (the stream's max age): longer than a call may last plus the client's reconnection. */
  GATEWAY_STREAM_RETENTION_MS: z.coerce.number().int().min(60_000).default(900_000),
  /** The stream's size bound in bytes; past it the oldest events go first. */
  GATEWAY_STREAM_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(256 * 1024 * 1024),
  /** A replica serving a stream stores a heartbeat this often; a resume that sees none for 3 intervals answers that the replica is gone. */
  GATEWAY_STREAM_HEARTBEAT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  /** The SSE `retry` field of a stream's priming event: how long a client waits before it reconnects. */
  GATEWAY_SSE_RETRY_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
  /** Identity providers whose JWT access tokens are accepted besides org tokens (JSON array of OidcIssuerConfig). */
  GATEWAY_OIDC_ISSUERS: jsonEnv(
    z
      .array(OidcIssuerConfig)
      .max(16)
      .refine((a) => new Set(a.map((i) => i.issuer)).size === a.length, 'each issuer once'),
    '[]',
    OIDC_EXAMPLE,
  ),
};
export type GatewayConfig = z.infer<z.ZodObject<typeof gatewayEnvShape>>;

export function loadGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const config = parseEnv('mcp-gateway', gatewayEnvShape, env);
  const problems = oidcProblems(config);
  if (problems.length)
    throw new ConfigError(
      `mcp-gateway: invalid configuration\n${problems.map((p) => `  GATEWAY_OIDC_ISSUERS: ${p}`).join('\n')}`,
    );
  return config;
}

/**
 * What the per-variable schema cannot see. Plain http only for a loopback IdP in development. In
 * production, an issuer without an explicit audience needs GATEWAY_PUBLIC_URL: else the resource
 * a token must be issued for would come from the request's Host header, which the client chooses.
 */
function oidcProblems(config: GatewayConfig): string[] {
  const problems: string[] = [];
  const dev = config.TOOLPLANE_PROFILE === 'development';
  for (const [i, issuer] of config.GATEWAY_OIDC_ISSUERS.entries()) {
    for (const [field, url] of [
      ['issuer', issuer.issuer],
      ['jwks_uri', issuer.jwks_uri],
    ] as const) {
      if (url && new URL(url).protocol === 'http:' && !(dev && isLoopback(url)))
        problems.push(`${i}.${field}: https only (http for 127.0.0.1/localhost in development)`);
    }
    if (!dev && !issuer.audience && !config.GATEWAY_PUBLIC_URL)
      problems.push(`${i}.audience: set it, or GATEWAY_PUBLIC_URL (the resource tokens are issued for)`);
  }
  return problems;
}

export function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === '127.0.0.1' || host === 'localhost' || host === '[::1]';
}
