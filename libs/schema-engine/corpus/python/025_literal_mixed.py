from typing import Literal
def l3(v: Literal["a", 1, True]):
    """Tool l3.

    Args:
        v: Mixed.
    """
    return None
