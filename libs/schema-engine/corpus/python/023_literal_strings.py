from typing import Literal
def l1(mode: Literal["fast", "slow"]):
    """Tool l1.

    Args:
        mode: Speed.
    """
    return None
