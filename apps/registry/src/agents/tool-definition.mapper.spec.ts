import type Anthropic from '@anthropic-ai/sdk';
import type { FunctionDeclaration, Type } from '@google/genai';
import {
  AgentToolDefinitions,
  AnthropicToolDefinition,
  GeminiDeclaration,
  OpenAIChatToolDefinition,
  OpenAIResponsesToolDefinition,
  type DefinitionFormat,
} from '@toolplane/contracts';
import { toStrictSchema, validateSchema } from '@toolplane/schema-engine';
import type OpenAI from 'openai';
import type { z } from 'zod';
import { providerValidators } from './provider-tool.schema';
import { toDefinitions, toGeminiParameters, type DefinitionSource } from './tool-definition.mapper';

/**
 * Compile-time: the contract's definition types (which every reply is parsed with) fit each SDK's
 * own type. `npm run typecheck` fails when a provider's SDK (pinned) disagrees with the contract.
 */
type EnumFree<T> = T extends Type
  ? `${Type}`
  : T extends Array<infer U>
    ? Array<EnumFree<U>>
    : T extends object
      ? { [K in keyof T]: EnumFree<T[K]> }
      : T;
const asOpenAIChat = (
  d: z.infer<typeof OpenAIChatToolDefinition>,
): OpenAI.Chat.Completions.ChatCompletionFunctionTool => d;
const asOpenAIResponses = (d: z.infer<typeof OpenAIResponsesToolDefinition>): OpenAI.Responses.FunctionTool => d;
const asAnthropic = (d: z.infer<typeof AnthropicToolDefinition>): Anthropic.Messages.Tool => d;
const asGemini = (d: z.infer<typeof GeminiDeclaration>): EnumFree<FunctionDeclaration> => d;
// The checks bite: the Responses API's FunctionTool requires `strict` and `parameters`, Gemini's types are capitals.
// @ts-expect-error missing strict
const _noStrict: OpenAI.Responses.FunctionTool = { type: 'function', name: 'f', parameters: {} };
// @ts-expect-error lower-case type
const _lowerCase: EnumFree<FunctionDeclaration> = { name: 'f', parameters: { type: 'string' } };

const valid = providerValidators();

/** A source as the registry builds it: the schema engine's health and strict conversion of the parameters. */
function source(
  name: string,
  parameters: Record<string, unknown>,
  description: string | null = `The ${name} tool.`,
): DefinitionSource {
  const report = validateSchema(parameters);
  const strict = toStrictSchema(parameters);
  return {
    toolId: `tool-00000000-0000-4000-8000-${String(name.length).padStart(12, '0')}`,
    name,
    description,
    parameters,
    health: strict.strict ? 'STRICT_COMPLIANT' : report.health,
    reasons: strict.strict ? [] : report.reasons,
    strictParameters: strict.strict ? strict.json_schema : null,
    strictReasons: strict.strict ? [] : strict.reasons,
  };
}

const weather = source('get_weather', {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'City.' },
    units: { type: 'string', enum: ['c', 'f'], default: 'c' },
  },
  required: ['city'],
});
const freeForm = source('put_record', {
  type: 'object',
  properties: { record: { type: 'object', additionalProperties: { type: 'string' }, description: 'Any fields.' } },
  required: ['record'],
});
const invalid = source('broken', { type: 'object', properties: { x: { description: 'No type.' } } });
const dotted = source('mcp.search', { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] });
const noArgs = source('ping', { type: 'object', properties: {} }, null);
const FORMATS: DefinitionFormat[] = ['openai_chat', 'openai_responses', 'anthropic', 'gemini', 'json_schema'];

