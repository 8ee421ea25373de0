from pydantic import BaseModel, Field
from typing import List, Optional

class Item(BaseModel):
    """An item."""
    name: str = Field(..., description="Item name.")
    qty: int = Field(1, ge=1, le=99, description="Quantity.")

def m1(item: Item):
    """Tool m1.

    Args:
        item: The item.
    """
    return None
