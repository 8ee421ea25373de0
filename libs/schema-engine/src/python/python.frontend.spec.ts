import { createSchemaEngine } from '../schema-engine';
import { SchemaEngine } from '../schema-engine.types';

/** The required corpus: Python tools and the exact schema Letta's generate_schema gives them. */
describe('python front-end: tool corpus', () => {
  let sut: SchemaEngine;

  beforeAll(async () => {
    sut = await createSchemaEngine();
  });

  it("describes Letta's simple_d20 example (no arguments, summary + long description)", () => {
    const source = [
      'def roll_d20():',
      '    """',
      '    Simulate the roll of a 20-sided die (d20).',
      '',
      '    This function generates a random integer between 1 and 20, inclusive,',
      '    which represents the outcome of a single roll of a d20.',
      '',
      '    Returns:',
      '        str: The result of the die roll.',
      '    """',
      '    import random',
      '',
      '    dice_role_outcome = random.randint(1, 20)',
      '    output_string = f"You rolled a {dice_role_outcome}"',
      '    return output_string',
      '',
    ].join('\n');

    const out = sut.generate({ source_code: source });

    expect(out.json_schema).toEqual({
      name: 'roll_d20',
      description:
        'Simulate the roll of a 20-sided die (d20).\n\nThis function generates a random integer between 1 and 20, inclusive,\n' +
        'which represents the outcome of a single roll of a d20.',
      parameters: { type: 'object', properties: {}, required: [] },
    });
    expect(out.health).toBe('NON_STRICT_ONLY');
    expect(out.reasons).toEqual(["root: 'additionalProperties' not explicitly set"]);
  });

  it('puts parameters with defaults outside required, with the default when it is a literal', () => {
    const source = `
def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    Args:
        a (int): The first number.
        b (int): The second number.

    Returns:
        int: The sum.
    """
    return a + b
`;
    expect(sut.generate({ source_code: source }).json_schema).toEqual({
      name: 'add',
      description: 'Add two numbers.',
      parameters: {
        type: 'object',
        properties: {
          a: { type: 'integer', description: 'The first number.' },
          b: { type: 'integer', description: 'The second number.', default: 2 },
        },
        required: ['a'],
      },
    });
  });

  it('gives literal defaults a `default` and leaves the others without one', () => {
    const source = `
def f(a: dict = {1: "x"}, b: dict = {**{}}, c: str = f"{1}", d: str = b"x", e: int = -"1", g: list = [(1), ((2,)), {"__proto__": 3}], h: int = 0x1F, i: float = -1.0):
    """F.

    Args:
        a: Non-str keys.
        b: A splat.
        c: An f-string.
        d: Bytes.
        e: Not a number.
        g: Nested.
        h: Hex.
        i: Negative float.
    """
`;
    const props = sut.generate({ source_code: source }).json_schema.parameters.properties;
    for (const name of ['a', 'b', 'c', 'd', 'e']) expect(`${name}: ${'default' in props[name]}`).toBe(`${name}: false`);
    expect(JSON.stringify(props.g.default)).toBe('[1,[2],{"__proto__":3}]');
    expect(props.h.default).toBe(31);
    expect(props.i.default).toBe(-1);
  });

  it("matches Letta's all_python_complex example, except Optional without default stays required", () => {
    const source = `from typing import List, Optional


def check_order_status(
    order_number: int,
    customer_name: str,
    related_tickets: List[str],
    related_ticket_reasons: dict,
    severity: float,
    metadata: Optional[dict],
):
    """
    Check the status for an order number (integer value).

    Args:
        order_number (int): The order number to check on.
        customer_name (str): The name of the customer who placed the order.
        related_tickets (List[str]): A list of ticket numbers related to the order.
        related_ticket_reasons (dict): A dictionary of reasons for the related tickets.
        severity (float): The severity of the request (between 0 and 1).
        metadata (Optional[dict]): Additional metadata about the order.

    Returns:
        str: The status of the order (e.g. cancelled, refunded, processed, processing, shipping).
    """
    return f"Order {order_number} is currently processing."
`;
    const { json_schema } = sut.generate({ source_code: source });

    expect(json_schema.description).toBe('Check the status for an order number (integer value).');
    expect(json_schema.parameters.properties).toEqual({
      order_number: { type: 'integer', description: 'The order number to check on.' },
      customer_name: { type: 'string', description: 'The name of the customer who placed the order.' },
      related_tickets: {
        type: 'array',
        items: { type: 'string' },
        description: 'A list of ticket numbers related to the order.',
      },
      related_ticket_reasons: { type: 'object', description: 'A dictionary of reasons for the related tickets.' },
      severity: { type: 'number', description: 'The severity of the request (between 0 and 1).' },
      // Letta: {type: 'object'} and not required, which lets the model omit an argument Python requires.
      metadata: { type: ['object', 'null'], description: 'Additional metadata about the order.' },
    });
    expect(json_schema.parameters.required).toEqual([
      'order_number',
      'customer_name',
      'related_tickets',
      'related_ticket_reasons',
      'severity',
      'metadata',
    ]);
  });

  it('maps list, List[X], list[X], dict, Dict and Optional[X] = None', () => {
    const source = `
from typing import Dict, List, Optional

def search(terms: list[str], ids: List[int], tags: list, filters: Dict, limit: Optional[int] = None, ratio: Optional[float] = 0.5):
    """Search things.

    Args:
        terms: Words to look for.
        ids: Record ids.
        tags: Free tags.
        filters: Extra filters.
        limit: At most this many.
        ratio: A ratio.
    """
`;
    const { parameters } = sut.generate({ source_code: source }).json_schema;

    expect(parameters.properties).toEqual({
      terms: { type: 'array', items: { type: 'string' }, description: 'Words to look for.' },
      ids: { type: 'array', items: { type: 'integer' }, description: 'Record ids.' },
      tags: { type: 'array', items: { type: 'string' }, description: 'Free tags.' },
      filters: { type: 'object', description: 'Extra filters.' },
      limit: { type: 'integer', description: 'At most this many.', default: null },
      ratio: { type: ['number', 'null'], description: 'A ratio.', default: 0.5 },
    });
    expect(parameters.required).toEqual(['terms', 'ids', 'tags', 'filters']);
  });

  it('joins multi-line argument descriptions and keeps Raises/Returns/Examples out of the description', () => {
    const source = `
def send(to: str, body: str, urgent: bool = False) -> str:
    """Send a message.

    The message is queued and delivered
    within a minute.

    Arguments:
        to (str): The recipient,
            as an e-mail address.
        body: The text of the message.
            It may be long.
              Deeper lines are re-indented as inspect.cleandoc does.
        urgent (bool, optional): Deliver first.

    Raises:
        ValueError: If the address is bad.

    Examples:
        >>> send("a@b.c", "hi")

    Returns:
        str: A receipt.
    """
`;
    const { json_schema } = sut.generate({ source_code: source });

    expect(json_schema.description).toBe('Send a message.\n\nThe message is queued and delivered\nwithin a minute.');
    expect(json_schema.parameters.properties).toEqual({
      to: { type: 'string', description: 'The recipient,\nas an e-mail address.' },
      body: {
        type: 'string',
        description:
          'The text of the message.\nIt may be long.\nDeeper lines are re-indented as inspect.cleandoc does.',
      },
      urgent: { type: 'boolean', description: 'Deliver first.', default: false },
    });
  });

  it('picks the last top-level function past a class, a helper and a decorator', () => {
    const source = `
import functools

class Cache:
    def get(self, key: str) -> str:
        """Get.

        Args:
            key: The key.
        """
        return key

def _helper(x):
    return x * 2

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper

@logged
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key to look up.
    """
    def inner(unannotated):
        return unannotated
    return inner(key)
`;
    const { json_schema } = sut.generate({ source_code: source });

    expect(json_schema.name).toBe('lookup');
    expect(json_schema.parameters.properties).toEqual({ key: { type: 'string', description: 'The key to look up.' } });
  });

  it('describes an async def and skips self, agent_state, *args and **kwargs', () => {
    const source = `
async def fetch(self, agent_state: "AgentState", url: str, *args, timeout: float = 10.0, **kwargs) -> str:
    """Fetch a URL.

    Args:
        url: The address.
        timeout: Seconds to wait.
    """
    return url
`;
    const { json_schema } = sut.generate({ source_code: source });

    expect(json_schema.name).toBe('fetch');
    expect(Object.keys(json_schema.parameters.properties)).toEqual(['url', 'timeout']);
    expect(json_schema.parameters.required).toEqual(['url']);
  });

  it('selects the function named by `name`, the last definition winning', () => {
    const source = `
def first(a: int):
    """First version.

    Args:
        a: A.
    """

def second(b: str):
    """Second.

    Args:
        b: B.
    """

def first(c: bool):
    """First, redefined.

    Args:
        c: C.
    """

def third():
    """Third."""
`;
    const { json_schema } = sut.generate({ source_code: source, name: 'first' });

    expect(json_schema.description).toBe('First, redefined.');
    expect(Object.keys(json_schema.parameters.properties)).toEqual(['c']);
    expect(sut.generate({ source_code: source }).json_schema.name).toBe('third');
  });

  it("matches Letta's nested_pydantic_as_arg_example (nested models inlined)", () => {
    const source = `from pydantic import BaseModel, Field


class Step(BaseModel):
    name: str = Field(
        ...,
        description="Name of the step.",
    )
    key: str = Field(
        ...,
        description="Unique identifier for the step.",
    )
    description: str = Field(
        ...,
        description="An exhaustic description of what this step is trying to achieve and accomplish.",
    )


class Steps(BaseModel):
    steps: list[Step] = Field(
        ...,
        description="A list of steps to add to the task plan.",
    )


def create_task_plan(steps: Steps) -> str:
    """
    Creates a task plan for the current task.
    It takes in a list of steps, and updates the task with the new steps provided.

    Args:
        steps: List of steps to add to the task plan.

    Returns:
        str: A summary of the updated task plan after deletion
    """
    return "Task plan created successfully."
`;
    const { json_schema } = sut.generate({ source_code: source });

    expect(json_schema).toEqual({
      name: 'create_task_plan',
      description:
        'Creates a task plan for the current task.\n\nIt takes in a list of steps, and updates the task with the new steps provided.',
      parameters: {
        type: 'object',
        properties: {
          steps: {
            type: 'object',
            properties: {
              steps: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    name: { type: 'string', description: 'Name of the step.' },
                    key: { type: 'string', description: 'Unique identifier for the step.' },
                    description: {
                      type: 'string',
                      description: 'An exhaustic description of what this step is trying to achieve and accomplish.',
                    },
                  },
                  required: ['name', 'key', 'description'],
                },
                description: 'A list of steps to add to the task plan.',
              },
            },
            required: ['steps'],
            description: 'List of steps to add to the task plan.',
          },
        },
        required: ['steps'],
      },
    });
  });

  it('decodes escapes in docstrings (tabs expanded, as inspect.cleandoc does) but keeps raw docstrings verbatim', () => {
    const source = `
def a(x: str):
    """Tab\\there \\u00e9.

    Args:
        x: Caf\\xe9.
    """

def b(x: str):
    r"""Raw \\d+ pattern.

    Args:
        x: A \\w value.
    """
`;
    expect(sut.generate({ source_code: source, name: 'a' }).json_schema.description).toBe('Tab     here é.');
    expect(sut.generate({ source_code: source, name: 'a' }).json_schema.parameters.properties.x.description).toBe(
      'Café.',
    );
    expect(sut.generate({ source_code: source, name: 'b' }).json_schema.description).toBe('Raw \\d+ pattern.');
  });

  it('uses "No description available" when the docstring only has sections, as Letta does', () => {
    const source = 'def f(x: int):\n    """\n    Args:\n        x: The x.\n    """\n';
    expect(sut.generate({ source_code: source }).json_schema.description).toBe('No description available');
  });
});
