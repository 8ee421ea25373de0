import type { Toolset } from '@toolplane/contracts';
import type { ToolsetEntity } from './toolset.entity';

/** Row → the wire toolset, every field present. */
export function toWireToolset(e: ToolsetEntity): Toolset {
  return {
    id: e.id,
    org_id: e.orgId,
    name: e.name,
    description: e.description,
    instructions: e.instructions,
    tool_ids: e.toolIds ?? [],
    tool_names: e.toolNames ?? [],
    tags: e.tags ?? [],
    requires_approval: e.requiresApproval,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt.toISOString(),
  };
}
