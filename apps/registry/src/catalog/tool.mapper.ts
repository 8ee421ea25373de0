import type { Tool, ToolType } from '@toolplane/contracts';
import type { ToolEntity } from './tool.entity';

/** Row → the seed's Tool object, exactly its fields. */
export function toWireTool(e: ToolEntity): Tool {
  return {
    id: e.id,
    tool_type: e.toolType as ToolType,
    description: e.description,
    source_type: e.sourceType,
    name: e.name,
    tags: e.tags ?? [],
    source_code: e.sourceCode,
    json_schema: e.jsonSchema,
    args_json_schema: e.argsJsonSchema,
    return_char_limit: e.returnCharLimit,
    pip_requirements: e.pipRequirements,
    npm_requirements: e.npmRequirements,
    default_requires_approval: e.defaultRequiresApproval,
    enable_parallel_execution: e.enableParallelExecution,
    created_by_id: e.createdById,
    last_updated_by_id: e.lastUpdatedById,
    metadata_: e.metadata,
    project_id: e.projectId,
  };
}
