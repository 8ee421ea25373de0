from enum import IntEnum, auto

class Priority(IntEnum):
    LOW = auto()
    HIGH = auto()

def e2(p: Priority):
    """Tool e2.

    Args:
        p: Priority.
    """
    return None
