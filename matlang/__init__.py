"""matlang: MATLANG sentences → typed ASTs, exact values, WL levels and GNN layers.

>>> import matlang
>>> e = matlang.parse("tr(A^3) / 6")
>>> matlang.evaluate(e, "K4")
4

This module is the front door: its names load their modules on first use (PEP 562), so
``import matlang`` and the light commands (``matlang wl``) do not pay for sympy, and
``matlang.compile`` is the only name that imports torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__version__ = "0.1.0"

if TYPE_CHECKING:
    from matlang.analysis import Analysis
    from matlang.ast import Expr, Program, Sentence
    from matlang.drawing import draw
    from matlang.errors import MatlangError
    from matlang.parser import parse, parse_program
    from matlang.printer import to_latex, to_text

#: The submodules a user reaches from here (each loads on first use).
_SUBMODULES = ["nn", "transforms", "data", "models", "errors", "graphs"]

#: Public name → the module that defines it.
_LAZY = {
    "Analysis": "matlang.analysis",
    "Expr": "matlang.ast",
    "Program": "matlang.ast",
    "Sentence": "matlang.ast",
    "MatlangError": "matlang.errors",
    "parse": "matlang.parser",
    "parse_program": "matlang.parser",
    "to_latex": "matlang.printer",
    "to_text": "matlang.printer",
    "draw": "matlang.drawing",
}


def _lazy_getattr(
    module: str, table: dict[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A PEP 562 ``__getattr__`` for ``module``: a name of ``table`` (name → defining module)
    is imported on first use and kept in ``namespace``; matlang, matlang.nn and
    matlang.transforms are front doors built this way."""

    def __getattr__(name: str) -> Any:
        if name in table:
            value = getattr(import_module(table[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def _front_door(module: str, table: dict[str, str], namespace: dict[str, Any]) -> None:
    """Make ``module`` (matlang.nn, matlang.data, …) a lazy front door: its ``__getattr__``
    imports a name of ``table`` on first use, ``__all__`` and ``__dir__`` list exactly those."""
    namespace["__getattr__"] = _lazy_getattr(module, table, namespace)
    namespace["__all__"] = list(table)
    namespace["__dir__"] = lambda: sorted(table)


_lazy_names = _lazy_getattr(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:  # matlang.nn etc. without an import statement, as numpy.linalg
        return import_module(f"{__name__}.{name}")
    return _lazy_names(name)


#: Above this many nodes, a graph given in a sparse form is evaluated on GraphBLAS.
DENSE_LIMIT = 4096


def evaluate(expr: Expr | str, graph: Any, *, sparse: bool | None = None, **kwargs: Any) -> Any:
    """The exact value of a sentence on a graph or a list of graphs (see
    :func:`matlang.evaluator.evaluate`).

    ``sparse=True`` computes it on GraphBLAS
    (:func:`matlang.compiler.exact.evaluate_sparse`): the
    same exact integers and Fractions for sentences without node inputs, on graphs too large
    for a dense n×n matrix (a matrix value comes back as a scipy CSR array). ``None`` (default)
    chooses GraphBLAS for a scipy sparse adjacency, a PyG ``Data``/``Batch`` or a
    ``matlang.runtime.batch.Batch`` of more than :data:`DENSE_LIMIT` nodes."""
    if sparse is None:
        sparse = _large_sparse(graph)
    if sparse:
        if kwargs.get("inputs") or kwargs.get("exact", True) is False:
            from matlang.errors import MatlangError

            raise MatlangError(
                "the sparse evaluator computes exact values of sentences without inputs; "
                "pass sparse=False for inputs or exact=False"
            )
        from matlang.compiler.exact import evaluate_sparse

        return evaluate_sparse(expr, graph)
    from matlang.evaluator import evaluate as _evaluate

    return _evaluate(expr, graph, **kwargs)


def _large_sparse(graph: Any) -> bool:
    """A graph in a sparse form (scipy sparse, an edge_index) with many nodes; for a list of
    graphs, any of them (the sparse path takes the whole list)."""
    if isinstance(graph, (list, tuple)):
        return any(_large_sparse(g) for g in graph)
    if hasattr(graph, "tocoo") and hasattr(graph, "shape"):
        return int(graph.shape[0]) > DENSE_LIMIT
    if hasattr(graph, "edge_index"):
        n = getattr(graph, "num_nodes", None)
        return n is not None and int(n) > DENSE_LIMIT
    return False


def classify(sentence: Expr | str, *, witness: bool = True, datasets: bool = False) -> Analysis:
    """Which fragment (L1/L2/L3) and WL level a sentence needs, why, and a witness pair (see
    :func:`matlang.analysis.classify`). ``datasets`` also searches the data folder's pairs
    (graph8c, EXP, sr25; :func:`matlang.runtime.datasets.witness_classes`)."""
    from matlang.analysis import classify as _classify

    library = None
    if witness and datasets:
        from matlang.runtime.datasets import witness_classes
        from matlang.witness import WitnessLibrary

        library = WitnessLibrary.default(witness_classes())
    return _classify(sentence, witness=witness, library=library)


def pattern(
    pattern: Any, *, rooted: bool = False, witness: bool = True, datasets: bool = False
) -> Any:
    """The exact subgraph-count sentence of a small pattern (a built-in name, an edge list,
    graph6 or a graph), its fragment and the WL level counting it needs, with a witness (see
    :func:`matlang.patterns.pattern`; returns a :class:`matlang.patterns.PatternResult`).
    ``datasets`` also searches the data folder's pairs (sr25 for certificates; graph8c, EXP)."""
    from matlang.patterns import pattern as _pattern

    extra: tuple[Any, ...] = ()
    if witness and datasets:
        from matlang.runtime.datasets import witness_classes

        extra = witness_classes()
    return _pattern(pattern, rooted=rooted, witness=witness, extra=extra)


#: Where :func:`count` counts a treewidth ≤ 2 pattern on a torch batch (``constants``).
_COUNT_CONSTANTS = ("auto", "torch", "host")


def count(
    pattern: Any,
    graphs: Any,
    *,
    per: str = "graph",
    induced: bool = False,
    constants: str = "auto",
) -> list[int] | list[list[int]]:
    """Exact counts of the subgraphs of each graph isomorphic to a small connected pattern (a
    built-in name, an edge list, graph6 or a graph; at most 8 nodes): ``per="graph"`` one int
    per graph, ``"node"`` / ``"edge"`` the copies through each node / each edge_index entry (see
    :func:`matlang.runtime.subgraph_counts.count`). Sparse: no n × n table is formed.

    ``constants``: where a pattern whose spasm has treewidth ≤ 2 is counted per graph or node:
    ``"auto"`` (default) on the device of a torch batch that is not on the CPU (its counting
    sentence on the torch constant stage, :mod:`matlang.compiler.device_counts`), else on the
    host; ``"torch"`` on the torch stage wherever the graphs are; ``"host"`` always on the host.
    Other patterns, per-edge and induced counts run on the host."""
    from matlang.runtime.subgraph_counts import count as _count

    if constants not in _COUNT_CONSTANTS:
        from matlang.errors import MatlangError

        raise MatlangError(
            f"constants must be one of {', '.join(map(repr, _COUNT_CONSTANTS))}, got {constants!r}"
        )
    if constants != "host" and not induced and per in ("graph", "node"):
        # a torch batch's device, read without importing torch (plain graphs have none)
        device = getattr(getattr(graphs, "edge_index", None), "device", None)
        if constants == "torch" or getattr(device, "type", "cpu") != "cpu":
            from matlang.compiler.device_counts import count_on_torch

            done = count_on_torch(pattern, graphs, per)
            if done is not None:
                return done  # type: ignore[no-any-return]
    return _count(pattern, graphs, per=per, induced=induced)


if TYPE_CHECKING:
    from matlang.compiler.api import compile
else:

    def compile(  # noqa: A001 - the name the design asks for
        source,
        *,
        dtype="float32",
        backend=None,
        dense=False,
        trainable_functions=False,
        weights="literals",
        nonfinite="error",
        validate=True,
        cache=True,
        constants="auto",
    ):
        """A sentence (or several) as a trainable ``torch.nn.Module`` on batches of sparse
        graphs (see :func:`matlang.compiler.api.compile` for the arguments; its signature,
        which this one repeats for ``help()``, is what type checkers see; torch is imported
        here, not with ``import matlang``)."""
        from matlang.compiler.api import compile as _compile

        return _compile(
            source,
            dtype=dtype,
            backend=backend,
            dense=dense,
            trainable_functions=trainable_functions,
            weights=weights,
            nonfinite=nonfinite,
            validate=validate,
            cache=cache,
            constants=constants,
        )


def __dir__() -> list[str]:
    return sorted({*__all__, *_SUBMODULES, "__version__"})


__all__ = [
    "Expr",
    "Program",
    "Sentence",
    "MatlangError",
    "parse",
    "parse_program",
    "to_text",
    "to_latex",
    "evaluate",
    "compile",
    "classify",
    "pattern",
    "count",
    "Analysis",
    "draw",
]
