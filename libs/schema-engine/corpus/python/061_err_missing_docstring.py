def nodoc(x: int):
    return x
