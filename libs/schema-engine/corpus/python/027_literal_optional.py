from typing import Literal, Optional
def l5(unit: Optional[Literal["c", "f"]] = None):
    """Tool l5.

    Args:
        unit: Unit.
    """
    return None
