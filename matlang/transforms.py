"""``matlang.transforms``: exact sentence values as features, in PyG's ``BaseTransform`` style.

>>> from matlang.transforms import SentenceFeatures
>>> t = SentenceFeatures(["(A³ ⊙ I) 𝟏 / 2"])   # triangles at each node, appended to data.x
>>> data = t(data)

The transform lives in :mod:`matlang.compiler.layers.transforms` (imported on first use); PyG is not
required.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matlang import _lazy_getattr

_LAZY = {"SentenceFeatures": "matlang.compiler.layers.transforms"}

if TYPE_CHECKING:
    pass


__getattr__ = _lazy_getattr(__name__, _LAZY, globals())


__all__ = list(_LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)
