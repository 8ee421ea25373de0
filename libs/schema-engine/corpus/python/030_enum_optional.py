from enum import Enum
from typing import Optional

class Color(Enum):
    RED = "red"

def e3(c: Optional[Color] = None):
    """Tool e3.

    Args:
        c: Maybe a color.
    """
    return None
