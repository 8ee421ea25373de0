from pydantic import BaseModel, Field

class Search(BaseModel):
    """Search."""
    q: str = Field(..., min_length=1, max_length=50, description="Query.")
    page: int = Field(1, gt=0, description="Page.")
    tags: list[str] = Field(default_factory=list, max_length=5, description="Tags.")

def m9(s: Search):
    """Tool m9.

    Args:
        s: Search.
    """
    return None
