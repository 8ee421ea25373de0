from typing import Literal
def l4(unit: Literal["c", "f"] = "c"):
    """Tool l4.

    Args:
        unit: Unit.
    """
    return None
