from typing import Optional
def o3(a: Optional[float] = 0.5):
    """Tool o3.

    Args:
        a: A ratio.
    """
    return None
