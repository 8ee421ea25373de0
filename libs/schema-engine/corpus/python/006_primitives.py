def prims(s: str, i: int, f: float, b: bool):
    """Tool prims.

    Args:
        s: A string.
        i: An int.
        f: A float.
        b: A bool.
    """
    return None
