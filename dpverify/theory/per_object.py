"""A conversion computed once per object: tables that repeat one object per distinct value
(a tabulated gain table one row per function value, a loss table one Fraction per
distinct value, an argmax rule one row per set of tied outputs) are converted once per
object, not once per place. Each object is kept beside its result, so that its id is not
reused while the conversion lives (a float array's elements are new objects each time
they are read)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class PerObject:
    """`convert`, memoised by the identity of its argument."""

    def __init__(self, convert: Callable[[Any], Any]):
        self.convert = convert
        self.seen: dict[int, tuple[Any, Any]] = {}

    def __call__(self, obj: Any) -> Any:
        hit = self.seen.get(id(obj))
        if hit is None:
            hit = self.seen[id(obj)] = (obj, self.convert(obj))
        return hit[1]

    def results(self) -> list[Any]:
        """The results so far, one per distinct object, in the order first met."""
        return [result for _, result in self.seen.values()]


__all__ = ["PerObject"]
