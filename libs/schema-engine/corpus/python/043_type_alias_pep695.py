type Pair = tuple[int, int]

def a4(v: Pair):
    """Tool a4.

    Args:
        v: A pair.
    """
    return None
