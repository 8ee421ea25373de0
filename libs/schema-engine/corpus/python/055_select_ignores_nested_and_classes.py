import functools

class Helper:
    def method(self):
        pass

@functools.lru_cache
def tool(q: str):
    """Tool.

    Args:
        q: Q.
    """
    def inner(z):
        return z
    return inner(q)
