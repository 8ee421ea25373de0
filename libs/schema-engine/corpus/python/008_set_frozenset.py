def sets(a: set[str], b: frozenset[int]):
    """Tool sets.

    Args:
        a: Unique strings.
        b: Unique ints.
    """
    return None
