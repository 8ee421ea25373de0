import { createSchemaEngine } from '../schema-engine';
import type { SchemaEngine } from '../schema-engine.types';

/** The args_json_schema path: parameters from a pydantic model_json_schema(), description from the source. */
describe('args_json_schema', () => {
  let sut: SchemaEngine;
  beforeAll(async () => {
    sut = await createSchemaEngine();
  });

  // What pydantic v2 gives for:
  //   class Address(BaseModel): city: str = Field(description="City."); zip: str = Field(pattern=r"^\d{5}$", description="ZIP.")
  //   class Unit(str, Enum): C = "c"; F = "f"
  //   class Args(BaseModel):
  //       location: Address = Field(description="Where.")
  //       unit: Unit = Field(Unit.C, description="Unit.")
  //       days: int = Field(3, ge=1, le=14, description="Days.")
  //       email: Optional[EmailStr] = Field(None, description="Notify.")
  const pydantic = {
    $defs: {
      Address: {
        properties: {
          city: { description: 'City.', title: 'City', type: 'string' },
          zip: { description: 'ZIP.', pattern: '^\\d{5}$', title: 'Zip', type: 'string' },
        },
        required: ['city', 'zip'],
        title: 'Address',
        type: 'object',
      },
      Unit: { enum: ['c', 'f'], title: 'Unit', type: 'string' },
    },
    properties: {
      location: { $ref: '#/$defs/Address', description: 'Where.' },
      unit: { $ref: '#/$defs/Unit', default: 'c', description: 'Unit.' },
      days: { default: 3, description: 'Days.', maximum: 14, minimum: 1, title: 'Days', type: 'integer' },
      email: {
        anyOf: [{ format: 'email', type: 'string' }, { type: 'null' }],
        default: null,
        description: 'Notify.',
        title: 'Email',
      },
    },
    required: ['location'],
    title: 'Args',
    type: 'object',
  };
  const source = `def forecast(location, unit="c", days=3, email=None):\n    """Weather forecast.\n\n    Looks up the forecast.\n\n    Args:\n        location: ignored, the args schema wins.\n    """\n    return ""\n`;

  it('derives parameters from the model schema: refs inlined, enum/format/constraints kept, titles dropped', () => {
    const out = sut.generate({ source_code: source, args_json_schema: pydantic });
    expect(out.json_schema).toEqual({
      name: 'forecast',
      description: 'Weather forecast.\n\nLooks up the forecast.',
      parameters: {
        type: 'object',
        properties: {
          location: {
            type: 'object',
            properties: {
              city: { description: 'City.', type: 'string' },
              zip: { description: 'ZIP.', pattern: '^\\d{5}$', type: 'string' },
            },
            required: ['city', 'zip'],
            description: 'Where.',
          },
          unit: { enum: ['c', 'f'], type: 'string', default: 'c', description: 'Unit.' },
          days: { default: 3, description: 'Days.', maximum: 14, minimum: 1, type: 'integer' },
          email: {
            anyOf: [{ format: 'email', type: 'string' }, { type: 'null' }],
            default: null,
            description: 'Notify.',
          },
        },
        required: ['location'],
      },
    });
    expect(out.health).toBe('NON_STRICT_ONLY');
  });

  it('does not modify the args schema it was given', () => {
    const before = JSON.stringify(pydantic);
    sut.generate({ source_code: source, args_json_schema: pydantic });
    expect(JSON.stringify(pydantic)).toBe(before);
  });

  it('orders required by property order and keeps a field named "title"', () => {
    const out = sut.generate({
      source_code: source,
      args_json_schema: {
        type: 'object',
        properties: { title: { type: 'string', title: 'Title' }, b: { type: 'integer' } },
        required: ['b', 'title'],
      },
    });
    expect(out.json_schema.parameters).toEqual({
      type: 'object',
      properties: { title: { type: 'string' }, b: { type: 'integer' } },
      required: ['title', 'b'],
    });
  });

  it('works with a TypeScript source (JSDoc description, parameters unchecked)', () => {
    const out = sut.generate({
      source_code: '/** Forecast. */\nexport function forecast(args: unknown) {}\n',
      source_type: 'typescript',
      args_json_schema: { type: 'object', properties: { q: { type: 'string', description: 'Q.' } }, required: ['q'] },
    });
    expect(out.json_schema).toEqual({
      name: 'forecast',
      description: 'Forecast.',
      parameters: { type: 'object', properties: { q: { type: 'string', description: 'Q.' } }, required: ['q'] },
    });
  });

  it('still requires a docstring, and rejects args schemas that are not object schemas', () => {
    expect(() => sut.generate({ source_code: 'def f(a):\n    return a\n', args_json_schema: pydantic })).toThrow(
      expect.objectContaining({ reason: 'MISSING_DOCSTRING' }),
    );
    expect(() => sut.generate({ source_code: source, args_json_schema: { type: 'array', items: {} } })).toThrow(
      expect.objectContaining({ reason: 'INVALID_ARGS_SCHEMA' }),
    );
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 1000; i += 1) deep = { type: 'object', properties: { x: deep } };
    expect(() => sut.generate({ source_code: source, args_json_schema: deep })).toThrow(
      expect.objectContaining({ reason: 'INVALID_ARGS_SCHEMA' }),
    );
  });

  it('keeps a local ref with a malformed %-escape as it is (it threw URIError)', () => {
    const out = sut.generate({
      source_code: source,
      args_json_schema: { type: 'object', properties: { q: { $ref: '#/$defs/%E0' } } },
    });
    expect(out.json_schema.parameters.properties.q).toEqual({ $ref: '#/$defs/%E0' });
    expect(out.health).toBe('INVALID');
  });
});
