import {
  ErrorCode,
  type ExecutionEnvResolve,
  LocalRunnerRun,
  Provider,
  type ReplyOf,
  type RequestOf,
  RUNNERS,
  type SandboxSettings,
  type Tool,
  ToolplaneError,
  type ToolsExecute,
} from '@toolplane/contracts';

type RunRequest = RequestOf<typeof LocalRunnerRun>;
type ResolvedEnv = ReplyOf<typeof ExecutionEnvResolve>;

/** The provider's runner subjects; a provider this version cannot run answers PROVIDER_UNAVAILABLE (the fallback list applies). */
export function runnerOf(provider: Provider): (typeof RUNNERS)[keyof typeof RUNNERS] {
  const runner = (RUNNERS as Partial<Record<Provider, (typeof RUNNERS)[keyof typeof RUNNERS]>>)[provider];
  if (!runner)
    throw new ToolplaneError(
      ErrorCode.PROVIDER_UNAVAILABLE,
      `No runner for provider ${provider} in this version of Toolplane`,
      { provider },
    );
  return runner;
}

/** What every provider's runner gets for one call (RunnerRunRequest), from the tool, the call and its resolved env. */
export function runRequestOf(
  tool: Tool,
  req: Pick<RequestOf<typeof ToolsExecute>, 'org_id' | 'args' | 'agent_id'>,
  resolved: ResolvedEnv,
  timeoutMs: number,
): RunRequest {
  const functionName = (typeof tool.json_schema?.name === 'string' ? tool.json_schema.name : undefined) ?? tool.name!;
  return {
    ...environmentRequestOf(tool, req.org_id, resolved),
    function_name: functionName,
    source_code: tool.source_code!,
    args: req.args,
    ...(req.agent_id ? { agent_id: req.agent_id } : {}),
    // The final env has one owner, the credentials service (layers, reserved ids last): passed on as it is.
    env: resolved.env,
    ...(resolved.masked_keys.length ? { masked_keys: resolved.masked_keys } : {}),
    timeout_ms: timeoutMs,
  };
}

/** The part of a run request that decides the call's environment (packages, sandbox settings, provider credentials). */
export function environmentRequestOf(tool: Tool, orgId: string, resolved: ResolvedEnv) {
  const settings = resolved.sandbox_config;
  const sourceType = tool.source_type ?? 'python';
  const pip = mergePipRequirements(tool.pip_requirements ?? [], settings?.pip_requirements ?? []);
  const sandbox = sandboxOverrides(settings);
  return {
    org_id: orgId,
    tool_id: tool.id,
    source_type: sourceType,
    ...(pip.length && sourceType === 'python' ? { pip_requirements: pip } : {}),
    ...(tool.npm_requirements?.length ? { npm_requirements: tool.npm_requirements } : {}),
    ...(sandbox ? { sandbox } : {}),
    ...(resolved.provider_credentials ? { provider_credentials: resolved.provider_credentials } : {}),
    sandbox_config_fingerprint: resolved.sandbox_config_fingerprint,
  } satisfies Partial<RunRequest>;
}

type PipRequirements = NonNullable<Tool['pip_requirements']>;

/**
 * The tool's pip requirements plus the sandbox config's; a package named by both takes the
 * tool's version (names compared as pip does: case-insensitive, `-`/`_`/`.` alike).
 */
export function mergePipRequirements(fromTool: PipRequirements, fromConfig: PipRequirements): PipRequirements {
  const key = (n: string) => n.toLowerCase().replace(/[-_.]+/g, '-');
  const byName = new Map(fromConfig.map((r) => [key(r.name), r]));
  for (const r of fromTool) byName.set(key(r.name), r);
  return [...byName.values()];
}

/** The sandbox config's settings a runner applies per call (`cpu`, `template` and `calls_per_sandbox` are for remote providers). */
export function sandboxOverrides(settings: SandboxSettings | null): RunRequest['sandbox'] | undefined {
  if (!settings) return undefined;
  const out: NonNullable<RunRequest['sandbox']> = {};
  if (settings.memory_mb !== undefined) out.memory_mb = settings.memory_mb;
  if (settings.network !== undefined) out.network = settings.network === 'egress';
  if (settings.build_scripts !== undefined) out.build_scripts = settings.build_scripts;
  if (settings.template !== undefined) out.template = settings.template;
  if (settings.cpu !== undefined) out.cpu = settings.cpu;
  if (settings.calls_per_sandbox !== undefined) out.calls_per_sandbox = settings.calls_per_sandbox;
  return Object.keys(out).length ? out : undefined;
}

/** The provider a tool names in `metadata_.sandbox` (undefined: the org's default). A name that is not a provider is refused. */
export function providerOf(tool: Tool): Provider | undefined {
  const named = tool.metadata_?.sandbox;
  if (named === undefined || named === null) return undefined;
  const p = Provider.safeParse(named);
  if (!p.success) {
    throw new ToolplaneError(
      ErrorCode.UNSUPPORTED_TOOL,
      `Tool ${tool.name} names an unknown sandbox provider in metadata_.sandbox (one of ${Provider.options.join(', ')})`,
      {
        sandbox: String(named).slice(0, 64),
      },
    );
  }
  return p.data;
}
