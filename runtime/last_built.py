"""A memo of one entry for graph operators built from tensors: see :class:`LastBuilt`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import Tensor


class LastBuilt:
    """A memo of one entry: the last value built from some tensors, returned again while
    called with the very same tensor objects, unchanged since (their in-place versions), and
    the same other arguments. A model builds one graph operator and uses it several times a
    forward (ChebNet propagates its ``L̂`` K−1 times a layer, GIN and GCN their operator once
    a layer); with this it is built once. Nothing that needs a gradient is kept (a value of a
    learned tensor would carry an old step's graph), and holding the tensors keeps their ids
    from being reused.

    Owned by whoever reads the operator (PyG's ``cached=True`` pattern): each layer holds one,
    and a :class:`~runtime.models.base.GraphModel` gives all its layers one (they read the
    same graph); nothing module-level holds one. A pickled or copied owner starts empty."""

    def __init__(self) -> None:
        self._last: tuple[tuple[Tensor | None, ...], tuple[int, ...], Any, Any] | None = None

    def get(self, tensors: tuple[Tensor | None, ...], extra: Any, build: Callable[[], Any]) -> Any:
        versions = tuple(-1 if t is None else t._version for t in tensors)
        last = self._last
        if (
            last is not None
            and len(last[0]) == len(tensors)
            and all(a is b for a, b in zip(last[0], tensors))
            and last[1] == versions
            and last[2] == extra
        ):
            return last[3]
        value = build()
        keep = not any(t is not None and t.requires_grad for t in tensors)
        self._last = (tensors, versions, extra, value) if keep else None
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        return (LastBuilt, ())


__all__ = ["LastBuilt"]
