def d2(x: int):
    """Tool d2.

    Args:
        x (int): First line
            continued here.
    """
