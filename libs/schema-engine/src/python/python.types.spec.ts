import { createSchemaEngine } from '../schema-engine';
import { JsonSchema, SchemaEngine } from '../schema-engine.types';

/** Stretch types: one parameter `x` annotated as given, documented, without default. */
describe('python front-end: type annotations', () => {
  let sut: SchemaEngine;

  beforeAll(async () => {
    sut = await createSchemaEngine();
  });

  const tool = (annotation: string, prelude = '', suffix = ''): string =>
    `${prelude}\ndef f(x: ${annotation}${suffix}):\n    """F.\n\n    Args:\n        x: The x.\n    """\n`;
  const schemaOf = (annotation: string, prelude = '', suffix = ''): JsonSchema => {
    const { description, ...rest } = sut.generate({ source_code: tool(annotation, prelude, suffix) }).json_schema
      .parameters.properties.x;
    expect(description).toBe('The x.');
    return rest;
  };

  it.each<[string, JsonSchema]>([
    ['None', { type: 'null' }],
    ['typing.List[int]', { type: 'array', items: { type: 'integer' } }],
    ['Sequence[str]', { type: 'array', items: { type: 'string' } }],
    ['set[int]', { type: 'array', items: { type: 'integer' }, uniqueItems: true }],
    ['FrozenSet[str]', { type: 'array', items: { type: 'string' }, uniqueItems: true }],
    ['tuple[int, ...]', { type: 'array', items: { type: 'integer' } }],
    [
      'Tuple[int, int]',
      {
        type: 'array',
        prefixItems: [{ type: 'integer' }, { type: 'integer' }],
        items: { type: 'integer' },
        minItems: 2,
        maxItems: 2,
      },
    ],
    [
      'Tuple[int, str]',
      {
        type: 'array',
        prefixItems: [{ type: 'integer' }, { type: 'string' }],
        items: { type: ['integer', 'string'] },
        minItems: 2,
        maxItems: 2,
      },
    ],
    ['Dict[str, int]', { type: 'object', additionalProperties: { type: 'integer' } }],
    [
      'Mapping[str, list[float]]',
      { type: 'object', additionalProperties: { type: 'array', items: { type: 'number' } } },
    ],
    ['dict[str, Any]', { type: 'object' }],
    ['Union[int, str]', { type: ['integer', 'string'] }],
    ['int | str', { type: ['integer', 'string'] }],
    ['int | None', { type: ['integer', 'null'] }],
    ['Optional[list[int]]', { anyOf: [{ type: 'array', items: { type: 'integer' } }, { type: 'null' }] }],
    [
      'Union[int, list[str], None]',
      { anyOf: [{ type: 'integer' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }] },
    ],
    ['list[Optional[int]]', { type: 'array', items: { type: ['integer', 'null'] } }],
    ['Literal["a", "b"]', { type: 'string', enum: ['a', 'b'] }],
    ['Literal[1, 2, -3]', { type: 'integer', enum: [1, 2, -3] }],
    ['Literal[1.5, 2]', { type: 'number', enum: [1.5, 2] }],
    ['Literal[True, "x"]', { type: ['boolean', 'string'], enum: [true, 'x'] }],
    ['Literal["a", None]', { type: ['string', 'null'], enum: ['a', null] }],
    ['Any', {}],
    ['Annotated[int, "ignored: the docstring wins"]', { type: 'integer' }],
    ['Annotated[int, Field(ge=1, le=10)]', { type: 'integer', minimum: 1, maximum: 10 }],
    ['Annotated[list[str], Field(min_length=1)]', { type: 'array', items: { type: 'string' }, minItems: 1 }],
    ['"list[int]"', { type: 'array', items: { type: 'integer' } }],
    ['Optional["int"]', { type: ['integer', 'null'] }],
    ['typing_extensions.Literal["q"]', { type: 'string', enum: ['q'] }],
  ])('maps %s', (annotation, expected) => {
    expect(schemaOf(annotation)).toEqual(expected);
  });

  it('drops null from an optional parameter whose default is None, as Letta does', () => {
    expect(schemaOf('int | None', '', ' = None')).toEqual({ type: 'integer', default: null });
    expect(schemaOf('Union[int, str, None]', '', ' = None')).toEqual({ type: ['integer', 'string'], default: null });
    expect(schemaOf('Optional[int]', '', ' = 3')).toEqual({ type: ['integer', 'null'], default: 3 });
  });

  it('maps an Enum defined in the source to the enum of its values', () => {
    const prelude = `
from enum import Enum, IntEnum, auto
class Color(str, Enum):
    """A color."""
    RED = "red"
    GREEN = "green"
    _ignore_ = []
class Level(IntEnum):
    LOW = auto()
    HIGH = auto()
`;
    expect(schemaOf('Color', prelude)).toEqual({ type: 'string', enum: ['red', 'green'] });
    expect(schemaOf('Level', prelude)).toEqual({ type: 'integer', enum: [1, 2] });
    expect(schemaOf('Literal[Color.GREEN]', prelude)).toEqual({ type: 'string', enum: ['green'] });
  });

  it('resolves type aliases defined in the source', () => {
    const prelude =
      'from typing import TypeAlias\nVector = list[float]\nIds: TypeAlias = "set[int]"\ntype Name = str\n';
    expect(schemaOf('Vector', prelude)).toEqual({ type: 'array', items: { type: 'number' } });
    expect(schemaOf('Ids', prelude)).toEqual({ type: 'array', items: { type: 'integer' }, uniqueItems: true });
    expect(schemaOf('Optional[Name]', prelude)).toEqual({ type: ['string', 'null'] });
  });

  it('inlines pydantic models: Field descriptions, defaults, nested and Optional models, aliases, inheritance', () => {
    const prelude = `
from __future__ import annotations
from typing import Annotated, Optional
import pydantic
from pydantic import BaseModel, Field

class Address(BaseModel):
    """A postal address.

    Attributes:
        city: The city.
    """
    street: str = Field(description="The street.")
    city: str

class Base(pydantic.BaseModel):
    id: int = Field(..., description="The id.", ge=0)

class Person(Base):
    model_config = {"frozen": True}
    name: Annotated[str, Field(description="The name.")]
    home: Optional[Address] = Field(None, description="Where they live.")
    work: "Address | None" = Field(description="Where they work.")
    tags: list[str] = Field(default_factory=list, description="Tags.")
    nick: str = Field("n/a", alias="nickname", description="A nickname.")
`;
    expect(schemaOf('list[Person]', prelude)).toEqual({
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'integer', minimum: 0, description: 'The id.' },
          name: { type: 'string', description: 'The name.' },
          home: {
            type: 'object',
            properties: {
              street: { type: 'string', description: 'The street.' },
              city: { type: 'string', description: 'The city.' },
            },
            required: ['street', 'city'],
            description: 'Where they live.',
            default: null,
          },
          work: {
            anyOf: [
              {
                type: 'object',
                properties: {
                  street: { type: 'string', description: 'The street.' },
                  city: { type: 'string', description: 'The city.' },
                },
                required: ['street', 'city'],
                description: 'A postal address.\n\nAttributes:\n    city: The city.',
              },
              { type: 'null' },
            ],
            description: 'Where they work.',
          },
          tags: { type: 'array', items: { type: 'string' }, description: 'Tags.' },
          nickname: { type: 'string', description: 'A nickname.', default: 'n/a' },
        },
        required: ['id', 'name', 'work'],
      },
    });
  });

  it('takes a parameter description from Annotated when the docstring has none', () => {
    const source =
      'from typing import Annotated\ndef f(x: Annotated[int, "How many."], y: Annotated[str, Field(description="Which.")]):\n    """F."""\n';
    expect(sut.generate({ source_code: source }).json_schema.parameters.properties).toEqual({
      x: { type: 'integer', description: 'How many.' },
      y: { type: 'string', description: 'Which.' },
    });
  });
});
