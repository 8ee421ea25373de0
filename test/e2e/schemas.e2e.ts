import { testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';

const TS_TOOL = `/** A stop on a trip. */
interface Stop {
  /** City name. */
  city: string;
  /** Nights to stay. */
  nights?: number;
}

/**
 * Plan a trip.
 *
 * Returns an itinerary.
 * @param stops The stops, in order.
 * @param budget Budget class.
 */
export async function planTrip(stops: Stop[], budget: 'low' | 'high' = 'low'): Promise<string> {
  return stops.map((s) => s.city).join(' -> ');
}
`;

const PY_NEEDS_ARGS = `def forecast(location, days=3):
    """Weather forecast for a place."""
    return ""
`;

describe('schema service over the public NATS API', () => {
  let client: RawClient;
  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(() => client.close());

  it('derives a schema from TypeScript source on schemas.generate', async () => {
    const r = await client.req('toolplane.v1.schemas.generate', { source_code: TS_TOOL, source_type: 'typescript' });
    expect(r.json_schema).toEqual({
      name: 'planTrip',
      description: 'Plan a trip.\n\nReturns an itinerary.',
      parameters: {
        type: 'object',
        properties: {
          stops: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                city: { type: 'string', description: 'City name.' },
                nights: { type: 'number', description: 'Nights to stay.' },
              },
              required: ['city'],
              description: 'A stop on a trip.',
            },
            description: 'The stops, in order.',
          },
          budget: { type: 'string', enum: ['low', 'high'], description: 'Budget class.', default: 'low' },
        },
        required: ['stops'],
      },
    });
    expect(r.health).toBe('NON_STRICT_ONLY');
  });

  it('answers SCHEMA_GENERATION_FAILED with reason, parameter and line for bad TypeScript', async () => {
    const r = await client.req('toolplane.v1.schemas.generate', {
      source_code: '/**\n * F.\n */\nexport function f(when: Date) {}\n',
      source_type: 'typescript',
    });
    expect(r.error).toMatchObject({
      code: 'SCHEMA_GENERATION_FAILED',
      retryable: false,
      details: { reason: 'UNSUPPORTED_ANNOTATION', parameter: 'when', line: 4 },
    });
    expect(r.error.message).not.toMatch(/\n\s+at /);
  });

  it('registers a TypeScript tool on upsert with its derived schema', async () => {
    const org = uniqueOrg();
    const { tool } = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: TS_TOOL, source_type: 'typescript' },
    });
    expect(tool).toMatchObject({
      name: 'planTrip',
      source_type: 'typescript',
      description: 'Plan a trip.\n\nReturns an itinerary.',
    });
    expect(tool.json_schema.parameters.required).toEqual(['stops']);
    const got = await client.req('toolplane.v1.tools.get', { org_id: org, name: 'planTrip' });
    expect(got.tool.json_schema).toEqual(tool.json_schema);
  });

  it('derives parameters from args_json_schema on upsert, description from the docstring', async () => {
    const args = {
      type: 'object',
      title: 'Args',
      properties: {
        location: { $ref: '#/$defs/Place', description: 'Where.' },
        days: { type: 'integer', minimum: 1, maximum: 14, default: 3, title: 'Days', description: 'Days ahead.' },
      },
      required: ['location'],
      $defs: {
        Place: {
          type: 'object',
          title: 'Place',
          properties: { city: { type: 'string', description: 'City.' } },
          required: ['city'],
        },
      },
    };
    const { tool } = await client.req('toolplane.v1.tools.upsert', {
      org_id: uniqueOrg(),
      tool: { source_code: PY_NEEDS_ARGS, args_json_schema: args },
    });
    expect(tool.args_json_schema).toEqual(args);
    expect(tool.json_schema).toEqual({
      name: 'forecast',
      description: 'Weather forecast for a place.',
      parameters: {
        type: 'object',
        properties: {
          location: {
            type: 'object',
            properties: { city: { type: 'string', description: 'City.' } },
            required: ['city'],
            description: 'Where.',
          },
          days: { type: 'integer', minimum: 1, maximum: 14, default: 3, description: 'Days ahead.' },
        },
        required: ['location'],
      },
    });
  });

  it('converts a schema for strict mode on schemas.strictify, and refuses a free-form one with reasons', async () => {
    const gen = await client.req('toolplane.v1.schemas.generate', { source_code: TS_TOOL, source_type: 'typescript' });
    const strict = await client.req('toolplane.v1.schemas.strictify', { json_schema: gen.json_schema });
    expect(strict).toMatchObject({ strict: true, health: 'STRICT_COMPLIANT', reasons: [] });
    expect(strict.json_schema.strict).toBe(true);
    expect(strict.json_schema.parameters.required).toEqual(['stops', 'budget']);
    // `default: 'low'` is dropped: strict mode does not take `default`.
    expect(strict.json_schema.parameters.properties.budget).toEqual({
      type: ['string', 'null'],
      enum: ['low', 'high', null],
      description: 'Budget class.',
    });

    const loose = {
      type: 'object',
      properties: { meta: { type: 'object', additionalProperties: { type: 'string' } } },
      required: ['meta'],
    };
    const refused = await client.req('toolplane.v1.schemas.strictify', { json_schema: loose });
    expect(refused).toMatchObject({ strict: false, health: 'NON_STRICT_ONLY', json_schema: loose });
    expect(refused.reasons[0]).toMatch(/^not converted/);
  });

  it('normalizes an MCP input schema on schemas.normalize, returning the original beside it', async () => {
    const mcp = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { repo: { $ref: '#/definitions/Repo' }, opts: { type: 'object' } },
      required: ['repo'],
      definitions: { Repo: { type: 'object', properties: { owner: { type: 'string' } }, required: ['owner'] } },
    };
    const r = await client.req('toolplane.v1.schemas.normalize', { json_schema: mcp });
    expect(r.original_json_schema).toEqual(mcp);
    expect(r.json_schema).toEqual({
      type: 'object',
      properties: {
        repo: {
          type: 'object',
          properties: { owner: { type: 'string' } },
          required: ['owner'],
          additionalProperties: false,
        },
        opts: { type: 'object', properties: {}, additionalProperties: false },
      },
      required: ['repo'],
      additionalProperties: false,
    });
    expect(r.changes.length).toBeGreaterThan(0);
  });

  it('answers CONTRACT_VIOLATION when strictify or normalize get no schema object', async () => {
    for (const subject of ['toolplane.v1.schemas.strictify', 'toolplane.v1.schemas.normalize']) {
      const r = await client.req(subject, { json_schema: 'nope' });
      expect(r.error.code).toBe('CONTRACT_VIOLATION');
    }
  });
});
