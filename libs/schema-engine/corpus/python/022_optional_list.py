from typing import List, Optional
def u4(a: Optional[List[str]]):
    """Tool u4.

    Args:
        a: Maybe strings.
    """
    return None
