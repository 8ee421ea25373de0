def d6(self, agent_state, x: int):
    """Tool d6.

    Args:
        x: X.
    """
