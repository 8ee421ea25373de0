from typing import Callable
def f(x: Callable[[int], int]):
    """Tool f.

    Args:
        x: A callback.
    """
    return None
