def d4(x: int):
    """Tool d4.

    Arguments:
        x: X via Arguments.
    """
