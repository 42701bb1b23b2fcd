"""Exact subgraph counts of a small pattern: per graph, per node, per edge (``matlang.count``).

::

    sub(P, G) = Σ_Q c_Q · hom(Q, G)        over the spasm of P (matlang.spasm)

with every homomorphism count computed sparsely (:mod:`matlang.runtime.homcount`: variable
elimination along a tree decomposition of Q, vector and sparse-matrix products, an enumeration of
the treewidth ≥ 3 core), never as an n × n table. Per node, the rooted spasm (copies of P through
node v: Σ_r inj(P, G; r ↦ v) / |Aut P|); per edge, the spasm with the two ends of a pattern edge
as roots (each copy through the edge {u, v} is counted once for each of the 2|Aut P| injective maps
that send an edge of P onto it). ``induced=True``: Möbius inversion over the supergraphs of P on
its own nodes, ind(P) = Σ_{F ⊇ E(P)} (−1)^{|F|−|E(P)|} inj(F) / |Aut P|.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import combinations
from math import lcm
from typing import Any

import numpy as np

from matlang.errors import GraphError
from matlang.spasm import (
    PatternError,
    SmallGraph,
    _code,
    _leaves,
    automorphisms,
    canonical,
    independent_partitions,
    mobius,
    quotient,
    rooted_spasm,
    spasm,
)

#: The largest pattern ``count`` takes.
MAX_COUNT_NODES = 8

#: ``induced=True`` sums over the supergraphs of P on its nodes: at most 2 to this power.
MAX_INDUCED_NON_EDGES = 14

PER = ("graph", "node", "edge")

#: Copies are listed (not counted through the spasm) when the listing's estimated partial rows
#: are at most this many: small graphs, where a few vectorised steps beat the spasm's hundreds
#: of sparse products, and cliques (listed once each, in degree order).
LIST_ROWS = 5e6


@dataclass(frozen=True)
class Term:
    """One homomorphism count of a spasm: coefficient, quotient and its roots."""

    coefficient: Fraction
    graph: SmallGraph
    roots: tuple[int, ...]


# --------------------------------------------------------------------------- the spasms


def _canonical_rooted(g: SmallGraph, roots: tuple[int, ...]) -> tuple[Any, ...]:
    start = [0] * g.n
    for i, r in enumerate(roots, 1):
        start[r] = i
    return g.n, roots.__len__(), min(_code(g, c) for c in _leaves(g, start))


def _best_root(q: SmallGraph) -> int:
    return max(range(q.n), key=lambda v: (len(q.neighbours[v]), -v))


@lru_cache(maxsize=256)
def _automorphisms(p: SmallGraph) -> int:
    return automorphisms(p)


@lru_cache(maxsize=256)
def terms(p: SmallGraph, per: str) -> tuple[Term, ...]:
    """The spasm of P for ``per``: graph (one root, any node: the vector is summed), node (the
    rooted spasm) or edge (two adjacent roots)."""
    if per == "graph":
        return tuple(Term(q.coefficient, q.graph, (_best_root(q.graph),)) for q in spasm(p))
    if per == "node":
        return tuple(Term(q.coefficient, q.graph, (q.root or 0,)) for q in rooted_spasm(p))
    aut = automorphisms(p)
    groups: dict[Any, list[Any]] = {}
    parts = list(independent_partitions(p))
    for u, v in sorted(p.edges):
        for a, b in ((u, v), (v, u)):
            for blocks in parts:
                q, where = quotient(p, blocks)
                roots = (where[a], where[b])
                key = _canonical_rooted(q, roots)
                entry = groups.get(key)
                if entry is None:
                    groups[key] = [q, roots, mobius(blocks)]
                else:
                    entry[2] += mobius(blocks)
    out = [Term(Fraction(c, aut), q, r) for q, r, c in groups.values() if c != 0]
    out.sort(key=lambda t: (-t.graph.n, -len(t.graph.edges)))
    return tuple(out)


@lru_cache(maxsize=64)
def induced_terms(p: SmallGraph) -> tuple[tuple[Fraction, SmallGraph], ...]:
    """ind(P) = Σ c_H sub(H) over the supergraphs H of P on its nodes, up to isomorphism:
    c_H = (−1)^{e(H)−e(P)} · #{F ⊇ E(P): F ≅ H} · |Aut H| / |Aut P|."""
    missing = [(i, j) for i in range(p.n) for j in range(i + 1, p.n) if (i, j) not in p.edges]
    if len(missing) > MAX_INDUCED_NON_EDGES:
        raise PatternError(
            f"induced=True sums over the 2^{len(missing)} supergraphs of the pattern on its "
            f"{p.n} nodes; count takes at most 2^{MAX_INDUCED_NON_EDGES} (patterns with at most "
            f"{MAX_INDUCED_NON_EDGES} non-edges)"
        )
    aut = automorphisms(p)
    classes: dict[Any, list[Any]] = {}
    for k in range(len(missing) + 1):
        for extra in combinations(missing, k):
            h = SmallGraph(p.n, p.edges | frozenset(extra))
            key = canonical(h)
            entry = classes.get(key)
            if entry is None:
                classes[key] = [h, (-1) ** k, 1]
            else:
                entry[2] += 1
    return tuple(
        (Fraction(sign * times * automorphisms(h), aut), h) for h, sign, times in classes.values()
    )


