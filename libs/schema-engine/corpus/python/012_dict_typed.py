from typing import Dict, Mapping
def dt(a: Dict[str, int], b: dict[str, list[str]], c: Mapping[str, float]):
    """Tool dt.

    Args:
        a: Counts.
        b: Groups.
        c: Weights.
    """
    return None
