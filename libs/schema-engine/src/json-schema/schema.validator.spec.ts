import { validateSchema as sut } from './schema.validator';

const strictParameters = {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'City.' },
    days: { type: ['integer', 'null'], description: 'Days.' },
    units: { type: 'string', enum: ['c', 'f'] },
    stops: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string' } },
        required: ['name'],
        additionalProperties: false,
      },
    },
    when: { anyOf: [{ type: 'string' }, { type: 'null' }] },
  },
  required: ['city', 'days', 'units', 'stops', 'when'],
  additionalProperties: false,
};

describe('validateSchema', () => {
  it('classifies a strict-mode schema as STRICT_COMPLIANT, bare or as a function', () => {
    expect(sut(strictParameters)).toEqual({ health: 'STRICT_COMPLIANT', reasons: [] });
    expect(sut({ name: 'get_weather', description: 'Weather.', parameters: strictParameters })).toEqual({
      health: 'STRICT_COMPLIANT',
      reasons: [],
    });
    expect(sut({ type: 'function', function: { name: 'get-weather', parameters: strictParameters } }).health).toBe(
      'STRICT_COMPLIANT',
    );
  });

  it('classifies a typical generated schema as NON_STRICT_ONLY, as Letta does', () => {
    const report = sut({
      name: 'add',
      description: 'Add.',
      parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a'] },
    });
    expect(report.health).toBe('NON_STRICT_ONLY');
    expect(report.reasons).toEqual([
      "root: 'additionalProperties' not explicitly set",
      "root: strict mode requires every property in 'required' (make optional ones nullable instead): b",
    ]);
  });

  it.each<[string, unknown, string]>([
    [
      'a free-form nested object',
      { type: 'object', properties: { m: { type: 'object' } }, required: ['m'], additionalProperties: false },
      "root.properties.m: 'additionalProperties' not explicitly set",
    ],
    [
      'additionalProperties true',
      { type: 'object', properties: {}, required: [], additionalProperties: true },
      "root: 'additionalProperties' is not false (free-form object)",
    ],
    [
      'a nested object without required',
      {
        type: 'object',
        properties: { m: { type: 'object', properties: {}, additionalProperties: false } },
        required: [],
        additionalProperties: false,
      },
      "root.properties.m: 'required' not specified for object",
    ],
    [
      'allOf',
      {
        type: 'object',
        properties: { a: { allOf: [{ type: 'string' }] } },
        required: ['a'],
        additionalProperties: false,
      },
      "root.properties.a: 'allOf' is not supported in strict mode",
    ],
    [
      'not',
      {
        type: 'object',
        properties: { a: { type: 'string', not: { enum: ['x'] } } },
        required: ['a'],
        additionalProperties: false,
      },
      "root.properties.a: 'not' is not supported in strict mode",
    ],
    [
      'if/then/else',
      {
        type: 'object',
        properties: { a: { type: 'string', if: {}, then: {}, else: {} } },
        required: ['a'],
        additionalProperties: false,
      },
      "root.properties.a: 'if' is not supported in strict mode",
    ],
    [
      'dependentRequired',
      { type: 'object', properties: {}, required: [], additionalProperties: false, dependentRequired: {} },
      "root: 'dependentRequired' is not supported in strict mode",
    ],
    [
      'dependentSchemas',
      { type: 'object', properties: {}, required: [], additionalProperties: false, dependentSchemas: {} },
      "root: 'dependentSchemas' is not supported in strict mode",
    ],
    [
      'patternProperties',
      { type: 'object', properties: {}, required: [], additionalProperties: false, patternProperties: {} },
      "root: 'patternProperties' is not supported in strict mode",
    ],
    [
      'a root anyOf',
      { type: 'object', anyOf: [], properties: {}, required: [], additionalProperties: false },
      "root: strict mode does not allow 'anyOf' at the root",
    ],
    [
      'an enum without type',
      { type: 'object', properties: { a: { enum: ['x'] } }, required: ['a'], additionalProperties: false },
      "root.properties.a: 'type' is missing (implied by enum/const)",
    ],
  ])('classifies %s as NON_STRICT_ONLY', (_, schema, reason) => {
    const report = sut(schema);
    expect(report.health).toBe('NON_STRICT_ONLY');
    expect(report.reasons).toContain(reason);
  });

  it.each<[string, unknown, string]>([
    ['a non-object', [], 'Top-level schema must be a JSON object (a function schema or its parameters)'],
    [
      'a non-object root type',
      { type: 'array', items: { type: 'string' } },
      "Top-level schema 'type' must be 'object' for OpenAI tools",
    ],
    [
      'a property without type',
      { type: 'object', properties: { a: { description: 'A.' } }, required: ['a'], additionalProperties: false },
      "root.properties.a: Missing 'type'",
    ],
    [
      'an unknown type',
      { type: 'object', properties: { a: { type: 'date' } }, required: ['a'], additionalProperties: false },
      "root.properties.a: 'type' must be one of",
    ],
    [
      'an array without items',
      {
        type: 'object',
        properties: {
          a: { type: 'object', properties: { b: { type: 'array' } }, required: [], additionalProperties: false },
        },
        required: [],
        additionalProperties: false,
      },
      "root.properties.a.properties.b: 'items' must be defined for arrays in strict mode",
    ],
    [
      'items that are not a schema',
      {
        type: 'object',
        properties: { a: { type: 'array', items: [{ type: 'string' }] } },
        required: [],
        additionalProperties: false,
      },
      "root.properties.a: 'items' must be a schema object for arrays",
    ],
    [
      'an untyped nested item',
      {
        type: 'object',
        properties: { a: { type: 'array', items: { type: 'array', items: {} } } },
        required: [],
        additionalProperties: false,
      },
      "root.properties.a.items.items: Missing 'type'",
    ],
    [
      'a required key absent from properties',
      { type: 'object', properties: { a: { type: 'string' } }, required: ['a', 'b'], additionalProperties: false },
      "root: required contains 'b' not found in properties",
    ],
    [
      'a required key with no properties at all',
      { type: 'object', required: ['b'], additionalProperties: false },
      "root: required contains 'b' not found in properties",
    ],
    [
      'required that is not a list',
      { type: 'object', properties: {}, required: 'a', additionalProperties: false },
      "root: 'required' must be a list of property names",
    ],
    [
      'properties that are not an object',
      { type: 'object', properties: [], additionalProperties: false },
      "root: 'properties' must be an object",
    ],
    [
      'a property that is not a schema',
      { type: 'object', properties: { a: 'string' }, required: [], additionalProperties: false },
      'root.properties.a: Not a valid schema object',
    ],
    [
      'a required property allowing an empty object',
      {
        type: 'object',
        properties: { o: { type: 'object', properties: {}, additionalProperties: false } },
        required: ['o'],
        additionalProperties: false,
      },
      "root: required property 'o' allows empty object (OpenAI will reject)",
    ],
    [
      'anyOf that is not a list',
      {
        type: 'object',
        properties: { a: { anyOf: { type: 'string' } } },
        required: ['a'],
        additionalProperties: false,
      },
      "root.properties.a: 'anyOf' must be a list",
    ],
    [
      'an empty enum',
      { type: 'object', properties: { a: { type: 'string', enum: [] } }, required: ['a'], additionalProperties: false },
      "root.properties.a: 'enum' must be a non-empty list",
    ],
    [
      'a dangling $ref',
      { type: 'object', properties: { a: { $ref: '#/$defs/Missing' } }, required: ['a'], additionalProperties: false },
      'root.properties.a: \'$ref\' "#/$defs/Missing" does not resolve to a local definition',
    ],
    [
      'a bad function name',
      { name: 'get weather!', parameters: strictParameters },
      'function.name: must match ^[a-zA-Z0-9_-]{1,64}$ (got "get weather!")',
    ],
    [
      'a function name over 64 characters',
      { name: 'x'.repeat(65), parameters: strictParameters },
      'function.name: must match',
    ],
    [
      'a function without parameters',
      { name: 'f', description: 'F.' },
      'function.parameters: missing (an object schema is required, even with no properties)',
    ],
    [
      'a non-string description',
      { name: 'f', description: 42, parameters: strictParameters },
      'function.description: must be a string',
    ],
  ])('classifies %s as INVALID', (_, schema, reason) => {
    const report = sut(schema);
    expect(report.health).toBe('INVALID');
    expect(report.reasons.some((r) => r.startsWith(reason))).toBe(true);
  });

  it('classifies a generated schema with defaults exactly as the same schema without them', () => {
    const parameters = (withDefault: boolean) => ({
      type: 'object',
      properties: {
        a: { type: 'integer', description: 'A.' },
        b: { type: 'integer', description: 'B.', ...(withDefault ? { default: 2 } : {}) },
        c: { type: 'array', items: { type: 'string' }, description: 'C.', ...(withDefault ? { default: ['x'] } : {}) },
        d: { type: 'string', description: 'D.', ...(withDefault ? { default: null } : {}) },
      },
      required: ['a'],
    });
    const withDefaults = sut({ name: 'f', description: 'F.', parameters: parameters(true) });
    expect(withDefaults).toEqual(sut({ name: 'f', description: 'F.', parameters: parameters(false) }));
    expect(withDefaults.health).toBe('NON_STRICT_ONLY');
  });

  it('accepts $defs with a resolving $ref and validates the definitions', () => {
    const schema = {
      type: 'object',
      properties: { a: { $ref: '#/$defs/A' } },
      required: ['a'],
      additionalProperties: false,
      $defs: {
        A: { type: 'object', properties: { x: { type: 'array' } }, required: ['x'], additionalProperties: false },
      },
    };
    expect(sut(schema).reasons).toEqual(
      [
        "root.$defs.A.properties.x: 'items' must be defined for arrays in strict mode",
        "root.$defs.A: required property 'x' allows empty array (OpenAI will reject)",
      ].reverse(),
    );
  });

  it('flags schemas over the strict-mode size limits', () => {
    const wide = Object.fromEntries(Array.from({ length: 5001 }, (_, i) => [`p${i}`, { type: 'string' }]));
    const wideReport = sut({
      type: 'object',
      properties: wide,
      required: Object.keys(wide),
      additionalProperties: false,
    });
    expect(wideReport).toEqual({
      health: 'NON_STRICT_ONLY',
      reasons: ['root: 5001 properties in total; strict mode allows at most 5000'],
    });

    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 11; i += 1)
      deep = { type: 'object', properties: { n: deep }, required: ['n'], additionalProperties: false };
    const deepReport = sut(deep);
    expect(deepReport.health).toBe('NON_STRICT_ONLY');
    expect(deepReport.reasons).toEqual([
      `root${'.properties.n'.repeat(11)}: nested 11 levels deep; strict mode allows at most 10`,
    ]);
  });

  it('survives hostile input: very deep nesting and cycles', () => {
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 10_000; i += 1) deep = { type: 'array', items: deep };
    const deepReport = sut({ type: 'object', properties: { a: deep }, required: [], additionalProperties: false });
    expect(deepReport.health).toBe('INVALID');
    expect(deepReport.reasons.filter((r) => r.includes('nested more than 100 levels deep'))).toHaveLength(1);

    const cyclic: Record<string, unknown> = { type: 'object', required: [], additionalProperties: false };
    cyclic.properties = { self: cyclic };
    const cyclicReport = sut(cyclic);
    expect(cyclicReport.health).toBe('INVALID');
    expect(cyclicReport.reasons).toContain('root.properties.self: schema contains a reference cycle');
  });
});
