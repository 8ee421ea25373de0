from typing import Literal
def l2(n: Literal[1, 2, 3]):
    """Tool l2.

    Args:
        n: A small number.
    """
    return None
