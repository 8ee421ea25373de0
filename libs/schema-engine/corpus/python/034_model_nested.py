from pydantic import BaseModel, Field
from typing import List, Optional

class Item(BaseModel):
    """An item."""
    name: str = Field(..., description="Item name.")
    qty: int = Field(1, ge=1, le=99, description="Quantity.")

class Order(BaseModel):
    """An order."""
    id: str = Field(..., description="Order id.")
    items: List[Item] = Field(..., description="Lines.")
    note: Optional[str] = Field(None, description="A note.")

def m4(order: Order):
    """Tool m4.

    Args:
        order: The order.
    """
    return None
