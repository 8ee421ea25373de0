from pydantic import BaseModel, Field

class Node(BaseModel):
    """A node."""
    kids: list["Node"] = Field(..., description="Children.")

def m7(n: Node):
    """Tool m7.

    Args:
        n: A node.
    """
    return None
