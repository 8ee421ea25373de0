import { createSchemaEngine } from '../schema-engine';
import { SchemaGenerationError } from '../schema-generation.error';
import { SchemaEngine } from '../schema-engine.types';

/** Hostile input: every case must end quickly with a schema or a SchemaGenerationError. */
describe('python front-end: hostile input', () => {
  let sut: SchemaEngine;

  beforeAll(async () => {
    sut = await createSchemaEngine({ timeLimitMs: 600_000 }); // time is not what these tests measure
  });

  const failure = (source_code: string): SchemaGenerationError => {
    try {
      sut.generate({ source_code });
    } catch (e) {
      if (e instanceof SchemaGenerationError) return e;
      throw e;
    }
    throw new Error('expected a SchemaGenerationError');
  };

  const reasonOf = (source_code: string): string => {
    try {
      sut.generate({ source_code });
      return 'OK';
    } catch (e) {
      if (e instanceof SchemaGenerationError) return e.reason;
      throw e;
    }
  };

  it('rejects a 1 MB source as too large', () => {
    const source = `def f():\n    """F."""\n${'# padding\n'.repeat(105_000)}`;
    expect(reasonOf(source)).toBe('SOURCE_TOO_LARGE');
  });

  it('survives deeply nested brackets in the body', () => {
    const source = `def f():\n    """F."""\n    return ${'['.repeat(50_000)}${']'.repeat(50_000)}\n`;
    expect(['OK', 'SYNTAX_ERROR']).toContain(reasonOf(source));
  });

  it('survives unbalanced brackets', () => {
    expect(reasonOf(`def f():\n    """F."""\n    return ${'(['.repeat(20_000)}\n`)).toBe('SYNTAX_ERROR');
  });

  it('refuses a deeply nested annotation instead of overflowing the stack', () => {
    const annotation = `${'list['.repeat(5_000)}int${']'.repeat(5_000)}`;
    expect(reasonOf(`def f(x: ${annotation}):\n    """F.\n\n    Args:\n        x: X.\n    """\n`)).toBe(
      'UNSUPPORTED_ANNOTATION',
    );
  });

  it('accepts a nested annotation within the depth limit', () => {
    const annotation = `${'list['.repeat(20)}int${']'.repeat(20)}`;
    expect(reasonOf(`def f(x: ${annotation}):\n    """F.\n\n    Args:\n        x: X.\n    """\n`)).toBe('OK');
  });

  it('handles 1000 parameters', () => {
    const names = Array.from({ length: 1000 }, (_, i) => `p${i}`);
    const source = `def wide(${names.map((n) => `${n}: int = 0`).join(', ')}):\n    """Wide.\n\n    Args:\n${names
      .map((n) => `        ${n}: Parameter ${n}.`)
      .join('\n')}\n    """\n`;
    const out = sut.generate({ source_code: source });
    expect(Object.keys(out.json_schema.parameters.properties)).toHaveLength(1000);
    expect(out.json_schema.parameters.properties.p999).toEqual({
      type: 'integer',
      description: 'Parameter p999.',
      default: 0,
    });
  });

  it('handles odd unicode: identifiers, descriptions, surrogate pairs and bidi controls', () => {
    const source =
      'def größe(länge: int, 名前: str = "\u202e"):\n    """Größe 📏 berechnen \u202e\u200b.\n\n    Args:\n        länge: Die Länge in 📐.\n        名前: 名前です。\n    """\n';
    const out = sut.generate({ source_code: source });
    expect(out.json_schema.name).toBe('größe');
    expect(out.json_schema.description).toBe('Größe 📏 berechnen \u202e\u200b.');
    expect(out.json_schema.parameters.properties['名前']).toEqual({
      type: 'string',
      description: '名前です。',
      default: '\u202e',
    });
    // Non-ASCII names are valid Python but not valid OpenAI function names.
    expect(out.health).toBe('INVALID');
    expect(out.reasons[0]).toMatch(/^function\.name: must match/);
  });

  it('keeps a parameter named __proto__ as an ordinary property', () => {
    const out = sut.generate({
      source_code: 'def f(__proto__: int):\n    """F.\n\n    Args:\n        __proto__: P.\n    """\n',
    });
    expect(Object.keys(out.json_schema.parameters.properties)).toEqual(['__proto__']);
    expect(JSON.parse(JSON.stringify(out.json_schema)).parameters.properties.__proto__).toEqual({
      type: 'integer',
      description: 'P.',
    });
  });

  it('handles many top-level functions and a docstring up to the docstring limit', () => {
    const defs = Array.from({ length: 2000 }, (_, i) => `def f${i}():\n    """F${i}."""\n`).join('');
    expect(sut.generate({ source_code: defs }).json_schema.name).toBe('f1999');
    const doc = `def f():\n    """${'word '.repeat(13_000)}"""\n`; // 65 000 bytes
    expect(sut.generate({ source_code: doc }).json_schema.description.length).toBe(65_000);
  });

  // Issue 12. Each source below took seconds to minutes before (quadratic or exponential work);
  // sizes are bounded by the contract's limits, and no duration is asserted: the old code fails
  // them on jest's timeout, the new one answers as asserted.
  describe('issue 12: work linear in the source', () => {
    const args = (entry: string): string =>
      `def f(x: int):\n    """F.\n\n    Args:\n        ${entry}\n        x: X.\n    """\n`;

    it('answers the fuzzed Args entries: over the docstring limit, and parsed within it', () => {
      const spaces = failure(args(`x${' '.repeat(100_000)}: y`));
      expect(spaces).toMatchObject({ reason: 'SOURCE_TOO_LARGE', functionName: 'f', line: 1 });
      expect(spaces.message).toMatch(
        /^The docstring of function 'f' \(line 1\) is 100\d+ bytes; the limit is 65536 bytes$/,
      );
      expect(failure(args(`${'a ('.repeat(40_000)}: y`)).reason).toBe('SOURCE_TOO_LARGE');
      expect(
        sut.generate({ source_code: args(`y${' '.repeat(65_000)}: Y.`) }).json_schema.parameters.properties.x,
      ).toEqual({ type: 'integer', description: 'X.' });
      expect(
        sut.generate({ source_code: args(`${'a ('.repeat(21_000)}: y`) }).json_schema.parameters.properties.x,
      ).toEqual({ type: 'integer', description: 'X.' });
    });

    it('rejects an over-long model docstring with the class and its line', () => {
      const source = `from pydantic import BaseModel, Field\nclass M(BaseModel):\n    """${'m'.repeat(70_000)}"""\n    a: int = Field(description="A.")\ndef f(x: M):\n    """F.\n\n    Args:\n        x: X.\n    """\n`;
      expect(failure(source)).toMatchObject({
        reason: 'SOURCE_TOO_LARGE',
        line: 2,
        message: expect.stringContaining("docstring of class 'M' (line 2) is 70000 bytes"),
      });
    });

    it('reads each Enum once however often its members are used', () => {
      const members = Array.from({ length: 8000 }, (_, i) => `    M${i} = ${i}`).join('\n');
      const uses = Array.from({ length: 8000 }, (_, i) => `E.M${7999 - i}`).join(', ');
      const source = `from enum import Enum\nfrom typing import Literal\nclass E(Enum):\n${members}\ndef f(x: Literal[${uses}] = E.M5):\n    """F.\n\n    Args:\n        x: X.\n    """\n`;
      const x = sut.generate({ source_code: source }).json_schema.parameters.properties.x as {
        enum: number[];
        default: number;
      };
      expect(x.enum).toHaveLength(8000);
      expect([x.enum[0], x.enum[7999], x.default]).toEqual([7999, 0, 5]);
    });

    it('resolves each alias once: exponentially many expansions are not made', () => {
      const aliases = Array.from({ length: 15 }, (_, i) => `T${i + 1} = Union[T${i}, T${i}, T${i}]`).join('\n');
      const source = `from typing import Union\nT0 = int\n${aliases}\ndef f(x: T15):\n    """F.\n\n    Args:\n        x: X.\n    """\n`;
      expect(sut.generate({ source_code: source }).json_schema.parameters.properties.x).toEqual({
        type: 'integer',
        description: 'X.',
      });
    });

    it('refuses a schema that models used in many places would make exponentially large', () => {
      const models = Array.from(
        { length: 30 },
        (_, i) =>
          `class M${i + 1}(BaseModel):\n    a: M${i} = Field(description="a")\n    b: M${i} = Field(description="b")\n`,
      ).join('');
      const source = `from pydantic import BaseModel, Field\nclass M0(BaseModel):\n    a: int = Field(description="a")\n${models}def f(x: M30):\n    """F.\n\n    Args:\n        x: X.\n    """\n`;
      expect(failure(source)).toMatchObject({
        reason: 'SCHEMA_TOO_LARGE',
        message: expect.stringMatching(/^The generated schema would be larger than 524288 bytes/),
      });
      expect(
        failure(
          `from typing import Tuple\ndef f(x: ${'Tuple['.repeat(30)}int${']'.repeat(30)}):\n    """F.\n\n    Args:\n        x: X.\n    """\n`,
        ).reason,
      ).toBe('SCHEMA_TOO_LARGE');
    });

    it('refuses types nested deeper than the schema allows, also through models resolved earlier', () => {
      const models = Array.from(
        { length: 80 },
        (_, i) => `class M${i + 1}(BaseModel):\n    a: M${i} = Field(description="a")\n`,
      ).join('');
      const params = [20, 40, 60, 80].map((n) => `x${n}: M${n}`).join(', ');
      const source = `from pydantic import BaseModel, Field\nclass M0(BaseModel):\n    a: int = Field(description="a")\n${models}def f(${params}):\n    """F.\n\n    Args:\n${[20, 40, 60, 80].map((n) => `        x${n}: X.`).join('\n')}\n    """\n`;
      expect(failure(source)).toMatchObject({
        reason: 'SCHEMA_TOO_LARGE',
        message: 'The generated schema would nest types more than 64 levels deep',
      });
    });

    it('decides which classes are models once, and bounds what a long chain of subclasses copies', () => {
      const n = 2000;
      const chain = Array.from(
        { length: n },
        (_, i) => `class C${i + 1}(C${i}):\n    a${i + 1}: int = Field(description="a")\n`,
      ).join('');
      const src = (params: number[]): string =>
        `from pydantic import BaseModel, Field\nclass C0(BaseModel):\n    a0: int = Field(description="a")\n${chain}def f(${params.map((i) => `x${i}: C${i}`).join(', ')}):\n    """F.\n\n    Args:\n${params.map((i) => `        x${i}: X.`).join('\n')}\n    """\n`;
      const x = sut.generate({ source_code: src([2]) }).json_schema.parameters.properties.x2 as { required: string[] };
      expect(x.required).toEqual(['a0', 'a1', 'a2']);
      // Each x_i copies the i fields it inherits: about n²/2 fields in all, far over the schema limit.
      const all = Array.from({ length: n }, (_, i) => i + 1);
      expect(failure(src(all))).toMatchObject({
        reason: 'SCHEMA_TOO_LARGE',
        message: expect.stringMatching(/^The generated schema would be larger than 524288 bytes/),
      });
    });
  });
});
