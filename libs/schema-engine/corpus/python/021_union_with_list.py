from typing import List, Union
def u3(a: Union[str, List[str]]):
    """Tool u3.

    Args:
        a: One or many.
    """
    return None
