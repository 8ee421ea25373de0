from typing import Annotated
from pydantic import Field
def a1(n: Annotated[int, Field(ge=0, le=10, description="Zero to ten.")]):
    """Tool a1."""
    return None
