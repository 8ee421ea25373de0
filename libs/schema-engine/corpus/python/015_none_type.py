def nonet(a: None):
    """Tool nonet.

    Args:
        a: Always null.
    """
    return None
