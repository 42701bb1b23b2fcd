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

from importlib import import_module
from typing import Any

#: Public name → the module that defines it.
_LAZY = {
    "SentenceConv": "compiler.layers.conv",
    "SentenceReadout": "compiler.layers.readout",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'matlang.nn' has no attribute {name!r}")


__all__ = list(_LAZY)
