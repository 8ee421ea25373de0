from typing import Annotated
def a2(n: Annotated[str, "A name."]):
    """Tool a2."""
    return None
