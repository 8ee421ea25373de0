def present():
    """Tool present."""
    return None
