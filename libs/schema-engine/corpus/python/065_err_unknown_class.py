def f(x: Unknown):
    """Tool f.

    Args:
        x: Something.
    """
    return None
