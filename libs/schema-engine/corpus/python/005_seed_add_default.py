def add(a: int, b: int = 2):
    """Tool add.

    Args:
        a (int): The first number.
        b (int): The second number.
    """
    return None
