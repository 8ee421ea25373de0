from pydantic import BaseModel, Field

class Query(BaseModel):
    """A query."""
    from_: str = Field(..., alias="from", description="Start.")

def m6(q: Query):
    """Tool m6.

    Args:
        q: A query.
    """
    return None
