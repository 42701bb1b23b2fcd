"""``matlang.models``: the hand-written reference models (MLP, GCN, GAT, GIN, ChebNet, GNNML1,
GNNML3, PPGN) by name, the targets and baselines of compiled sentences.

>>> from matlang.models import build_model
>>> model = build_model("gnnml3", in_dim=7, out_dim=2)     # a torch.nn.Module

Defined in :mod:`matlang.runtime.models` (imported, with torch, on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matlang import _front_door

_MODELS = "matlang.runtime.models"

#: Public name → the module that defines it.
_LAZY = {name: _MODELS for name in ("build_model", "MODELS", "resolve_config", "GraphModel")}

if TYPE_CHECKING:
    from matlang.runtime.models import MODELS as MODELS
    from matlang.runtime.models import GraphModel as GraphModel
    from matlang.runtime.models import build_model as build_model
    from matlang.runtime.models import resolve_config as resolve_config

_front_door(__name__, _LAZY, globals())
