def first(a: int):
    """First.

    Args:
        a: A.
    """

def second(b: str):
    """Second.

    Args:
        b: B.
    """