# --------------------------------------------------------------------------- the graphs


@dataclass
class Graphs:
    """Graphs as one block-diagonal host: node offsets ``ptr`` and, per graph, the positions of
    its edge_index entries among the host's CSR entries."""

    host: Any
    ptr: np.ndarray
    edge_pos: list[np.ndarray]
    single: bool


def _edges_of(obj: Any) -> tuple[int, np.ndarray]:
    """(n, (2, E) edge_index in the order the user sees it) for one graph."""
    from matlang.graphs import _numpy, as_graph, is_pyg_like

    if is_pyg_like(obj):
        from matlang.graphs import pyg_layout

        n, _ = pyg_layout(obj)
        return n, _numpy(obj.edge_index).astype(np.int64).reshape(2, -1)
    if hasattr(obj, "tocoo") and hasattr(obj, "shape"):
        c = obj.tocoo()
        ei = np.stack([np.asarray(c.row), np.asarray(c.col)]).astype(np.int64)
        ei = ei[:, np.asarray(c.data) != 0]
        order = np.lexsort((ei[1], ei[0]))
        return int(obj.shape[0]), ei[:, order]
    if type(obj).__module__.startswith("networkx") and hasattr(obj, "nodes"):
        nodes = list(obj.nodes())
        index = {v: i for i, v in enumerate(nodes)}
        pairs = [(index[u], index[v]) for u, v in obj.edges()]
        arr = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        ei = np.concatenate([arr, arr[:, ::-1]]).T
        order = np.lexsort((ei[1], ei[0]))
        return len(nodes), ei[:, order]
    g = as_graph(obj, allow_weights=True)
    return g.num_nodes, g.edge_index


def _check_simple(n: int, ei: np.ndarray, where: str) -> None:
    if ei.size and (int(ei.min()) < 0 or int(ei.max()) >= n):
        raise GraphError(f"edge_index names a node outside 0..{n - 1}", where)
    loops = ei[0] == ei[1]
    if loops.any():
        k = int(ei[0, np.flatnonzero(loops)[0]])
        raise GraphError(f"node {k} has a self-loop; count reads simple undirected graphs", where)
    fwd = ei[0] * n + ei[1]
    back = np.sort(ei[1] * n + ei[0])
    at = np.minimum(np.searchsorted(back, fwd), max(back.size - 1, 0))
    missing = back[at] != fwd if back.size else np.zeros(0, dtype=bool)
    # fwd is in ei's column order; (u, v) is missing its (v, u) where its key is absent from back
    if missing.any():
        k = int(np.flatnonzero(missing)[0])
        raise GraphError(
            f"edge ({ei[0, k]}, {ei[1, k]}) is stored without ({ei[1, k]}, {ei[0, k]}): count "
            "reads undirected graphs, both directions in edge_index (torch_geometric.utils."
            "to_undirected)",
            where,
        )


