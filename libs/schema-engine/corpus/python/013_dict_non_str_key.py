from typing import Dict
def dk(a: Dict[int, str]):
    """Tool dk.

    Args:
        a: Bad keys.
    """
    return None
