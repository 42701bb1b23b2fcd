"""Reference models (MLP, GCN, GAT, GIN, ChebNet, PPGN, GNNML1, GNNML3) and their registry.

``build_model(name, in_dim, out_dim, config=..., task=...)`` builds one; ``config`` is a named
configuration, a mapping of fields overriding the default configuration, or a config object.
The library names one configuration per model, ``"default"`` (4 layers, sum readout and two
linear layers, around 30K parameters; GNNML3 on the normalised Laplacian's 5 bands). Other
configurations are registered by name through :func:`register_config`; the experiments
(``pip install -e benchmarks``: the paper's ``iso``, ``count``, ``spectral``, ``brec`` and
``brec-xavier``) do so through the ``matlang.model_configs`` entry point group, loaded the first
time a name is not found here.
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
from matlang.runtime.preprocess import PreprocessCache

#: The name of each model's one configuration in the library, used when none is given.
DEFAULT_CONFIG = "default"

#: Entry point group of distributions that name configurations: each entry point is a function
#: of no arguments that calls :func:`register_config`.
CONFIG_GROUP = "matlang.model_configs"


@dataclass(frozen=True)
class ModelSpec:
    """A model class, its configuration class, its named configurations (:data:`DEFAULT_CONFIG`
    and those :func:`register_config` added) and the one used when none is given."""

    name: str
    model: type[GraphModel]
    summary: str
    configs: dict[str, ModelConfig] = field(default_factory=dict)
    default: str = DEFAULT_CONFIG

    @property
    def config_class(self) -> type[ModelConfig]:
        return self.model.config_class


def _default(cls: type[ModelConfig], **kw: Any) -> dict[str, ModelConfig]:
    """4 layers, sum readout, two linear layers (one hidden of 32): the paper's counting
    architecture, ~30K parameters at the widths below."""
    return {DEFAULT_CONFIG: cls(layers=4, readout=("sum",), head=(32,), **kw)}


#: Every reference model, by name.
MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            "mlp", MLP, "graph-agnostic MLP on node features", _default(ModelConfig, hidden=94)
        ),
        ModelSpec(
            "gcn",
            GCN,
            "GCN, C = (D+I)^-1/2 (A+I) (D+I)^-1/2",
            _default(ModelConfig, hidden=94),
        ),
        ModelSpec(
            "gat",
            GAT,
            "GAT, attention supports, heads concatenated",
            _default(GATConfig, hidden=92, heads=4),
        ),
        ModelSpec(
            "gin", GIN, "GIN-eps, C = A + (1+eps) I then an MLP", _default(GINConfig, hidden=62)
        ),
        ModelSpec(
            "chebnet",
            ChebNet,
            "ChebNet, K Chebyshev supports, per-graph lambda_max",
            _default(ChebNetConfig, hidden=44, K=5),
        ),
        ModelSpec(
            "ppgn",
            PPGN,
            "PPGN (3-WL), dense n x n, padded batches",
            _default(PPGNConfig, hidden=38),
        ),
        ModelSpec(
            "gnnml1",
            GNNML1,
            "GNNML1 (Eq. 3), as powerful as 1-WL",
            _default(ModelConfig, hidden=48),
        ),
        ModelSpec(
            "gnnml3",
            GNNML3,
            "GNNML3 (Eq. 6-8), spectral supports on the configuration's basis (the adjacency "
            "or the normalised Laplacian)",
            # the paper's default supports ("the normalised Laplacian for all problems, except
            # Zinc12K and substructure counting", 5 bands, b = 5): SupportConfig(). The
            # adjacency spectrum is 4x as wide, so its bands need a far higher Chebyshev order
            # for the same error, and the probing work grows with the cube of the order. Width
            # 23: ~29K parameters like the others (6 supports)
            _default(GNNML3Config, hidden=23, product_channels=23),
        ),
    )
}


def register_config(model: str, name: str, config: ModelConfig) -> None:
    """Name ``config`` for ``model``: ``build_model(model, ..., config=name)`` then builds it.

    Registering the same configuration again under its name does nothing; another one under a
    name already taken is an error, as is a config object of another model's class."""
    spec = get_spec(model)
    if not isinstance(config, spec.config_class):
        raise MatlangError(
            f"model {spec.name!r} needs a {spec.config_class.__name__}, got {type(config).__name__}"
        )
    old = spec.configs.get(name)
    if old is not None and old != config:
        raise MatlangError(f"model {spec.name!r} has another configuration named {name!r}")
    spec.configs.setdefault(name, config)


_plugins_loaded = False


def load_named_configs() -> None:
    """Run the ``matlang.model_configs`` entry points once (the experiments' configurations),
    so that :data:`MODELS` lists every installed named configuration."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=CONFIG_GROUP):
        try:
            register = ep.load()
        except ImportError:  # a plugin installed whose code is gone: its names stay unknown
            continue
        register()


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

    ``None``: the model's default configuration (:attr:`ModelSpec.default`); a string: a named
    configuration (the library's ``"default"`` or one :func:`register_config` added); a
    mapping: fields replaced in the default configuration; a config object: itself.
    """
    spec = get_spec(name)
    if config is None:
        return spec.configs[spec.default]
    if isinstance(config, str):
        if config not in spec.configs:
            load_named_configs()
        if config not in spec.configs:
            hint = (
                " (the paper's iso, count, spectral, brec and brec-xavier come with the "
                "experiments: pip install -e benchmarks)"
                if len(spec.configs) == 1
                else ""
            )
            raise MatlangError(
                f"model {spec.name!r} has no configuration {config!r}; "
                f"known: {', '.join(spec.configs)}{hint}"
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
    "CONFIG_GROUP",
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
    "load_named_configs",
    "model_names",
    "register_config",
    "replace_fields",
    "resolve_config",
]
