/** Tool sources used across the end-to-end tests. */
export const ROLL_D20 = `import random


def roll_d20() -> str:
    """
    Simulate the roll of a 20-sided die (d20).

    This function generates a random integer between 1 and 20, inclusive,
    which represents the outcome of a single roll of a d20.

    Returns:
        str: The result of the die roll.
    """
    dice_role_outcome = random.randint(1, 20)
    output_string = f"You rolled a {dice_role_outcome}"
    print("rolling the die")
    return output_string
`;

export const ADD = `def add(a: int, b: int = 2) -> int:
    """
    Add two integers.

    Args:
        a (int): The first number.
        b (int): The second number.

    Returns:
        int: The sum.
    """
    return a + b
`;

export function pythonTool(name: string, body: string, params = ''): string {
  return `def ${name}(${params}):
    """
    Test tool ${name}.
${
  params
    ? `\n    Args:\n${params
        .split(',')
        .map((p) => `        ${p.split(':')[0]!.trim()}: a value.`)
        .join('\n')}\n`
    : ''
}
    """
${body
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
`;
}
