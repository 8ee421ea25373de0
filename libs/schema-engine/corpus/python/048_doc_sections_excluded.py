def d3(x: int) -> int:
    """Tool d3.

    Args:
        x: X.

    Returns:
        int: Y.

    Raises:
        ValueError: never.

    Examples:
        >>> d3(1)
    """
    return x
