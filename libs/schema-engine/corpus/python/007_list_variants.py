from typing import List, Sequence

def lists(a: list, b: list[str], c: 'List[int]', d: Sequence[float]):
    """Tool lists.

    Args:
        a: Untyped.
        b: Strings.
        c: Ints.
        d: Floats.
    """
    return None
