import type { Tool } from '@toolplane/contracts';

/** A valid custom Python tool as the registry returns it (every field of the contract), with `over` applied. */
export function aTool(over: Partial<Tool> & { id: string; name: string }): Tool {
  return {
    tool_type: 'custom',
    description: over.name,
    source_type: 'python',
    tags: [],
    source_code: `def ${over.name}(x: int) -> int:\n    return x\n`,
    json_schema: {
      name: over.name,
      parameters: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] },
    },
    args_json_schema: null,
    return_char_limit: 50_000,
    pip_requirements: null,
    npm_requirements: null,
    default_requires_approval: null,
    enable_parallel_execution: null,
    created_by_id: null,
    last_updated_by_id: null,
    metadata_: null,
    project_id: null,
    ...over,
  };
}
