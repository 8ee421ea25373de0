import { nextResyncInMs } from './sync.scheduler';
import { mapTool, mapTools } from './tool-mapper';

const server = { id: 'mcp-123e4567-e89b-12d3-a456-426614174000', name: 'srv', toolPrefix: null };

describe('tool mapping', () => {
  it('normalizes the schema, records health and tags the server', () => {
    const sut = mapTool(server, {
      name: 'get_weather',
      description: 'Weather.',
      inputSchema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
      },
    });
    expect(sut.health).toBe('STRICT_COMPLIANT');
    expect(sut.input).toMatchObject({
      name: 'get_weather',
      tags: ['mcp:srv'],
      json_schema: {
        name: 'get_weather',
        description: 'Weather.',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        },
      },
      metadata_: {
        mcp: {
          server_id: server.id,
          server_name: 'srv',
          tool_name: 'get_weather',
          health: 'STRICT_COMPLIANT',
          reasons: [],
        },
      },
    });
    expect(sut.input.metadata_.mcp).not.toHaveProperty('original_schema');
  });

  it('keeps the title, output schema and annotations the server gave, for the gateway to serve', () => {
    const outputSchema = { type: 'object', properties: { temperature: { type: 'number' } }, required: ['temperature'] };
    const sut = mapTool(server, {
      name: 'weather',
      title: 'Weather',
      inputSchema: { type: 'object' },
      outputSchema,
      annotations: { readOnlyHint: true },
    });
    expect(sut.input.metadata_.mcp).toMatchObject({
      title: 'Weather',
      output_schema: outputSchema,
      annotations: { readOnlyHint: true },
    });
    const odd = mapTool(server, { name: 'plain', title: 7, inputSchema: { type: 'object' }, outputSchema: 'no' }).input
      .metadata_.mcp;
    expect(odd).not.toHaveProperty('title');
    expect(odd).not.toHaveProperty('output_schema');
  });

  it('keeps an unusable tool as INVALID with its reasons and original schema', () => {
    const sut = mapTool({ ...server, toolPrefix: 'gh' }, { name: 'list', inputSchema: 42 });
    expect(sut.health).toBe('INVALID');
    expect(sut.input.name).toBe('gh_list');
    expect(sut.reasons).toContain('inputSchema: missing or not a JSON object');
    expect(sut.input.metadata_).toMatchObject({ mcp: { tool_name: 'list', health: 'INVALID', original_schema: 42 } });
  });

  it('reports a name listed twice instead of silently keeping one', () => {
    const { mapped, errors } = mapTools(server, [
      { name: 'a', inputSchema: { type: 'object' } },
      { name: 'a', inputSchema: { type: 'object' } },
    ]);
    expect(mapped).toHaveLength(1);
    expect(errors).toEqual([expect.objectContaining({ code: 'MCP_TOOL_DUPLICATE', tool: 'a' })]);
  });

  it('spreads periodic resyncs by ± the jitter', () => {
    expect(nextResyncInMs(1000, 0.2, () => 0)).toBe(800);
    expect(nextResyncInMs(1000, 0.2, () => 1)).toBe(1200);
    expect(nextResyncInMs(1000, 0, () => 0.3)).toBe(1000);
  });
});
