def f(x: int, y: int):
    """F.

    Args:
        x: X.
    """
