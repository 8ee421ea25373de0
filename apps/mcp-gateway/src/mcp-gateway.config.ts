import { z } from 'zod';
import { baseEnvShape, parseEnv } from '@toolplane/platform';

const list = z
  .string()
  .default('')
  .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean));

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
  GATEWAY_MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(16 * 1024 * 1024).default(1024 * 1024),
  /** Requests per second per token (a token bucket of GATEWAY_RATE_BURST), past which 429 with Retry-After. */
  GATEWAY_RATE_PER_SECOND: z.coerce.number().min(0.1).default(50),
  GATEWAY_RATE_BURST: z.coerce.number().int().min(1).default(200),
  /** An idle session is forgotten after this long (its KV entry expires); the client then gets 404 and initializes again. */
  GATEWAY_SESSION_TTL_MS: z.coerce.number().int().min(10_000).default(3_600_000),
  /** tools/call waits at most this long for a result (the client's own timeout is usually shorter: it cancels first). */
  GATEWAY_CALL_TIMEOUT_MS: z.coerce.number().int().min(1000).default(300_000),
  /** How long an approval asked through elicitation may wait for the person at the client. */
  GATEWAY_ELICITATION_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000),
  /** tools/list page size. */
  GATEWAY_PAGE_SIZE: z.coerce.number().int().min(1).max(200).default(100),
};
export type GatewayConfig = z.infer<z.ZodObject<typeof gatewayEnvShape>>;

export function loadGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return parseEnv('mcp-gateway', gatewayEnvShape, env);
}
