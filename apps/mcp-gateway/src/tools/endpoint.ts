/** Where a session's tools come from: an agent's attached tools, or a tool set the org publishes. */
export type Endpoint = { kind: 'agent'; id: string } | { kind: 'toolset'; id: string };

/** `agent:<id>` / `toolset:<name>`: the endpoint as a cache part and a session field. */
export function endpointKey(e: Endpoint): string {
  return `${e.kind}:${e.id}`;
}

/** The endpoint's path under the gateway's base URL. */
export function endpointPath(e: Endpoint): string {
  return `/mcp/${e.kind === 'agent' ? 'agents' : 'toolsets'}/${encodeURIComponent(e.id)}`;
}
