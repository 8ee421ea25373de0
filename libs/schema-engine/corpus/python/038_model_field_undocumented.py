from pydantic import BaseModel

class P(BaseModel):
    """P."""
    x: int

def m8(p: P):
    """Tool m8.

    Args:
        p: A p.
    """
    return None
