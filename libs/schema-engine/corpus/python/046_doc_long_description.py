def d1(x: int):
    """Tool d1.

    A longer description
    over two lines.

    Args:
        x: X.
    """
    return None
