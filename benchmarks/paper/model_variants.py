"""Named variants of the reference models, torch-free so that ``matlang bench … --help`` can
list them without importing torch (:mod:`benchmarks.paper.models` builds them)."""

from __future__ import annotations

from typing import Any

#: Named variants of a reference model, accepted wherever a model name is (``--model``): the
#: model they build on and the fields they replace after the protocol's overrides
#: (:data:`benchmarks.paper.models.PROTOCOL_OVERRIDES`). The ``-adjacency`` variant is GNNML3
#: as it ran outside counting before the paper's basis per protocol: the counting
#: configuration's adjacency spectrum and widths (17 + 17), with the protocol's bands.
MODEL_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "gnnml3-adjacency": (
        "gnnml3",
        {"basis": "adjacency", "hidden": 17, "product_channels": 17, "support_mlp": "sigmoid"},
    ),
    "gnnml3-sigmoid": ("gnnml3", {"support_mlp": "sigmoid"}),
}

#: What each variant is, for ``--help``.
VARIANT_HELP: dict[str, str] = {
    "gnnml3-adjacency": "GNNML3 on the adjacency spectrum with the counting widths, as it ran "
    "outside counting before the paper's basis per protocol",
    "gnnml3-sigmoid": "GNNML3 in the paper's configuration but Eq. 7's MLPs with sigmoids, as "
    "it ran before: the learned supports start as one multiple of M",
}


#: The patterns whose exact counts per node (``matlang.transforms.PatternCounts``) the
#: :data:`COUNT_MODELS` read: cycles of length 3–6 and K4 (the learned row of issue 53).
COUNT_PATTERNS: tuple[str, ...] = ("C3", "C4", "C5", "C6", "K4")

#: Models that read those counts beside their bench's node features (``bench count`` and
#: ``bench tu`` append them as the last columns): the model they build on and the fields they
#: replace, as :data:`MODEL_VARIANTS`. ``gin+counts``: GIN, the counts in its input only;
#: ``gsn+counts``: GIN with the counts as GSN's structural identifiers, concatenated to every
#: layer's input (``GINConfig.identifiers``), not only the first's.
COUNT_MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "gin+counts": ("gin", {}),
    "gsn+counts": ("gin", {"identifiers": len(COUNT_PATTERNS)}),
}

COUNT_HELP: dict[str, str] = {
    "gin+counts": "GIN on the node features and the exact counts of "
    + ", ".join(COUNT_PATTERNS)
    + " per node",
    "gsn+counts": "the same counts as GSN-style structural identifiers: concatenated to "
    "every GIN layer's input",
}


def count_models_help() -> str:
    """``name (what it is)`` for every :data:`COUNT_MODELS` model."""
    return "; ".join(f"{name} ({COUNT_HELP[name]})" for name in COUNT_MODELS)


def variants_help() -> str:
    """``name (what it is)`` for every variant, joined for a ``--model`` help."""
    return "; ".join(f"{name} ({VARIANT_HELP[name]})" for name in MODEL_VARIANTS)


__all__ = [
    "COUNT_HELP",
    "COUNT_MODELS",
    "COUNT_PATTERNS",
    "MODEL_VARIANTS",
    "VARIANT_HELP",
    "count_models_help",
    "variants_help",
]
