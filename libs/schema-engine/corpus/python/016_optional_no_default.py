from typing import Optional
def o1(a: Optional[int]):
    """Tool o1.

    Args:
        a: Maybe an int.
    """
    return None
