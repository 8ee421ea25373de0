from typing import Tuple
def tup(p: Tuple[int, str]):
    """Tool tup.

    Args:
        p: A pair.
    """
    return None
