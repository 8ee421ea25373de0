def tupv(p: tuple[int, ...]):
    """Tool tupv.

    Args:
        p: Any number of ints.
    """
    return None
