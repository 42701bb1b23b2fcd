"""Reference models (MLP, GCN, GAT, GIN, ChebNet, PPGN, GNNML1, GNNML3) and their registry.

``build_model(name, in_dim, out_dim, config=..., task=...)`` builds one; ``config`` is a named
configuration (``"iso"``: the paper's isomorphism tests, 3 layers, sum readout and a linear
layer; ``"count"``: substructure counting, 4 layers, sum readout and two linear layers — both
around 30K parameters like every model in the paper; GNNML3 also has ``"spectral"``, the
counting architecture on the paper's default supports (normalised Laplacian, 5 bands), which
is its default; PPGN also has ``"brec"``, the
architecture BREC published PPGN's row with, and ``"brec-xavier"``, that with BREC's
initialisation), a mapping of fields overriding the
default configuration, or a config object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from matlang.errors import MatlangError
from matlang.runtime.models.base import GraphModel, ModelConfig, Task
from matlang.runtime.models.chebnet import ChebNet, ChebNetConfig
from matlang.runtime.models.gat import GAT, GATConfig
from matlang.runtime.models.gcn import GCN
from matlang.runtime.models.gin import GIN, GINConfig
from matlang.runtime.models.gnnml1 import GNNML1
from matlang.runtime.models.gnnml3 import GNNML3, GNNML3Config
from matlang.runtime.models.mlp import MLP
from matlang.runtime.models.ppgn import PPGN, PPGNConfig
from matlang.runtime.preprocess import PreprocessCache, SupportConfig

#: The named configuration used when none is given (unless a model names its own default,
#: :attr:`ModelSpec.default`).
DEFAULT_CONFIG = "count"


@dataclass(frozen=True)
class ModelSpec:
    """A model class, its configuration class, its named configurations and the one used
    when none is given (``default``)."""

    name: str
    model: type[GraphModel]
    summary: str
    configs: Mapping[str, ModelConfig] = field(default_factory=dict)
    default: str = DEFAULT_CONFIG

    @property
    def config_class(self) -> type[ModelConfig]:
        return self.model.config_class


def _iso(cls: type[ModelConfig], **kw: Any) -> ModelConfig:
    return cls(layers=3, readout=("sum",), head=(), **kw)


def _count(cls: type[ModelConfig], **kw: Any) -> ModelConfig:
    return cls(layers=4, readout=("sum",), head=(32,), **kw)


#: BREC's PPGN (configs/BREC.json of GraphPKU/BREC), with torch's initialisation.
_BREC_PPGN = PPGNConfig(
    hidden=32,
    layers=5,
    readout=("max",),
    head=(),
    bias=True,
    m3_relu=False,
    norm=True,
    norm_momentum=1.0,
    output_norm=True,
)

#: Every reference model, by name.
MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            "mlp",
            MLP,
            "graph-agnostic MLP on node features",
            {"iso": _iso(ModelConfig, hidden=120), "count": _count(ModelConfig, hidden=94)},
        ),
        ModelSpec(
            "gcn",
            GCN,
            "GCN, C = (D+I)^-1/2 (A+I) (D+I)^-1/2",
            {"iso": _iso(ModelConfig, hidden=120), "count": _count(ModelConfig, hidden=94)},
        ),
        ModelSpec(
            "gat",
            GAT,
            "GAT, attention supports, heads concatenated",
            {
                "iso": _iso(GATConfig, hidden=120, heads=8),
                "count": _count(GATConfig, hidden=92, heads=4),
            },
        ),
        ModelSpec(
            "gin",
            GIN,
            "GIN-eps, C = A + (1+eps) I then an MLP",
            {"iso": _iso(GINConfig, hidden=76), "count": _count(GINConfig, hidden=62)},
        ),
        ModelSpec(
            "chebnet",
            ChebNet,
            "ChebNet, K Chebyshev supports, per-graph lambda_max",
            {
                "iso": _iso(ChebNetConfig, hidden=54, K=5),
                "count": _count(ChebNetConfig, hidden=44, K=5),
            },
        ),
        ModelSpec(
            "ppgn",
            PPGN,
            "PPGN (3-WL), dense n x n, padded batches",
            {
                "iso": _iso(PPGNConfig, hidden=56),
                "count": _count(PPGNConfig, hidden=38),
                # BREC's PPGN (its configs/BREC.json and Maron et al.'s model): 5 blocks of 32
                # with biases and no ReLU after m_3, batch norm after each, max readouts of
                # each block's diagonal and off-diagonal, one linear layer, batch-normalised
                # outputs; torch's initialisation ...
                "brec": _BREC_PPGN,
                # ... and BREC's: Xavier-normal weights, zero biases
                "brec-xavier": dataclasses.replace(_BREC_PPGN, init="xavier"),
            },
        ),
        ModelSpec(
            "gnnml1",
            GNNML1,
            "GNNML1 (Eq. 3), as powerful as 1-WL",
            {"iso": _iso(ModelConfig, hidden=60), "count": _count(ModelConfig, hidden=48)},
        ),
        ModelSpec(
            "gnnml3",
            GNNML3,
            "GNNML3 (Eq. 6-8), spectral supports on the configuration's basis (the adjacency "
            "or the normalised Laplacian)",
            {
                "iso": _iso(GNNML3Config, hidden=30, product_channels=30),
                "count": _count(
                    GNNML3Config,
                    hidden=17,
                    product_channels=17,
                    # the paper's choice for substructure counting
                    support=SupportConfig(basis="adjacency", num_bands=10),
                ),
                # the counting architecture on the paper's default supports ("the normalised
                # Laplacian for all problems, except Zinc12K and substructure counting", 5
                # bands, b = 5): SupportConfig(), what the spectral benchmark measures. The
                # default: on a 316 x 316 grid its supports took 1.5–1.9 s against 30–35 s for
                # ``count``'s (the adjacency spectrum is 4x as wide, so its bands need a
                # Chebyshev order 64 for 1e-6 where the Laplacian's need 18, and the probing
                # work grows with the cube of the order; benchmarks/README.md, issue 36). Width
                # 23: ~29K parameters like the others (6 supports where count has 11)
                "spectral": _count(GNNML3Config, hidden=23, product_channels=23),
            },
            default="spectral",
        ),
    )
}


def model_names() -> list[str]:
    return list(MODELS)


def get_spec(name: str) -> ModelSpec:
    key = name.lower()
    if key not in MODELS:
        raise MatlangError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    return MODELS[key]


def resolve_config(
    name: str, config: str | Mapping[str, Any] | ModelConfig | None = None
) -> ModelConfig:
    """The configuration object meant by ``config`` for model ``name``.

    ``None``: the model's default named configuration (:attr:`ModelSpec.default`:
    :data:`DEFAULT_CONFIG` unless the model names another); a string: a named configuration;
    a mapping: fields replaced in the default named configuration; a config object: itself.
    """
    spec = get_spec(name)
    if config is None:
        return spec.configs[spec.default]
    if isinstance(config, str):
        if config not in spec.configs:
            raise MatlangError(
                f"model {spec.name!r} has no configuration {config!r}; "
                f"known: {', '.join(spec.configs)}"
            )
        return spec.configs[config]
    if isinstance(config, ModelConfig):
        if not isinstance(config, spec.config_class):
            raise MatlangError(
                f"model {spec.name!r} needs a {spec.config_class.__name__}, "
                f"got {type(config).__name__}"
            )
        return config
    return replace_fields(spec.configs[spec.default], config)


def replace_fields(config: ModelConfig, values: Mapping[str, Any]) -> ModelConfig:
    """``config`` with the fields in ``values`` replaced (lists become tuples). A field of a
    nested configuration may be named directly: ``{"num_bands": 10}`` replaces GNNML3's
    ``support.num_bands``."""
    own = {f.name for f in dataclasses.fields(config)}
    nested = {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if dataclasses.is_dataclass(getattr(config, f.name))
    }
    inner = {f.name: name for name, sub in nested.items() for f in dataclasses.fields(sub)}
    unknown = sorted(set(values) - own - set(inner))
    if unknown:
        known = sorted(own | set(inner))
        raise MatlangError(
            f"{type(config).__name__} has no option(s) {', '.join(unknown)}; "
            f"known: {', '.join(known)}"
        )
    direct: dict[str, Any] = {}
    routed: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        value = tuple(value) if isinstance(value, list) else value
        if key in own:
            direct[key] = value
        else:
            routed.setdefault(inner[key], {})[key] = value
    for name, fields in routed.items():
        direct[name] = dataclasses.replace(direct.get(name, nested[name]), **fields)
    return dataclasses.replace(config, **direct)


def build_model(
    name: str,
    in_dim: int,
    out_dim: int,
    config: str | Mapping[str, Any] | ModelConfig | None = None,
    task: Task = "graph",
    backend: str | None = None,
    cache: PreprocessCache | None = None,
) -> GraphModel:
    """A reference model by name (see :data:`MODELS`) with a resolved configuration.

    A batch's ``edge_weight`` is read by GCN, GIN, ChebNet, GNNML1, GNNML3 and PPGN (``A``
    holds the weights); GAT (attention over the neighbours, as PyG's ``GATConv``) and MLP (no
    edges) do not read it."""
    spec = get_spec(name)
    cfg = resolve_config(name, config)
    return spec.model(in_dim, out_dim, cfg, task=task, backend=backend, cache=cache)


__all__ = [
    "DEFAULT_CONFIG",
    "GAT",
    "GCN",
    "GIN",
    "GNNML1",
    "GNNML3",
    "MLP",
    "MODELS",
    "PPGN",
    "PPGNConfig",
    "ChebNet",
    "GraphModel",
    "ModelConfig",
    "ModelSpec",
    "build_model",
    "get_spec",
    "model_names",
    "replace_fields",
    "resolve_config",
]
