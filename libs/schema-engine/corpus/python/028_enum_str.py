from enum import Enum

class Color(str, Enum):
    RED = "red"
    GREEN = "green"

def e1(color: Color):
    """Tool e1.

    Args:
        color: A color.
    """
    return None
