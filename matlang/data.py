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

from matlang import _front_door

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
    from matlang.runtime.datasets import DATASETS as DATASETS
    from matlang.runtime.datasets import data_available as data_available
    from matlang.runtime.datasets import data_root as data_root
    from matlang.runtime.datasets import load as load
    from matlang.runtime.datasets import load_brec as load_brec
    from matlang.runtime.datasets import load_exp as load_exp
    from matlang.runtime.datasets import load_graph6 as load_graph6
    from matlang.runtime.datasets import load_graph8c as load_graph8c
    from matlang.runtime.datasets import load_paper_pairs as load_paper_pairs
    from matlang.runtime.datasets import load_randomgraph as load_randomgraph
    from matlang.runtime.datasets import load_sr25 as load_sr25
    from matlang.runtime.datasets import load_tu as load_tu
    from matlang.runtime.datasets import load_twodgrid30 as load_twodgrid30
    from matlang.runtime.pyg import pyg_dataset as pyg_dataset
    from matlang.runtime.pyg import to_pyg as to_pyg

_front_door(__name__, _LAZY, globals())
