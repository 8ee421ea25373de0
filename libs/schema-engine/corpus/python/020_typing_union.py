from typing import Union
def u2(a: Union[int, float, str]):
    """Tool u2.

    Args:
        a: A scalar.
    """
    return None
