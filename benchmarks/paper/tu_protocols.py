"""The TU protocols' settings, torch-free so that ``matlang bench tu --help`` can print them.

``--protocol paper`` trains every dataset alike (:data:`PAPER`). ``--protocol authors`` follows
the authors' per-dataset scripts (balcilar/gnn-matlang: ``mutag.py``, ``proteins.py``,
``enzymes.py``, ``ptc.py``, read to learn their settings): :data:`AUTHORS`. ``--arch authors``
also builds the models those scripts define (:data:`AUTHORS_ARCH`) instead of ours.
"""

from __future__ import annotations

from typing import Any, NamedTuple

#: The TU table's datasets, in :func:`benchmarks.paper.tu.tu_section`'s column order.
#: ``enzymes-cont`` is ENZYMES with every column of its features: the one-hot node label and
#: the 18 continuous attributes (the paper's ENZYMES-cont column, the authors'
#: ``enzymes_contfeat.py``).
DATASETS = ("mutag", "proteins", "enzymes", "enzymes-cont", "ptc")
#: Datasets read with their continuous attributes: the TU dataset they load
#: (``matlang.runtime.datasets.load_tu(name, continuous=True)``).
CONTINUOUS: dict[str, str] = {"enzymes-cont": "enzymes"}
#: What the continuous attributes add to the one-hot node labels (``node_features``).
CONTINUOUS_FEATURES: dict[str, str] = {"enzymes-cont": "18 continuous attributes"}


def dataset_label(dataset: str) -> str:
    """The dataset as the paper's table heads it: ``MUTAG``, ``ENZYMES-cont``."""
    base = CONTINUOUS.get(dataset)
    return dataset.upper() if base is None else f"{base.upper()}-cont"


class Protocol(NamedTuple):
    """How a dataset trains under a protocol."""

    epochs: int
    batch_size: int
    #: each node's degree appended to its features (``SpectralDesign(adddegree=True)``)
    degree: bool = False
    #: every feature column standardised with the mean and standard deviation of the training
    #: fold's nodes (``ds.data.x = (ds.data.x - d.data.x.mean(0)) / d.data.x.std(0)``)
    standardize: bool = False
    #: Adam's L2 weight decay (``--weight-decay`` replaces it)
    weight_decay: float = 0.0


#: ``--protocol paper``: one setting for every dataset, one-hot node labels as they are.
PAPER = Protocol(100, 32)

#: ``--protocol authors``, per dataset. ENZYMES and PROTEINS standardise the features (their
#: scripts do; MUTAG's and PTC's do not, PTC's has the line commented out).
AUTHORS: dict[str, Protocol] = {
    "mutag": Protocol(100, 16, degree=True),
    "proteins": Protocol(50, 180, degree=True, standardize=True),
    "enzymes": Protocol(400, 60, degree=True, standardize=True),
    # enzymes_contfeat.py: 200 epochs (``range(1, 201)``), batch 60, degree, standardised
    "enzymes-cont": Protocol(200, 60, degree=True, standardize=True),
    "ptc": Protocol(100, 32, degree=True),
}

_ENZYMES_WIDE = {"hidden": 128, "layers": 4, "readout": ("mean", "max"), "head": ()}

