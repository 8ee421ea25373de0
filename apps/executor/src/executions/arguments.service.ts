import { Injectable } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type Tool } from '@toolplane/contracts';
import Ajv, { type ValidateFunction } from 'ajv';

/** Checks call arguments against the tool's json_schema.parameters; unknown arguments are refused. */
@Injectable()
export class ArgumentsService {
  private readonly ajv = new Ajv({ strict: false, allErrors: true, validateSchema: true });
  private readonly compiled = new Map<string, { source: string; validate: ValidateFunction }>();

  check(tool: Tool, args: Record<string, unknown>): void {
    const validate = this.validatorFor(tool);
    if (validate(args)) return;
    const errors = (validate.errors ?? []).slice(0, 20).map((e) => ({
      path: e.instancePath || '(root)',
      keyword: e.keyword,
      message: e.keyword === 'additionalProperties' ? `unknown argument '${(e.params as { additionalProperty: string }).additionalProperty}'` : (e.message ?? 'invalid'),
    }));
    const summary = errors.map((e) => `${e.path === '(root)' ? '' : `${e.path.slice(1)}: `}${e.message}`).join('; ');
    throw new ToolplaneError(ErrorCode.INVALID_ARGUMENTS, `Invalid arguments for ${tool.name}: ${summary}`, { errors });
  }

  private validatorFor(tool: Tool): ValidateFunction {
    const parameters = (tool.json_schema?.parameters as Record<string, unknown> | undefined) ?? { type: 'object', properties: {} };
    const source = JSON.stringify(parameters);
    const hit = this.compiled.get(tool.id);
    if (hit && hit.source === source) return hit.validate;
    let validate: ValidateFunction;
    try {
      validate = this.ajv.compile({ ...parameters, additionalProperties: parameters.additionalProperties ?? false });
    } catch (e) {
      throw new ToolplaneError(ErrorCode.SCHEMA_INVALID, `The json_schema of ${tool.name} cannot be used to check arguments: ${(e as Error).message}`);
    }
    if (this.compiled.size > 5000) this.compiled.clear();
    this.compiled.set(tool.id, { source, validate });
    return validate;
  }
}
