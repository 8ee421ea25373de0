from __future__ import annotations
from pydantic import BaseModel, Field
from typing import List, Optional

class Item(BaseModel):
    """An item."""
    name: str = Field(..., description="Item name.")
    qty: int = Field(1, ge=1, le=99, description="Quantity.")

def a6(item: Item, n: int | None = None):
    """Tool a6.

    Args:
        item: The item.
        n: Count.
    """
    return None
