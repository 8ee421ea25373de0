from typing import Dict
def d(a: dict, b: Dict):
    """Tool d.

    Args:
        a: A dict.
        b: Another.
    """
    return None
