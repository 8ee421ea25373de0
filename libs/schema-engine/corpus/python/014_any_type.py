from typing import Any
def anyt(a: Any):
    """Tool anyt.

    Args:
        a: Anything.
    """
    return None
