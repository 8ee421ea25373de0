import { Injectable } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type Tool } from '@toolplane/contracts';
import { OrgScopedCache } from '@toolplane/platform';
import Ajv, { type ValidateFunction } from 'ajv';

interface Compiled {
  /** The tool object it was compiled for (the catalog hands out the same one while it is cached). */
  tool: Tool;
  source: string;
  validate: ValidateFunction;
}

/** A validator does not go stale (its source is compared), so it lives until the entry bound or its org's tool changes. */
const VALIDATOR_TTL_MS = 24 * 3600_000;

/** Checks call arguments against the tool's json_schema.parameters; unknown arguments are refused. */
@Injectable()
export class ArgumentsService {
  private readonly ajv = new Ajv({ strict: false, allErrors: true, validateSchema: true });
  /** Compiled validators per org and tool, in the one org-scoped cache. */
  private readonly compiled = new OrgScopedCache<Compiled>(5000);

  check(orgId: string, tool: Tool, args: Record<string, unknown>): void {
    const validate = this.validatorFor(orgId, tool);
    if (validate(args)) return;
    const errors = (validate.errors ?? []).slice(0, 20).map((e) => ({
      path: e.instancePath || '(root)',
      keyword: e.keyword,
      message:
        e.keyword === 'additionalProperties'
          ? `unknown argument '${(e.params as { additionalProperty: string }).additionalProperty}'`
          : (e.message ?? 'invalid'),
    }));
    const summary = errors.map((e) => `${e.path === '(root)' ? '' : `${e.path.slice(1)}: `}${e.message}`).join('; ');
    throw new ToolplaneError(ErrorCode.INVALID_ARGUMENTS, `Invalid arguments for ${tool.name}: ${summary}`, { errors });
  }

  private validatorFor(orgId: string, tool: Tool): ValidateFunction {
    const hit = this.compiled.get(orgId, tool.id)?.value;
    if (hit?.tool === tool) return hit.validate;
    const parameters = (tool.json_schema?.parameters as Record<string, unknown> | undefined) ?? {
      type: 'object',
      properties: {},
    };
    const source = JSON.stringify(parameters);
    if (hit && hit.source === source) return hit.validate;
    let validate: ValidateFunction;
    try {
      validate = this.ajv.compile({ ...parameters, additionalProperties: parameters.additionalProperties ?? false });
    } catch (e) {
      throw new ToolplaneError(
        ErrorCode.SCHEMA_INVALID,
        `The json_schema of ${tool.name} cannot be used to check arguments: ${(e as Error).message}`,
        undefined,
        { cause: e },
      );
    }
    this.compiled.set(orgId, tool.id, { tool, source, validate }, VALIDATOR_TTL_MS, this.compiled.versionOf(orgId));
    return validate;
  }
}
