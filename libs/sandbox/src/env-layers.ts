/** The env of one call, layer by layer (each later layer overrides the earlier ones). */
export interface EnvLayers {
  /** Variables of the tool's sandbox config. */
  sandboxConfig?: Record<string, string>;
  /** Credentials returned by the org's credentials webhook. */
  credentials?: Record<string, string>;
  /** The calling agent's secrets. */
  agentSecrets?: Record<string, string>;
  /** The `env` of the execute request. */
  call?: Record<string, string>;
  /** TOOLPLANE_ORG_ID, TOOLPLANE_AGENT_ID, TOOLPLANE_TOOL_ID: last, nothing overrides them. */
  reserved: { orgId: string; toolId: string; agentId?: string };
}

export const RESERVED_ENV_PREFIX = 'TOOLPLANE_';

/**
 * sandbox-config vars < webhook credentials < agent secrets < per-call env < reserved ids.
 * Any other TOOLPLANE_* name a layer sets is dropped: the prefix belongs to the platform.
 */
export function layerEnv(l: EnvLayers): Record<string, string> {
  const env: Record<string, string> = {};
  for (const layer of [l.sandboxConfig, l.credentials, l.agentSecrets, l.call]) {
    for (const [k, v] of Object.entries(layer ?? {})) if (!k.startsWith(RESERVED_ENV_PREFIX)) env[k] = v;
  }
  env.TOOLPLANE_ORG_ID = l.reserved.orgId;
  env.TOOLPLANE_TOOL_ID = l.reserved.toolId;
  if (l.reserved.agentId) env.TOOLPLANE_AGENT_ID = l.reserved.agentId;
  return env;
}
