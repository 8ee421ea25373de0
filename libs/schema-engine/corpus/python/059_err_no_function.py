x = 1
class A:
    pass