#: ``--arch authors``: per dataset and model, the fields of our model's configuration that
#: give the architecture of the authors' script (a :class:`runtime.models.ModelConfig`
#: replaced by :func:`runtime.models.replace_fields`). Only what our configurations can say is
#: here: their GIN puts batch norm after every layer, their MUTAG GNNML3 too and ends in one
#: regression output; those are not transcribed. Supports: ``dv`` = ``bandwidth``, ``nfreq`` =
#: ``num_bands``, ``learnedge`` = ``learn_supports``; ``nout1``/``nout2`` = ``hidden`` /
#: ``product_channels``; a readout followed by ``BatchNorm1d`` = ``readout_norm``; one linear
#: layer after the readout = ``head: ()``; ``F.dropout`` before every layer = ``dropout``;
#: ``SpectralDesign``'s default ``laplacien=True`` = ``basis: "normalized_laplacian"`` (the
#: classification protocol's basis too; written here so that the file records it).
AUTHORS_ARCH: dict[str, dict[str, dict[str, Any]]] = {
    "enzymes": {
        "gnnml3": {
            "basis": "normalized_laplacian",
            "hidden": 64,
            "product_channels": 0,
            "layers": 4,
            "learn_supports": False,
            "bandwidth": 2.0,
            "num_bands": 4,
            "dropout": 0.1,
            "readout": ("sum", "max"),
            "readout_norm": True,
            "head": (),
        },
        "chebnet": {**_ENZYMES_WIDE, "K": 3, "dropout": 0.1},
        "gcn": dict(_ENZYMES_WIDE),
        "mlp": {**_ENZYMES_WIDE, "dropout": 0.1},
    },
    "proteins": {
        "gnnml3": {
            "basis": "normalized_laplacian",
            "hidden": 64,
            "product_channels": 0,
            "layers": 2,
            "learn_supports": False,
            "bandwidth": 4.0,
            "num_bands": 3,
            "dropout": 0.1,
            "readout": ("mean", "max"),
            "head": (),
        },
    },
    # enzymes_contfeats_gnnml3_tf.py (TensorFlow; the paper's ENZYMES-cont GNNML3): the
    # spectral design of Balcilar et al. 2020 with fixed supports, I and 3 Gaussian bands
    # (``nfreq = 3``, ``dv = 1``) on the normalised Laplacian's spectrum, masked by
    # M = (A + I)^16 > 0 (``recfield = 5``: M squared four times); two convolution layers of
    # 200 (``hidden: [200, 200, 'meanmax', -100, -6]``), mean and max readouts, a dense layer of
    # 100 with ReLU, a linear output; dropout 0.1. Not transcribed: their convolutions have no
    # bias (ours do), their dropout also drops support entries ("kernel" dropout) and comes
    # before the head's layers, their L2 term spares the biases (Adam's weight decay here does
    # not).
    "enzymes-cont": {
        "gnnml3": {
            "basis": "normalized_laplacian",
            "hidden": 200,
            "product_channels": 0,
            "layers": 2,
            "learn_supports": False,
            "bandwidth": 1.0,
            "num_bands": 3,
            "receptive_field": 16,
            "dropout": 0.1,
            "readout": ("mean", "max"),
            "head": (100,),
        },
    },
    "ptc": {
        "gnnml3": {
            "basis": "normalized_laplacian",
            "hidden": 64,
            "product_channels": 16,
            "layers": 4,
            "learn_supports": True,
            "bandwidth": 10.0,
            "num_bands": 10,
            "dropout": 0.2,
            "readout": ("mean", "max"),
            "head": (100,),
        },
    },
}


#: ``--protocol authors --arch authors`` where the script that defines the architecture trains
#: otherwise than the dataset's (:data:`AUTHORS`): ``enzymes_contfeats_gnnml3_tf.py`` runs 400
#: epochs of 3 updates (``numbatch = 3``: batch 180 of a fold's 540 training graphs) with an L2
#: term of 1e-4 on the weights.
AUTHORS_ARCH_PROTOCOL: dict[tuple[str, str], Protocol] = {
    ("enzymes-cont", "gnnml3"): Protocol(
        400, 180, degree=True, standardize=True, weight_decay=1e-4
    ),
}


def authors_protocol(dataset: str, model: str, arch: bool) -> Protocol:
    """``--protocol authors``'s settings for ``model`` on ``dataset`` (``arch``: with
    ``--arch authors``, whose script may train otherwise)."""
    default = AUTHORS[dataset]
    return AUTHORS_ARCH_PROTOCOL.get((dataset, model), default) if arch else default


def authors_arch(dataset: str, model: str) -> dict[str, Any]:
    """The configuration fields of ``model``'s architecture in the authors' ``dataset``
    script, or a :class:`~matlang.errors.MatlangError` naming the ones transcribed."""
    from matlang.errors import MatlangError

    arch = AUTHORS_ARCH.get(dataset, {}).get(model)
    if arch is None:
        have = ", ".join(f"{d} {m}" for d, ms in AUTHORS_ARCH.items() for m in ms)
        raise MatlangError(
            f"--arch authors: the authors' {dataset} architecture of {model!r} is not "
            f"transcribed; transcribed: {have}"
        )
    return dict(arch)


def protocol_help() -> str:
    """``--protocol``'s help, from :data:`PAPER` and :data:`AUTHORS`."""

    def one(p: Protocol) -> str:
        return f"{p.epochs} epochs at batch {p.batch_size}"

    per = ", ".join(f"{dataset_label(d)} {one(p)}" for d, p in AUTHORS.items())
    std = ", ".join(dataset_label(d) for d, p in AUTHORS.items() if p.standardize)
    return (
        f"paper: {one(PAPER)}, one-hot node labels on every dataset; authors (their "
        f"per-dataset scripts): {per}, each node's degree appended to its features, and on "
        f"{std} every feature standardised with the training fold's mean and std (file "
        "tu-<dataset>-<model>.authors.json). --epochs and --batch-size replace the protocol's"
    )


def arch_help() -> str:
    """``--arch``'s help, from :data:`AUTHORS_ARCH`."""
    have = "; ".join(f"{dataset_label(d)}: {', '.join(ms)}" for d, ms in AUTHORS_ARCH.items())
    return (
        "ours: the reference models' classification configuration on every dataset; authors: "
        f"the architecture of the authors' script for the dataset ({have}; file tag "
        "authors-arch)"
    )
