"""``matlang.transforms``: exact sentence values as features, in PyG's ``BaseTransform`` style.

>>> from matlang.transforms import SentenceFeatures
>>> t = SentenceFeatures(["(A³ ⊙ I) 𝟏 / 2"])   # triangles at each node, appended to data.x
>>> data = t(data)

The transform lives in :mod:`compiler.layers.transforms` (imported on first use); PyG is not
required.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {"SentenceFeatures": "compiler.layers.transforms"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'matlang.transforms' has no attribute {name!r}")


__all__ = list(_LAZY)
