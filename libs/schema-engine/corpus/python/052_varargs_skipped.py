def d7(x: int, *args, **kwargs):
    """Tool d7.

    Args:
        x: X.
    """
