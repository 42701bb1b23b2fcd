"""``matlang.count`` on a torch batch's device: a pattern whose spasm has treewidth ≤ 2 is
counted by its counting sentence (``matlang.pattern(P).sentence``, per node its rooted
sentence) compiled onto the torch constant stage (:mod:`compiler.torch_constants`), where the
batch lives: a batch on a GPU never goes to the host but for the counts themselves.

The homomorphism counts of the sentence are int64 on that stage; the sentence's combination of
them (``(H1 − 5 H2 + 5 H3) / 10`` for C5) runs in float64, so the path is taken only where a
bound on every term keeps it below 2⁵³ (``|c| · n · Δ^(k−1)`` summed over the spasm's terms,
``Δ`` the largest degree, ``k`` the pattern's nodes), and the values are checked to be integers.
Patterns with a treewidth-3 spasm (K4, W4, C8…), sentences past the compiler's size limit
(``MAX_COMPILED_SIZE``: some 6-node patterns' spasms), per-edge and induced counts go to the host
path (:func:`matlang.runtime.subgraph_counts.count`).
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm
from typing import Any

from matlang.functions import FLOAT_EXACT

#: float64's exact integers: the torch path's bound.
EXACT = FLOAT_EXACT


def device_of(graphs: Any) -> Any:
    """The torch device of a PyG ``Data``/``Batch`` or a :class:`runtime.batch.Batch` (its
    ``edge_index``), else ``None``."""
    ei = getattr(graphs, "edge_index", None)
    return getattr(ei, "device", None) if ei is not None and hasattr(ei, "dim") else None


def counting_sentence(pattern: Any, per: str) -> str | None:
    """The pattern's counting sentence (per node: rooted), ``None`` past treewidth 2."""
    from matlang.patterns import pattern as analyse

    return analyse(pattern, rooted=per == "node", witness=False).sentence


def count_on_torch(pattern: Any, graphs: Any, per: str) -> Any:
    """Exact counts (as :func:`matlang.count` returns them) computed on the torch constant
    stage on ``graphs``' device; ``None`` where this path does not apply (a treewidth-3 spasm,
    a sentence past the compiler's size limit, per edge, or the float64 bound): the caller
    counts on the host then."""
    import torch

    from matlang.compiler.api import compile
    from matlang.compiler.lower import LoweringError
    from matlang.graphs import is_one_graph
    from matlang.runtime.batch import as_batch
    from matlang.runtime.subgraph_counts import read_count_pattern, terms

    if per not in ("graph", "node"):
        return None
    p, _ = read_count_pattern(pattern)
    sentence = counting_sentence(pattern, per)
    if sentence is None:
        return None
    single = is_one_graph(graphs)
    batch = as_batch(graphs)
    n = batch.ptr[1:] - batch.ptr[:-1]
    n_max = int(n.max()) if n.numel() else 0
    deg = torch.bincount(batch.edge_index[0], minlength=batch.num_nodes)
    top = int(deg.max()) if deg.numel() else 0
    coefficients: list[Fraction] = [t.coefficient for t in terms(p, per)]
    scale = lcm(*(c.denominator for c in coefficients)) * sum(abs(c) for c in coefficients)
    if scale * max(n_max, 1) * max(top, 1) ** (p.n - 1) >= EXACT:
        return None
    try:
        module = compile(sentence, dtype=torch.float64, constants="torch", cache=False)
    except LoweringError:  # past the compiler's size limit (MAX_COMPILED_SIZE): the host's
        return None
    with torch.no_grad():
        values = module(batch).reshape(-1)
    rounded = torch.round(values)
    if not bool((values - rounded).abs().le(1e-6).all()):  # pragma: no cover - a stage bug
        raise AssertionError(f"the counting sentence of {pattern!r} gave non-integers")
    counts = [int(v) for v in rounded.to(torch.int64).cpu().tolist()]
    if per == "graph":
        return counts
    ptr = [int(v) for v in batch.ptr.cpu().tolist()]
    out = [counts[lo:hi] for lo, hi in zip(ptr[:-1], ptr[1:], strict=True)]
    return out[0] if single else out


__all__ = ["EXACT", "count_on_torch", "counting_sentence", "device_of"]
