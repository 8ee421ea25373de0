import functools

@functools.wraps(print)
async def fetch2(url: str):
    """Tool fetch2.

    Args:
        url: The URL.
    """
    return None
