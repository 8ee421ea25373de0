import { RESERVED_ENV_NAMES } from '@toolplane/contracts';

/** Where a variable came from, lowest precedence first. */
export const ENV_LAYERS = ['sandbox', 'webhook', 'agent', 'call', 'reserved'] as const;
export type EnvLayer = (typeof ENV_LAYERS)[number];

export interface EnvVar {
  value: string;
  /** Mask the value in the tool's output. */
  mask: boolean;
}

export type Layers = Partial<Record<EnvLayer, ReadonlyMap<string, EnvVar>>>;

/**
 * One call's env: sandbox-config vars < webhook credentials < agent secrets < per-call env <
 * reserved ids. A later layer replaces a name entirely (value and mask); only the reserved layer
 * may set a reserved name.
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
