def u1(a: int | str, b: str | None, c: list[int] | None = None):
    """Tool u1.

    Args:
        a: Id or name.
        b: Maybe text.
        c: Maybe ints.
    """
    return None
