def d5(x: int):
    """
    Args:
        x: X.
    """