def read_graphs(graphs: Any) -> Graphs:
    """Graphs (one or several, any form :func:`matlang.graphs.as_graphs` reads, a PyG
    ``Data``/``Batch``, scipy sparse, networkx) as one sparse host."""
    from matlang.graphs import _attr, _numpy, is_one_graph, is_pyg_like, pyg_layout
    from matlang.runtime.homcount import Host

    single = is_one_graph(graphs)
    pieces: list[tuple[int, np.ndarray]] = []
    if is_pyg_like(graphs):
        n, ptr = pyg_layout(graphs)
        ei = _numpy(graphs.edge_index).astype(np.int64).reshape(2, -1)
        if ptr is None:
            ptr = np.array([0, n], dtype=np.int64)
        _check_simple(n, ei, _attr(graphs, "name") or "graph")
        gid = np.searchsorted(ptr, ei[0], side="right") - 1
        if ei.size and (gid != np.searchsorted(ptr, ei[1], side="right") - 1).any():
            raise GraphError("an edge joins two graphs of the batch", "batch")
        host = Host(n, ei[0], ei[1])
        keys = ei[0] * n + ei[1]
        akeys = host.lookup_a()
        pos = np.searchsorted(akeys, keys)
        edge_pos = [pos[gid == g] for g in range(ptr.size - 1)]
        return Graphs(host, ptr.astype(np.int64), edge_pos, single)
    if single:
        pieces.append(_edges_of(graphs))
    else:
        if isinstance(graphs, (str, bytes)) or hasattr(graphs, "__fspath__"):
            from matlang.graphs import as_graphs

            graphs = as_graphs(graphs)
        pieces.extend(_edges_of(g) for g in graphs)
    sizes = [n for n, _ in pieces]
    ptr = np.zeros(len(pieces) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(sizes)
    for i, (n, ei) in enumerate(pieces):
        _check_simple(n, ei, f"graph #{i}" if not single else "graph")
    cat = (
        np.concatenate([ei + off for (_, ei), off in zip(pieces, ptr[:-1])], axis=1)
        if pieces
        else np.zeros((2, 0), dtype=np.int64)
    )
    total = int(ptr[-1])
    host = Host(total, cat[0], cat[1])
    akeys = host.lookup_a()
    pos = np.searchsorted(akeys, cat[0] * total + cat[1])
    bounds = np.cumsum([0] + [ei.shape[1] for _, ei in pieces])
    edge_pos = [pos[bounds[i] : bounds[i + 1]] for i in range(len(pieces))]
    return Graphs(host, ptr, edge_pos, single)


# --------------------------------------------------------------------------- counting


def read_count_pattern(pattern: Any) -> tuple[SmallGraph, str]:
    """The pattern (as :func:`matlang.pattern` reads it), checked for what count takes."""
    from matlang.patterns import read_pattern

    p, name = read_pattern(pattern)
    if p.n > MAX_COUNT_NODES:
        raise PatternError(
            f"pattern {name!r} has {p.n} nodes; count takes patterns of at most "
            f"{MAX_COUNT_NODES} nodes"
        )
    if not p.edges:
        raise PatternError(f"pattern {name!r} has no edges")
    if len(p.components()) > 1:
        raise PatternError(
            f"pattern {name!r} is disconnected ({len(p.components())} components); count takes "
            "connected patterns (a disconnected count is a polynomial in its components' counts)"
        )
    return p, name


def _combine(host: Any, weighted: Sequence[tuple[Fraction, np.ndarray]], bound: float) -> Any:
    """Σ c · v exactly: int64 where the bound allows, Python ints otherwise; an int64 array."""
    denom = lcm(*(c.denominator for c, _ in weighted)) if weighted else 1
    ints = [(int(c * denom), v) for c, v in weighted]
    scale = sum(abs(k) for k, _ in ints) * bound
    size = weighted[0][1].size if weighted else 0
    if scale < 2**62:
        total = np.zeros(size, dtype=np.int64)
        for k, v in ints:
            total += k * v
    else:
        total = np.zeros(size, dtype=object)
        for k, v in ints:
            total += k * v.astype(object)
    if denom != 1:
        if (total % denom != 0).any():  # pragma: no cover - a spasm bug
            raise AssertionError("the spasm combination is not an integer")
        total //= denom
    return total


def _hom(host: Any, t: Term) -> np.ndarray:
    from matlang.runtime.homcount import check_bound, hom_rooted

    check_bound(host, t.graph)
    return hom_rooted(host, t.graph, t.roots)


def sub_arrays(p: SmallGraph, gs: Graphs, per: str) -> np.ndarray:
    """Non-induced counts as one array: per graph (G,), per node (N,), per edge (host CSR
    entries)."""
    from matlang.runtime.homcount import hom_bound

    ts = terms(p, per)
    vecs = [(t.coefficient, _hom(gs.host, t)) for t in ts]
    bound = hom_bound(gs.host, p)
    if per == "graph":
        segs = []
        for c, v in vecs:
            cs = np.concatenate([[0], np.cumsum(v)])
            segs.append((c, cs[gs.ptr[1:]] - cs[gs.ptr[:-1]]))
        return _combine(gs.host, segs, bound)
    return _combine(gs.host, vecs, bound)


def method(p: SmallGraph, gs: Graphs) -> str:
    """ "list" (list the copies) or "spasm" (count homomorphisms), whichever is cheaper."""
    from matlang.runtime.homcount import listing_rows

    clique = len(p.edges) == p.n * (p.n - 1) // 2
    if (clique and p.n >= 4) or listing_rows(gs.host, p) <= LIST_ROWS:
        return "list"
    return "spasm"


def listed_arrays(p: SmallGraph, gs: Graphs, per: str, induced: bool) -> np.ndarray:
    """Counts by listing the copies (:func:`matlang.runtime.homcount.list_copies`)."""
    from matlang.runtime.homcount import check_bound, list_copies

    host = gs.host
    check_bound(host, p)
    clique = len(p.edges) == p.n * (p.n - 1) // 2
    aut = 1 if clique else _automorphisms(p)
    n = host.n
    akeys = host.lookup_a()
    acc = np.zeros(akeys.size if per == "edge" else n, dtype=np.int64)
    for rows in list_copies(host, p, induced=induced):
        if per == "graph":
            acc += np.bincount(rows[:, 0], minlength=n)
        elif per == "node":
            for j in range(p.n):
                acc += np.bincount(rows[:, j], minlength=n)
        else:
            for a, b in p.edges:
                for u, v in ((rows[:, a], rows[:, b]), (rows[:, b], rows[:, a])):
                    acc += np.bincount(np.searchsorted(akeys, u * n + v), minlength=acc.size)
    if per == "graph":
        cs = np.concatenate([[0], np.cumsum(acc)])
        acc = cs[gs.ptr[1:]] - cs[gs.ptr[:-1]]
    if aut != 1:
        if (acc % aut != 0).any():  # pragma: no cover - a listing bug
            raise AssertionError("listed copies are not a multiple of |Aut|")
        acc //= aut
    return acc


def count_arrays(
    p: SmallGraph, gs: Graphs, per: str, induced: bool = False, how: str | None = None
) -> np.ndarray:
    """Counts as one array (see :func:`sub_arrays`); ``how``: "list", "spasm" or None (the
    cheaper, :func:`method`)."""
    if per not in PER:
        raise PatternError(f"per must be one of {', '.join(PER)}, got {per!r}")
    how = how or method(p, gs)
    if how == "list":
        return listed_arrays(p, gs, per, induced)
    if not induced:
        return sub_arrays(p, gs, per)
    if per == "edge":
        raise PatternError(
            "induced=True counts per graph or per node; per edge it is not supported (an induced "
            "copy holds every edge between its nodes, which the supergraph sum does not track)"
        )
    parts = [(c, sub_arrays(h, gs, per)) for c, h in induced_terms(p)]
    from matlang.runtime.homcount import hom_bound

    return _combine(gs.host, parts, hom_bound(gs.host, p))


def count(
    pattern: Any, graphs: Any, *, per: str = "graph", induced: bool = False
) -> list[int] | list[list[int]]:
    """Exact counts of the subgraphs of each graph isomorphic to ``pattern``.

    ``pattern``: a built-in name (``C5``, ``K4``, ``house``…), an edge list, graph6 or a graph,
    as :func:`matlang.pattern` reads it; connected, at most 8 nodes. ``graphs``: one graph or
    several (a list, a PyG ``Batch``, a ``.g6`` file), in any form matlang reads, plus scipy
    sparse adjacencies and networkx graphs; simple and undirected.

    ``per="graph"``: a list with one count per graph. ``per="node"``: for each node the number
    of copies containing it (a list for one graph, a list of lists for several). ``per="edge"``:
    the same for each entry of ``edge_index``, in its order (both directions of an edge get the
    same count). ``induced=True``: induced copies (per graph and per node).
    """
    p, _ = read_count_pattern(pattern)
    if per not in PER:
        raise PatternError(f"per must be one of {', '.join(PER)}, got {per!r}")
    gs = read_graphs(graphs)
    try:
        values = count_arrays(p, gs, per, induced)
    finally:
        gs.host.clear()
    return split(values, gs, per)


def split(values: np.ndarray, gs: Graphs, per: str) -> Any:
    """The array of :func:`count_arrays` as lists, per graph (one list), node or edge (a list
    per graph, or one list for a single graph)."""
    if per == "graph":
        return [int(v) for v in values]
    if per == "node":
        out = [[int(v) for v in values[lo:hi]] for lo, hi in zip(gs.ptr[:-1], gs.ptr[1:])]
    else:
        out = [[int(v) for v in values[pos]] for pos in gs.edge_pos]
    return out[0] if gs.single else out


__all__ = [
    "MAX_COUNT_NODES",
    "Term",
    "count",
    "count_arrays",
    "induced_terms",
    "read_count_pattern",
    "read_graphs",
    "split",
    "terms",
]
