from typing import Optional
def o2(a: Optional[int] = None):
    """Tool o2.

    Args:
        a: Maybe an int.
    """
    return None
