async def fetch(url: str):
    """Tool fetch.

    Args:
        url: The URL.
    """
    return None
