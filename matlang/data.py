"""``matlang.data``: the datasets that ship with matlang, and PyG datasets built from them.

>>> from matlang.data import load_tu, pyg_dataset
>>> mutag = load_tu("MUTAG")                      # graphs, labels, the paper's 10 folds
>>> dataset = pyg_dataset(mutag)                  # a torch_geometric InMemoryDataset

The data folder is ``$MATLANG_DATA`` when set, else the copy shipped with matlang (the
repository's ``data/``; an installed wheel carries it too); ``matlang data path`` prints it.
Loaders live in :mod:`matlang.runtime.datasets` and :mod:`matlang.runtime.pyg` (imported on
first use; PyG only for ``pyg_dataset``/``to_pyg``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matlang import _lazy_getattr

_DATASETS = "matlang.runtime.datasets"
_PYG = "matlang.runtime.pyg"

#: Public name → the module that defines it.
_LAZY = {
    "data_root": _DATASETS,
    "data_available": _DATASETS,
    "load": _DATASETS,
    "load_tu": _DATASETS,
    "load_exp": _DATASETS,
    "load_brec": _DATASETS,
    "load_randomgraph": _DATASETS,
    "load_twodgrid30": _DATASETS,
    "load_sr25": _DATASETS,
    "load_graph8c": _DATASETS,
    "load_paper_pairs": _DATASETS,
    "load_graph6": _DATASETS,
    "DATASETS": _DATASETS,
    "pyg_dataset": _PYG,
    "to_pyg": _PYG,
}

if TYPE_CHECKING:
    pass

__getattr__ = _lazy_getattr(__name__, _LAZY, globals())

__all__ = list(_LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)
