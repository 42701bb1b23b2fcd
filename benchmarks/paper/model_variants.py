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


def variants_help() -> str:
    """``name (what it is)`` for every variant, joined for a ``--model`` help."""
    return "; ".join(f"{name} ({VARIANT_HELP[name]})" for name in MODEL_VARIANTS)


__all__ = ["MODEL_VARIANTS", "VARIANT_HELP", "variants_help"]
