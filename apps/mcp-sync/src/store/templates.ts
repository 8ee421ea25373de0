import { ErrorCode, ToolplaneError, type McpAuthInput } from '@toolplane/contracts';

/** Whose secrets fill a call's templates beside the org's: its end user's, then its agent's. */
export interface TemplateCaller {
  userId?: string;
  agentId?: string;
}

/**
 * Where `{{VAR}}` templates in a server's env, headers and tokens get their values: the org's
 * secrets. One small interface so the credentials service can be wired in without touching the
 * connection code.
 */
export interface OrgSecretSource {
  /**
   * The values of those of `names` the org has; missing names are simply absent. With a caller, the
   * end user's own secrets come first, then the agent's, then the org's (the credentials service's
   * rule); without one, the org's only (a sync).
   */
  lookup(orgId: string, names: string[], caller?: TemplateCaller): Promise<Record<string, string>>;
}
export const ORG_SECRET_SOURCE = Symbol('ORG_SECRET_SOURCE');

const TEMPLATE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\|\s*([^}]*?)\s*)?\}\}/g;

/** The variable names referenced by templates in these values. */
export function templateNames(values: Iterable<string>): string[] {
  const names = new Set<string>();
  for (const v of values) for (const m of v.matchAll(TEMPLATE)) names.add(m[1]!);
  return [...names];
}

/** Replaces every `{{VAR}}` / `{{VAR | default}}`; a VAR with neither a value nor a default throws (naming the VAR, never a value). */
export function resolveTemplate(value: string, secrets: Record<string, string>, where: string): string {
  const missing: string[] = [];
  const out = value.replace(TEMPLATE, (_all, name: string, fallback: string | undefined) => {
    if (Object.hasOwn(secrets, name)) return secrets[name]!;
    if (fallback !== undefined) return fallback;
    missing.push(name);
    return '';
  });
  if (missing.length) {
    throw new ToolplaneError(
      ErrorCode.SECRET_NOT_FOUND,
      `${where} uses {{${missing.join('}}, {{')}}}, which the org has no secret for (and no default)`,
      { names: missing },
    );
  }
  return out;
}

export function resolveRecord(
  values: Record<string, string> | undefined,
  secrets: Record<string, string>,
  where: string,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values ?? {}).map(([k, v]) => [k, resolveTemplate(v, secrets, `${where} ${k}`)]),
  );
}

/** The templated secrets of a server's auth (bearer token; OAuth client secret and private key). */
export function authTemplates(auth: McpAuthInput | undefined): string[] {
  if (auth?.type === 'bearer') return [auth.token];
  if (auth?.type === 'oauth') return [auth.client_secret, auth.private_key].filter((v): v is string => v !== undefined);
  return [];
}

/** An OAuth auth with its client secret and private key resolved (memory only). */
export function resolveOAuth<A extends Extract<McpAuthInput, { type: 'oauth' }>>(
  auth: A,
  secrets: Record<string, string>,
): A {
  return {
    ...auth,
    ...(auth.client_secret
      ? { client_secret: resolveTemplate(auth.client_secret, secrets, 'auth.client_secret') }
      : {}),
    ...(auth.private_key ? { private_key: resolveTemplate(auth.private_key, secrets, 'auth.private_key') } : {}),
  };
}
