from pydantic import BaseModel

class Point(BaseModel):
    """A point.

    Attributes:
        x: X coordinate.
        y: Y coordinate.
    """
    x: float
    y: float

def m5(p: Point):
    """Tool m5.

    Args:
        p: A point.
    """
    return None
