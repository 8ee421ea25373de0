import { createSchemaEngine } from '../schema-engine';
import { SchemaGenerationError } from '../schema-generation.error';
import { GenerateInput, SchemaEngine } from '../schema-engine.types';

function failure(fn: () => unknown): SchemaGenerationError {
  try {
    fn();
  } catch (e) {
    if (e instanceof SchemaGenerationError) return e;
    throw e;
  }
  throw new Error('expected a SchemaGenerationError');
}

describe('python front-end: errors', () => {
  let sut: SchemaEngine;

  beforeAll(async () => {
    sut = await createSchemaEngine();
  });

  const fail = (input: GenerateInput): SchemaGenerationError => failure(() => sut.generate(input));

  it('reports a syntax error with its line and column', () => {
    const e = fail({ source_code: 'def ok():\n    """Ok."""\n\ndef broken(a: int\n    return a\n' });

    expect(e.reason).toBe('SYNTAX_ERROR');
    expect(e.line).toBe(4);
    expect(e.column).toBeGreaterThanOrEqual(1);
    expect(e.message).toMatch(/^Python syntax error at line 4, column \d+: /);
  });

  it('reports a NUL byte as a syntax error', () => {
    expect(fail({ source_code: 'def f():\n    """F."""\n\0' })).toMatchObject({ reason: 'SYNTAX_ERROR', line: 3 });
  });

  it('reports a source without a top-level function', () => {
    const e = fail({ source_code: 'class A:\n    def m(self):\n        """M."""\n\nx = 1\n' });
    expect(e.reason).toBe('NO_FUNCTION');
    expect(e.message).toBe('No top-level function (def or async def) found in the source');
    expect(fail({ source_code: '' }).reason).toBe('NO_FUNCTION');
  });

  it('reports a named function that does not exist, listing the ones that do', () => {
    const e = fail({ source_code: 'def a():\n    """A."""\ndef b():\n    """B."""\n', name: 'c' });
    expect(e).toMatchObject({ reason: 'FUNCTION_NOT_FOUND', functionName: 'c' });
    expect(e.message).toBe("No top-level function named 'c' in the source (found: a, b)");
  });

  it('reports a missing docstring with the function and its line', () => {
    const e = fail({
      source_code: '\n\n@decorator\nasync def tool(a: int):\n    # a comment, not a docstring\n    return f"{a}"\n',
    });
    expect(e).toMatchObject({ reason: 'MISSING_DOCSTRING', functionName: 'tool', line: 4 });
    expect(e.message).toContain("Function 'tool' (line 4) has no docstring");
  });

  it('treats an f-string as no docstring, as Python does', () => {
    expect(fail({ source_code: 'def f():\n    f"""Doc {1}."""\n' }).reason).toBe('MISSING_DOCSTRING');
  });

  it('reports a missing annotation naming the function, the parameter and its line', () => {
    const e = fail({
      source_code:
        'def add(a: int,\n        b,\n        c: int):\n    """Add.\n\n    Args:\n        a: A.\n        b: B.\n        c: C.\n    """\n',
    });
    expect(e).toMatchObject({ reason: 'MISSING_ANNOTATION', functionName: 'add', parameter: 'b', line: 2 });
    expect(e.message).toBe("Parameter 'b' of function 'add' (line 2) has no type annotation");
  });

  it('reports a parameter missing from the Args section', () => {
    const e = fail({ source_code: 'def add(a: int, b: int = 2):\n    """Add.\n\n    Args:\n        a: A.\n    """\n' });
    expect(e).toMatchObject({ reason: 'UNDOCUMENTED_PARAMETER', functionName: 'add', parameter: 'b', line: 1 });
    expect(e.message).toMatch(/^Parameter 'b' of function 'add' \(line 1\) is not documented/);
  });

  it('reports an empty parameter description as undocumented', () => {
    expect(fail({ source_code: 'def f(a: int):\n    """F.\n\n    Args:\n        a:\n    """\n' }).reason).toBe(
      'UNDOCUMENTED_PARAMETER',
    );
  });

  it.each([
    ['np.ndarray', "'np.ndarray' is not a known type"],
    ['Callable[[int], str]', "'Callable[...]' is not a supported generic type"],
    ['Dict[int, str]', 'JSON object keys are strings'],
    ['List[int, str]', "'List' takes 1 type argument"],
    ['Tuple[()]', 'tuples must list their element types'],
    ['Optional', "'Optional' needs type arguments"],
    ['Literal[b"x"]', 'Literal values must be'],
    ['"not a type ("', 'is not a valid type expression'],
    ['"a\\nb"', 'must hold one type expression'],
    ['NotAModel', "class 'NotAModel' is neither a pydantic BaseModel nor an Enum"],
  ])('reports the unsupported annotation %s', (annotation, why) => {
    const source = `class NotAModel:\n    pass\n\ndef f(\n    x: ${annotation},\n):\n    """F.\n\n    Args:\n        x: X.\n    """\n`;
    const e = fail({ source_code: source });
    expect(e).toMatchObject({ reason: 'UNSUPPORTED_ANNOTATION', functionName: 'f', parameter: 'x' });
    expect(e.message).toContain("Parameter 'x' of function 'f' (line 5)");
    expect(e.message).toContain(why);
  });

  it('reports a recursive model instead of recursing forever', () => {
    const source =
      'class Node(BaseModel):\n    children: list["Node"] = Field(description="Kids.")\n\ndef f(x: Node):\n    """F.\n\n    Args:\n        x: X.\n    """\n';
    const e = fail({ source_code: source });
    expect(e.reason).toBe('UNSUPPORTED_ANNOTATION');
    expect(e.message).toContain('refers to itself');
  });

  it('reports an undocumented model field with the model and the field', () => {
    const source =
      'class M(BaseModel):\n    a: int = Field(description="A.")\n    b: str\n\ndef f(x: M):\n    """F.\n\n    Args:\n        x: X.\n    """\n';
    const e = fail({ source_code: source });
    expect(e).toMatchObject({ reason: 'UNDOCUMENTED_PARAMETER', parameter: 'x', line: 3 });
    expect(e.message).toContain("field 'b' of model 'M' (line 3) has no description");
  });

  it('rejects a source over the size limit before parsing it', async () => {
    const small = await createSchemaEngine({ maxSourceBytes: 1024 });
    const e = failure(() => small.generate({ source_code: `# ${'é'.repeat(600)}\ndef f():\n    """F."""\n` }));
    expect(e.reason).toBe('SOURCE_TOO_LARGE');
    expect(e.message).toMatch(/^Source is \d+ bytes; the limit is 1024 bytes$/);
  });

  it('rejects a schema over the schema size limit, measured exactly, on both paths', async () => {
    const source = 'def f(a: int, b: str):\n    """F.\n\n    Args:\n        a: A.\n        b: B é.\n    """\n';
    const bytes = Buffer.byteLength(JSON.stringify(sut.generate({ source_code: source }).json_schema), 'utf8');
    const exact = await createSchemaEngine({ maxSchemaBytes: bytes });
    expect(exact.generate({ source_code: source }).json_schema.name).toBe('f');
    const under = await createSchemaEngine({ maxSchemaBytes: bytes - 1 });
    expect(failure(() => under.generate({ source_code: source }))).toMatchObject({
      reason: 'SCHEMA_TOO_LARGE',
      message: `The generated schema is larger than ${bytes - 1} bytes (the limit)`,
    });
    const args_json_schema = { type: 'object', properties: { a: { type: 'string', description: 'x'.repeat(2000) } } };
    expect(failure(() => under.generate({ source_code: source, args_json_schema })).reason).toBe('SCHEMA_TOO_LARGE');
  });

  it('rejects unknown source types', () => {
    expect(fail({ source_code: 'fn f() {}', source_type: 'rust' as never }).reason).toBe('UNSUPPORTED_SOURCE_TYPE');
  });

  it('stops at the time limit', async () => {
    const hurried = await createSchemaEngine({ timeLimitMs: 1 });
    const source = `${'x = [1, 2, 3]\n'.repeat(15_000)}def f():\n    """F."""\n`;
    const e = failure(() => hurried.generate({ source_code: source }));
    expect(e.reason).toBe('TIME_LIMIT_EXCEEDED');
    expect(e.message).toBe('Schema generation exceeded its time limit of 1 ms');
    // The cancelled parse is not resumed: the next source parses on its own (given all the time it needs).
    expect(
      hurried.generate({ source_code: 'def g():\n    """G."""\n' }, { timeLimitMs: 600_000 }).json_schema.name,
    ).toBe('g');
  });

  it('never puts a stack trace in a message', () => {
    const sources = [
      'def (',
      'x = 1',
      'def f(a):\n    """F."""\n',
      'def f(a: Foo):\n    """F.\n\n    Args:\n        a: A.\n    """\n',
    ];
    for (const source_code of sources) expect(fail({ source_code }).message).not.toMatch(/\n\s+at /);
  });
});
