"""``matlang.nn``: MATLANG sentences as layers of models, in PyG's conventions.

>>> from matlang.nn import SentenceConv
>>> conv = SentenceConv(7, 32, ["A", "A ⊙ A²", "input h; relu(A h) ⊙ (A² h)"])
>>> h = conv(x, edge_index, batch)        # (N, 32)

The layers live in :mod:`compiler.layers` (this front door imports them, and torch, on first
use): :class:`~compiler.layers.conv.SentenceConv` (operator sentences as supports ``Σ C_s X W_s``,
node sentences per channel) and :class:`~compiler.layers.readout.SentenceReadout` (graph-level
sentences as graph features).
"""

from __future__ import annotations

from matlang import _lazy_getattr

#: Public name → the module that defines it.
_LAZY = {
    "SentenceConv": "compiler.layers.conv",
    "SentenceReadout": "compiler.layers.readout",
}


__getattr__ = _lazy_getattr(__name__, _LAZY, globals())


__all__ = list(_LAZY)