describe('toDefinitions', () => {
  it.each(FORMATS)('%s: every definition is what the provider accepts, and the contract parses the set', (format) => {
    for (const strict of format === 'gemini' ? [false] : [false, true]) {
      const sut = toDefinitions(format, strict, [weather, freeForm, invalid, dotted, noArgs]);
      expect(sut.definitions.map((d) => [format, valid[format](d)])).toEqual(sut.definitions.map(() => [format, []]));
      const parsed = AgentToolDefinitions.parse({ format, strict, ...sut, etag: 'x' });
      if (parsed.format === 'openai_chat') parsed.definitions.forEach(asOpenAIChat);
      if (parsed.format === 'openai_responses') parsed.definitions.forEach(asOpenAIResponses);
      if (parsed.format === 'anthropic') parsed.definitions.forEach(asAnthropic);
      if (parsed.format === 'gemini') parsed.definitions.forEach((d) => asGemini(GeminiDeclaration.parse(d)));
      // INVALID is never sent, whatever the format.
      expect(sut.excluded.find((e) => e.name === 'broken')).toMatchObject({
        health: 'INVALID',
        reasons: expect.arrayContaining([expect.stringContaining("Missing 'type'")]),
      });
    }
  });

  it('has each provider shape exactly', () => {
    const params = weather.parameters;
    expect(toDefinitions('openai_chat', false, [weather]).definitions).toEqual([
      {
        type: 'function',
        function: { name: 'get_weather', description: 'The get_weather tool.', parameters: params, strict: false },
      },
    ]);
    expect(toDefinitions('openai_responses', false, [weather]).definitions).toEqual([
      {
        type: 'function',
        name: 'get_weather',
        description: 'The get_weather tool.',
        parameters: params,
        strict: false,
      },
    ]);
    expect(toDefinitions('anthropic', false, [weather]).definitions).toEqual([
      { name: 'get_weather', description: 'The get_weather tool.', input_schema: params },
    ]);
    expect(toDefinitions('json_schema', false, [weather]).definitions).toEqual([
      { name: 'get_weather', description: 'The get_weather tool.', parameters: params },
    ]);
    expect(toDefinitions('gemini', false, [weather]).definitions).toEqual([
      {
        name: 'get_weather',
        description: 'The get_weather tool.',
        parameters: {
          type: 'OBJECT',
          properties: {
            city: { type: 'STRING', description: 'City.' },
            units: { type: 'STRING', enum: ['c', 'f'], default: 'c' },
          },
          required: ['city'],
        },
      },
    ]);
    // No description: none sent. No parameters: Gemini gets none (it refuses an OBJECT without properties).
    expect(toDefinitions('gemini', false, [noArgs]).definitions).toEqual([{ name: 'ping' }]);
  });

  it('strict: a strict-able tool gets strict true and the engine’s strict schema; another is sent non-strict with the reason', () => {
    const sut = toDefinitions('openai_chat', true, [weather, freeForm]);
    expect(sut.definitions[0]).toEqual({
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'The get_weather tool.',
        parameters: weather.strictParameters,
        strict: true,
      },
    });
    expect(weather.strictParameters).toMatchObject({
      additionalProperties: false,
      required: ['city', 'units'],
      properties: { units: { type: ['string', 'null'] } },
    });
    expect(sut.definitions[1]).toMatchObject({
      function: { name: 'put_record', parameters: freeForm.parameters, strict: false },
    });
    expect(sut.warnings).toEqual([
      {
        tool_id: freeForm.toolId,
        name: 'put_record',
        reasons: [expect.stringMatching(/^sent non-strict: .*additionalProperties/)],
      },
    ]);
    expect(toDefinitions('anthropic', true, [weather]).definitions).toEqual([
      {
        name: 'get_weather',
        description: 'The get_weather tool.',
        input_schema: weather.strictParameters,
        strict: true,
      },
    ]);
    expect(toDefinitions('openai_responses', true, [weather]).definitions[0]).toMatchObject({
      strict: true,
      parameters: weather.strictParameters,
    });
  });

  it("excludes a name a provider refuses, with the provider's rule; Gemini takes it", () => {
    for (const f of ['openai_chat', 'openai_responses', 'anthropic'] as const) {
      expect(toDefinitions(f, false, [dotted]).excluded).toEqual([
        {
          tool_id: dotted.toolId,
          name: 'mcp.search',
          health: 'STRICT_COMPLIANT',
          reasons: [expect.stringContaining('^[a-zA-Z0-9_-]{1,64}$')],
        },
      ]);
    }
    expect(toDefinitions('gemini', false, [dotted]).definitions).toHaveLength(1);
    expect(
      toDefinitions('gemini', false, [source('9lives', { type: 'object', properties: {} })]).excluded[0]!.reasons[0],
    ).toMatch(/Gemini's pattern/);
  });

  it('sends at most 128 tools to OpenAI and says which were left out', () => {
    const many = Array.from({ length: 130 }, (_, i) => ({
      ...weather,
      toolId: `tool-00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      name: `tool_${i}`,
    }));
    const sut = toDefinitions('openai_chat', false, many);
    expect(sut.definitions).toHaveLength(128);
    expect(sut.excluded.map((e) => [e.name, e.reasons])).toEqual([
      ['tool_128', ["over OpenAI's limit of 128 tools in one request"]],
      ['tool_129', ["over OpenAI's limit of 128 tools in one request"]],
    ]);
    expect(toDefinitions('anthropic', false, many).definitions).toHaveLength(130);
  });
});

describe('toGeminiParameters', () => {
  it("converts what Gemini's subset can say, drops the rest with a warning each", () => {
    const sut = toGeminiParameters({
      type: 'object',
      properties: {
        maybe: { type: ['integer', 'null'], exclusiveMinimum: 0, maxItems: 3 },
        either: { oneOf: [{ type: 'string' }, { type: 'number' }] },
        opt: {
          anyOf: [{ type: 'array', items: { type: 'string' }, minItems: 1, uniqueItems: true }, { type: 'null' }],
        },
        fixed: { const: 'v1' },
        level: { type: 'integer', enum: [1, 2, null] },
        map: { type: 'object', additionalProperties: { type: 'string' } },
      },
      required: ['maybe', 'gone'],
      additionalProperties: false,
      $schema: 'https://json-schema.org/draft/2020-12/schema',
    });
    expect(sut.fatal).toEqual([]);
    expect(sut.schema).toEqual({
      type: 'OBJECT',
      properties: {
        maybe: { type: 'INTEGER', minimum: 0, maxItems: '3', nullable: true },
        either: { anyOf: [{ type: 'STRING' }, { type: 'NUMBER' }] },
        opt: { type: 'ARRAY', items: { type: 'STRING' }, minItems: '1', nullable: true },
        fixed: { enum: ['v1'] },
        level: { type: 'INTEGER', format: 'enum', enum: ['1', '2'], nullable: true },
        map: { type: 'OBJECT' },
      },
      required: ['maybe'],
    });
    expect(sut.warnings).toEqual([
      'parameters.properties.maybe: exclusiveMinimum sent as minimum (Gemini has no exclusive bounds)',
      'parameters.properties.either: oneOf sent as anyOf (Gemini has no oneOf)',
      "parameters.properties.opt.anyOf[0]: uniqueItems dropped (not in Gemini's schema)",
      'parameters.properties.fixed: const sent as a one-value enum (Gemini has no const)',
      "parameters.properties.level: enum values sent as strings (Gemini's enum holds strings)",
      "parameters.properties.map: additionalProperties dropped (not in Gemini's schema)",
    ]);
    expect(valid.gemini({ name: 'f', parameters: sut.schema })).toEqual([]);
    expect(GeminiDeclaration.safeParse({ name: 'f', parameters: sut.schema }).success).toBe(true);
  });

  it('excludes what it cannot say: a $ref, a parameter name Gemini refuses, an array without items', () => {
    expect(
      toGeminiParameters({
        type: 'object',
        properties: { n: { $ref: '#/$defs/Node' } },
        $defs: { Node: { type: 'object' } },
      }).fatal,
    ).toEqual(['parameters.properties.n: $ref "#/$defs/Node": Gemini\'s schema has no references']);
    expect(toGeminiParameters({ type: 'object', properties: { 'my-arg': { type: 'string' } } }).fatal[0]).toMatch(
      /"my-arg" do not match Gemini's/,
    );
    expect(toGeminiParameters({ type: 'object', properties: { xs: { type: 'array' } } }).fatal).toEqual([
      'parameters.properties.xs: an array without items (Gemini needs them)',
    ]);
  });
});
