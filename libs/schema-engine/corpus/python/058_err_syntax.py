def broken(x: int:
    """Broken."""
