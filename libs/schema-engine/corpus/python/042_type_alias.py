Vector = list[float]

def a3(v: Vector):
    """Tool a3.

    Args:
        v: A vector.
    """
    return None
