def f(x):
    """F.

    Args:
        x: X.
    """
