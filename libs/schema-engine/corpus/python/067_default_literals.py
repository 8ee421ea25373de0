from enum import Enum
from typing import Optional
from pydantic import BaseModel, Field

LIMIT = 10


class Color(str, Enum):
    RED = "red"
    GREEN = "green"


class Opts(BaseModel):
    """Options."""
    depth: int = Field(default=-2, description="Depth.")
    tags: list[str] = Field(default_factory=list, description="Tags.")
    mode: str = Field("fast", description="Mode.")
    shade: Color = Field(Color.GREEN, description="Shade.")


def lit(
    opts: Opts,
    n: int = -3,
    x: float = 1.5e3,
    s: str = "ab" "cd",
    flag: bool = True,
    off: bool = False,
    nothing: Optional[str] = None,
    items: list[int] = [1, -2, 3],
    pair: tuple[int, str] = (1, "a"),
    mapping: dict[str, list[int]] = {"a": [1], "b": []},
    uniq: set[int] = {1, 2},
    color: Color = Color.RED,
    limit: int = LIMIT,
    total: int = 2 * 3,
    label: str = str(5),
    big: int = 123456789012345678901234567890,
):
    """Defaults that are literals get a default; the others do not.

    Args:
        opts: Options.
        n: Negative.
        x: Float.
        s: Implicitly concatenated.
        flag: True.
        off: False.
        nothing: None.
        items: A list.
        pair: A tuple.
        mapping: A dict.
        uniq: A set.
        color: An Enum member.
        limit: A name: no default.
        total: An expression: no default.
        label: A call: no default.
        big: Too large for a JSON number without rounding: no default.
    """
    return None
