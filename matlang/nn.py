"""``matlang.nn``: MATLANG sentences as layers of models, in PyG's conventions.

>>> from matlang.nn import SentenceConv
>>> conv = SentenceConv(7, 32, ["A", "A ⊙ A²", "input h; relu(A h) ⊙ (A² h)"])
>>> h = conv(x, edge_index, batch)        # (N, 32)

The layers live in :mod:`matlang.compiler.layers` (this front door imports them, and torch, on
first use): :class:`~matlang.compiler.layers.conv.SentenceConv` (operator sentences as supports
``Σ C_s X W_s``, node sentences per channel),
:class:`~matlang.compiler.layers.readout.SentenceReadout` (graph-level sentences as graph
features) and :class:`~matlang.compiler.layers.model.SentenceGNN` (a whole model of sentence
convolutions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matlang import _front_door

#: Public name → the module that defines it.
_LAZY = {
    "SentenceConv": "matlang.compiler.layers.conv",
    "SentenceReadout": "matlang.compiler.layers.readout",
    "SentenceGNN": "matlang.compiler.layers.model",
}

if TYPE_CHECKING:
    from matlang.compiler.layers.conv import SentenceConv as SentenceConv
    from matlang.compiler.layers.model import SentenceGNN as SentenceGNN
    from matlang.compiler.layers.readout import SentenceReadout as SentenceReadout

_front_door(__name__, _LAZY, globals())
