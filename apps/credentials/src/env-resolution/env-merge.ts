import { RESERVED_ENV_NAMES } from '@toolplane/contracts';

/**
 * Where a variable came from, lowest precedence first — the one precedence rule of Toolplane's
 * credentials, for a call's env and for `{{VAR}}` templates alike:
 *
 *   1. sandbox   the org's sandbox env (scope sandbox; a provider-specific value over a provider-less one)
 *   2. webhook   the org's credentials webhook's answer for this call (asked with org, agent, user, tool)
 *   3. agent     the agent's secrets (scope agent)
 *   4. user      the end user's secrets (scope user): the most specific owner of a stored value wins
 *   5. call      the per-call env the caller sent (never masked: it is not a secret of the org)
 *   6. reserved  TOOLPLANE_ORG_ID / _AGENT_ID / _TOOL_ID, which nothing else may set
 *
 * So: user over agent over org, the webhook's answer above the org's stored env and below the
 * agent's and the user's, the caller's own env above all stored values. Templates use layers 1, 3, 4.
 */
export const ENV_LAYERS = ['sandbox', 'webhook', 'agent', 'user', 'call', 'reserved'] as const;
export type EnvLayer = (typeof ENV_LAYERS)[number];

export interface EnvVar {
  value: string;
  /** Mask the value in the tool's output. */
  mask: boolean;
}

export type Layers = Partial<Record<EnvLayer, ReadonlyMap<string, EnvVar>>>;

/**
 * One call's env (or one template's values) in ENV_LAYERS order: sandbox-config vars < webhook
 * credentials < agent secrets < user secrets < per-call env < reserved ids. A later layer replaces
 * a name entirely (value and mask); only the reserved layer may set a reserved name.
 */
export function mergeEnv(layers: Layers): { env: Record<string, string>; maskedKeys: string[] } {
  const merged = new Map<string, EnvVar>();
  for (const layer of ENV_LAYERS) {
    for (const [key, v] of layers[layer] ?? []) {
      if (layer !== 'reserved' && (RESERVED_ENV_NAMES as readonly string[]).includes(key)) continue;
      merged.set(key, v);
    }
  }
  const env: Record<string, string> = {};
  const maskedKeys: string[] = [];
  for (const [key, v] of merged) {
    env[key] = v.value;
    if (v.mask) maskedKeys.push(key);
  }
  return { env, maskedKeys };
}

export function plain(vars: Record<string, string> | undefined, mask: boolean): Map<string, EnvVar> {
  return new Map(Object.entries(vars ?? {}).map(([k, value]) => [k, { value, mask }]));
}
