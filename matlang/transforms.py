"""``matlang.transforms``: exact sentence values as features, in PyG's ``BaseTransform`` style.

>>> from matlang.transforms import SentenceFeatures
>>> t = SentenceFeatures(["(A³ ⊙ I) 𝟏 / 2"])   # triangles at each node, appended to data.x
>>> data = t(data)
>>> from matlang.transforms import PatternCounts
>>> data = PatternCounts(["C3", "C4", "C5", "K4"], per="node")(data)   # exact subgraph counts

The transform lives in :mod:`matlang.compiler.layers.transforms` (imported on first use); PyG is not
required.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matlang import _front_door

_LAZY = {
    "SentenceFeatures": "matlang.compiler.layers.transforms",
    "PatternCounts": "matlang.runtime.pattern_features",
}

if TYPE_CHECKING:
    from matlang.compiler.layers.transforms import SentenceFeatures as SentenceFeatures
    from matlang.runtime.pattern_features import PatternCounts as PatternCounts

_front_door(__name__, _LAZY, globals())
