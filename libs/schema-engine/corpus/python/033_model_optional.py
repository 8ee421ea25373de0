from pydantic import BaseModel, Field
from typing import List, Optional

class Item(BaseModel):
    """An item."""
    name: str = Field(..., description="Item name.")
    qty: int = Field(1, ge=1, le=99, description="Quantity.")

def m3(item: Optional[Item] = None):
    """Tool m3.

    Args:
        item: Maybe an item.
    """
    return None
