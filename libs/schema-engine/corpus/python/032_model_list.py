from pydantic import BaseModel, Field
from typing import List, Optional

class Item(BaseModel):
    """An item."""
    name: str = Field(..., description="Item name.")
    qty: int = Field(1, ge=1, le=99, description="Quantity.")

def m2(items: list[Item]):
    """Tool m2.

    Args:
        items: The items.
    """
    return None
