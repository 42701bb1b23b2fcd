"""Graphs: one immutable type, built from every format a user is likely to hold.

A :class:`Graph` is an adjacency matrix with a name. By default it must be simple and
undirected (symmetric 0/1, no self-loops); ``allow_weights``, ``allow_self_loops`` and
``allow_directed`` relax that knowingly. Built-in named graphs need no data folder.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from matlang import limits
from matlang.errors import GraphError
from matlang.inputs import check_edge_index, check_num_nodes, check_x
from matlang.pyg_rule import _numpy, check_edge_weight, edge_weights, pyg_layout
from matlang.pyg_rule import attr as _attr

#: How a weighted, looped or directed graph gets in, named where a check fails (evaluate and
#: compile take graphs, not these options: as_graph makes the graph that carries them).
WEIGHTED_HINT = (
    "a weighted graph: matlang.graphs.as_graph(g, allow_weights=True), or a PyG edge_weight"
)
LOOPS_HINT = "to keep self-loops: matlang.graphs.as_graph(g, allow_self_loops=True)"
DIRECTED_HINT = "a directed graph: matlang.graphs.as_graph(g, allow_directed=True)"


@dataclass(frozen=True, eq=False)
class Graph:
    """An adjacency matrix ``adjacency`` (n×n numpy array) with an optional name and features."""

    adjacency: np.ndarray
    name: str | None = None
    x: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # what is derived from the adjacency is cached on the graph (below): it is read-only
        # here too, not only through as_graph (a read-only view of the array given, no copy)
        a = self.adjacency
        if isinstance(a, np.ndarray) and a.flags.writeable:
            view = a.view()
            view.setflags(write=False)
            object.__setattr__(self, "adjacency", view)

    @property
    def num_nodes(self) -> int:
        return int(self.adjacency.shape[0])

    @property
    def num_edges(self) -> int:
        """Undirected edges of a symmetric graph (directed entries / 2, self-loops once)."""
        nz = np.count_nonzero(self.adjacency)
        loops = np.count_nonzero(np.diag(self.adjacency))
        return int((nz - loops) // 2 + loops)

    # The adjacency is read-only, so what is derived from it is computed once per graph (training
    # collates the same graphs into batches every epoch). The cached arrays are read-only; the
    # public properties hand out writable copies.
    @cached_property
    def _edges(self) -> tuple[np.ndarray, np.ndarray]:
        rows, cols = np.nonzero(self.adjacency)
        ei = np.stack([rows, cols]).astype(np.int64)
        w = np.asarray(self.adjacency[rows, cols])
        ei.setflags(write=False)
        w.setflags(write=False)
        return ei, w

    @property
    def edge_index(self) -> np.ndarray:
        """(2, E) int64 array of directed entries (both directions), row-major order."""
        return self._edges[0].copy()

    @property
    def edge_weight(self) -> np.ndarray:
        return self._edges[1].copy()

    @cached_property
    def is_binary(self) -> bool:
        return bool(np.isin(self.adjacency, (0, 1)).all())

    def _repr_svg_(self) -> str | None:  # notebooks: the graph drawn (None when large)
        from matlang.display import graph_svg

        return graph_svg(self)

    def _repr_html_(self) -> str:
        from matlang.display import graph_html

        return graph_html(self)

    def label(self) -> str:
        """The name if it has one, else its graph6 string (when binary and symmetric)."""
        if self.name:
            return self.name
        try:
            return to_graph6(self)
        except GraphError:
            return f"<graph n={self.num_nodes}>"

    def with_name(self, name: str | None) -> Graph:
        return Graph(self.adjacency, name, self.x)

    def __repr__(self) -> str:
        return f"Graph({self.label()!r}, n={self.num_nodes}, edges={self.num_edges})"


def _check(
    a: np.ndarray,
    name: str | None,
    allow_weights: bool,
    allow_self_loops: bool,
    allow_directed: bool,
) -> np.ndarray:
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        hint = (
            "; a (2, E) array reads as an adjacency, not an edge_index: give "
            "matlang.graphs.from_edge_index(edge_index, num_nodes) or a PyG Data"
            if a.ndim == 2 and a.shape[0] == 2
            else ""
        )
        raise GraphError(f"adjacency must be a square matrix, got shape {a.shape}{hint}", name)
    if a.dtype == bool:
        a = a.astype(np.int64)
    if not np.issubdtype(a.dtype, np.number):
        raise GraphError(f"adjacency must be numeric, got dtype {a.dtype}", name)
    if np.issubdtype(a.dtype, np.floating) and not np.isfinite(a).all():
        raise GraphError("adjacency has NaN or infinite entries", name)
    binary = bool(np.isin(a, (0, 1)).all())
    if not binary and not allow_weights:
        bad = np.argwhere(~np.isin(a, (0, 1)))[0]
        raise GraphError(
            f"adjacency must be 0/1, entry ({bad[0]}, {bad[1]}) is {a[bad[0], bad[1]].item()!r} "
            f"({WEIGHTED_HINT})",
            name,
        )
    if binary:
        a = a.astype(np.int64)
    if not allow_self_loops and np.any(np.diag(a) != 0):
        i = int(np.flatnonzero(np.diag(a))[0])
        raise GraphError(
            f"self-loop at node {i} ({LOOPS_HINT})", name
        )
    if not allow_directed and not np.array_equal(a, a.T):
        i, j = (int(v) for v in np.argwhere(a != a.T)[0])
        raise GraphError(
            f"adjacency is not symmetric: entry ({i}, {j}) is {a[i, j].item()!r} but ({j}, {i}) "
            f"is {a[j, i].item()!r} ({DIRECTED_HINT})",
            name,
        )
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def from_adjacency(
    a: Any,
    *,
    name: str | None = None,
    x: Any = None,
    allow_weights: bool = False,
    allow_self_loops: bool = False,
    allow_directed: bool = False,
) -> Graph:
    """A graph from a dense or scipy-sparse adjacency matrix (checked, copied, read-only)."""
    if hasattr(a, "toarray"):
        if len(a.shape) == 2:  # a Graph is dense: n × n entries are allocated here
            check_num_nodes(max(a.shape), name, dense=True)
        a = a.toarray()
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    arr = np.asarray(a)
    arr = _check(arr, name, allow_weights, allow_self_loops, allow_directed)
    feats = None if x is None else node_features(_numpy(x))
    if feats is not None and feats.shape[0] != arr.shape[0]:
        raise GraphError(
            f"features have {feats.shape[0]} rows but the graph has {arr.shape[0]} nodes", name
        )
    return Graph(arr, name, feats)


def sparse_pattern(a: Any, name: str | None = None) -> tuple[int, np.ndarray, np.ndarray]:
    """A scipy sparse adjacency as ``(n, rows, cols)``, its entries sorted row-major, without
    densifying it: the rule of :func:`from_adjacency` (square, 0/1: a weighted matrix is refused
    with the same error; explicit zeros are no entries, repeated entries add up as in
    ``toarray()``)."""
    shape = tuple(a.shape)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise GraphError(f"adjacency must be a square matrix, got shape {shape}", name)
    n = check_num_nodes(shape[0], name)
    csr = a.tocsr(copy=True)
    csr.sum_duplicates()
    csr.eliminate_zeros()
    data = np.asarray(csr.data)
    if data.dtype != bool and not np.issubdtype(data.dtype, np.number):
        raise GraphError(f"adjacency must be numeric, got dtype {data.dtype}", name)
    bad = np.flatnonzero(data != 1)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(csr.indptr))
    cols = np.asarray(csr.indices, dtype=np.int64)
    if bad.size:
        k = int(bad[0])
        raise GraphError(
            f"adjacency must be 0/1, entry ({rows[k]}, {cols[k]}) is {data[k].item()!r} "
            f"({WEIGHTED_HINT})",
            name,
        )
    return n, rows, cols


def node_features(x: np.ndarray) -> np.ndarray:
    """Node features as an (n, d) array: a vector is one feature per node, further axes are
    flattened (a reshape to ``(n, -1)`` is ambiguous when there are no nodes)."""
    if x.ndim == 0:
        raise GraphError(f"node features must have one row per node, got a scalar {x.item()!r}")
    return x[:, None] if x.ndim == 1 else x.reshape(x.shape[0], math.prod(x.shape[1:]))


def from_edge_index(
    edge_index: Any,
    num_nodes: int | None = None,
    *,
    edge_weight: Any = None,
    name: str | None = None,
    x: Any = None,
    allow_weights: bool = False,
    allow_self_loops: bool = False,
    allow_directed: bool = False,
) -> Graph:
    """A graph from a (2, E) edge list that stores both directions of each undirected edge."""
    if hasattr(edge_index, "detach"):
        edge_index = edge_index.detach().cpu().numpy()
    ei = np.asarray(edge_index)
    # the one check of every entry point; a Graph is dense: n is bounded by MAX_DENSE_NODES
    num_nodes = check_edge_index(ei, num_nodes, name, dense=True, noun="graph")
    ei = ei.astype(np.int64)
    if edge_weight is None:
        w = np.ones(ei.shape[1], dtype=np.int64)
    else:
        w = check_edge_weight(_numpy(edge_weight), ei.shape[1], name)
    a = np.zeros((num_nodes, num_nodes), dtype=w.dtype)
    np.add.at(a, (ei[0], ei[1]), w)
    if edge_weight is None and a.size and a.max() > 1 and not allow_weights:
        i, j = (int(v) for v in np.argwhere(a > 1)[0])
        raise GraphError(f"edge ({i}, {j}) appears {a[i, j]} times in edge_index", name)
    if not allow_directed and not np.array_equal(a, a.T):
        i, j = (int(v) for v in np.argwhere(a != a.T)[0])
        if a[j, i] == 0:
            raise GraphError(
                f"edge ({i}, {j}) has no reverse edge ({j}, {i}): store both directions of each "
                f"undirected edge (or {DIRECTED_HINT})",
                name,
            )
    return from_adjacency(
        a,
        name=name,
        x=x,
        allow_weights=allow_weights,
        allow_self_loops=allow_self_loops,
        allow_directed=allow_directed,
    )


# --------------------------------------------------------------------------- graph6

_G6_LINE = re.compile(r"^[\x3f-\x7e]+$")


def _g6_size(data: bytes, where: str) -> tuple[int, int]:
    if not data:
        raise GraphError("empty graph6 string", where)
    if data[0] != 126:
        return data[0] - 63, 1
    if len(data) >= 4 and data[1] != 126:
        n = 0
        for c in data[1:4]:
            n = (n << 6) | (c - 63)
        return n, 4
    if len(data) >= 8:
        n = 0
        for c in data[2:8]:
            n = (n << 6) | (c - 63)
        return n, 8
    raise GraphError("truncated graph6 size field", where)


def from_graph6(s: str | bytes, *, name: str | None = None) -> Graph:
    """A graph from one graph6 string (with or without the ``>>graph6<<`` header)."""
    text = s.decode("ascii", "replace") if isinstance(s, bytes) else s
    text = text.strip()
    if text.startswith(">>graph6<<"):
        text = text[len(">>graph6<<") :]
    where = name or repr(text[:40])
    if not _G6_LINE.match(text or " "):
        bad = next((c for c in text if not (63 <= ord(c) <= 126)), " ")
        raise GraphError(f"not a graph6 string: character {bad!r} is outside '?'..'~'", where)
    data = text.encode("ascii")
    n, off = _g6_size(data, where)
    nbits = n * (n - 1) // 2
    need = (nbits + 5) // 6
    body = data[off:]
    if len(body) != need:
        raise GraphError(
            f"graph6 string for {n} nodes needs {need} data characters, has {len(body)}", where
        )
    bits = np.unpackbits(
        (np.frombuffer(body, dtype=np.uint8) - 63).astype(np.uint8)[:, None], axis=1
    )[:, 2:].reshape(-1)[:nbits]
    a = np.zeros((n, n), dtype=np.int64)
    iu = np.triu_indices(n, 1)
    # graph6 lists the upper triangle column by column: (0,1), (0,2), (1,2), (0,3), ...
    order = np.lexsort((iu[0], iu[1]))
    rows, cols = iu[0][order], iu[1][order]
    a[rows, cols] = bits
    a = a + a.T
    return from_adjacency(a, name=name)


def to_graph6(g: Graph) -> str:
    """The graph6 string of a simple undirected graph."""
    a = g.adjacency
    if not g.is_binary or np.any(np.diag(a)) or not np.array_equal(a, a.T):
        raise GraphError("only simple undirected 0/1 graphs have a graph6 string", g.name)
    n = g.num_nodes
    if n < 63:
        head = bytes([n + 63])
    elif n < 258048:
        head = bytes([126] + [((n >> s) & 63) + 63 for s in (12, 6, 0)])
    else:
        head = bytes([126, 126] + [((n >> s) & 63) + 63 for s in (30, 24, 18, 12, 6, 0)])
    iu = np.triu_indices(n, 1)
    order = np.lexsort((iu[0], iu[1]))
    bits = a[iu[0][order], iu[1][order]].astype(np.uint8)
    pad = (-len(bits)) % 6
    bits = np.concatenate([bits, np.zeros(pad, dtype=np.uint8)]).reshape(-1, 6)
    vals = (bits * (1 << np.arange(5, -1, -1))).sum(axis=1) + 63
    return (head + bytes(vals.astype(np.uint8).tolist())).decode("ascii")


def read_graph6(path: str | os.PathLike[str], *, names: Sequence[str] | None = None) -> list[Graph]:
    """Every graph of a graph6 file, one per non-empty line; names default to ``file:line``."""
    p = Path(path)
    if not p.exists():
        raise GraphError(f"no such graph6 file: {p}")
    graphs = []
    lines = [ln for ln in p.read_text(encoding="ascii", errors="replace").splitlines()]
    k = 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        nm = names[k] if names is not None and k < len(names) else f"{p.name}:{i + 1}"
        graphs.append(from_graph6(line, name=nm))
        k += 1
    return graphs


# --------------------------------------------------------------------------- named graphs

# The six graphs printed in the paper's appendix (node numbering as there), as graph6.
PAPER_GRAPH6: dict[str, str] = {
    "decalin": "IpDK?C@OG",
    "bicyclopentyl": "IpEI?C@OG",
    "cospectral_G": "ImYPScFJG",
    "cospectral_H": "ImWsSgFIg",
    "rook4x4": "O~`HW}GPHDaNaGPCcPWaN",
    "shrikhande": "OlfJHsHBGK_\\oHWKeBK_\\",
}

#: Pairs of the paper: 1-WL-equivalent but L2-separable, L2-equivalent, 3-WL-equivalent.
PAPER_PAIRS: dict[str, tuple[str, str]] = {
    "1-wl": ("decalin", "bicyclopentyl"),
    "l2": ("cospectral_G", "cospectral_H"),
    "3-wl": ("rook4x4", "shrikhande"),
}


def cycle(n: int) -> Graph:
    if n < 3:
        raise GraphError(f"a cycle needs at least 3 nodes, got {n}")
    a = np.zeros((n, n), dtype=np.int64)
    i = np.arange(n)
    a[i, (i + 1) % n] = 1
    return from_adjacency(a + a.T, name=f"cycle{n}")


def path(n: int) -> Graph:
    if n < 1:
        raise GraphError(f"a path needs at least 1 node, got {n}")
    a = np.zeros((n, n), dtype=np.int64)
    i = np.arange(n - 1)
    a[i, i + 1] = 1
    return from_adjacency(a + a.T, name=f"path{n}")


def complete(n: int) -> Graph:
    if n < 1:
        raise GraphError(f"a complete graph needs at least 1 node, got {n}")
    return from_adjacency(
        np.ones((n, n), dtype=np.int64) - np.eye(n, dtype=np.int64), name=f"complete{n}"
    )


def star(k: int) -> Graph:
    """The star K_{1,k}: a centre joined to k leaves."""
    a = np.zeros((k + 1, k + 1), dtype=np.int64)
    a[0, 1:] = a[1:, 0] = 1
    return from_adjacency(a, name=f"star{k}")


def empty(n: int) -> Graph:
    return from_adjacency(np.zeros((n, n), dtype=np.int64), name=f"empty{n}")


def petersen() -> Graph:
    a = np.zeros((10, 10), dtype=np.int64)
    for i in range(5):
        for u, v in ((i, (i + 1) % 5), (i, i + 5), (i + 5, (i + 2) % 5 + 5)):
            a[u, v] = a[v, u] = 1
    return from_adjacency(a, name="petersen")


_FAMILIES = {"cycle": cycle, "path": path, "complete": complete, "star": star, "empty": empty}
_FAMILY_MIN = {"cycle": 3, "path": 1, "complete": 1, "star": 1, "empty": 1}
_ALIASES = {"C": "cycle", "P": "path", "K": "complete"}


def named_graph_names() -> list[str]:
    """Names accepted by :func:`named`; families take a size suffix (``cycle6``, ``K4``)."""
    return [
        *PAPER_GRAPH6,
        "petersen",
        "cycleN",
        "pathN",
        "completeN",
        "starN",
        "emptyN",
        "CN",
        "PN",
        "KN",
    ]


def named(name: str) -> Graph:
    """A built-in graph: the paper's six, ``petersen``, ``cycleN``/``CN``, ``pathN``/``PN``,
    ``completeN``/``KN``, ``starN`` (K_{1,N}) and ``emptyN``."""
    if name in PAPER_GRAPH6:
        return from_graph6(PAPER_GRAPH6[name], name=name)
    if name == "petersen":
        return petersen()
    m = re.fullmatch(r"(cycle|path|complete|star|empty|C|P|K)(\d+)", name)
    if m:
        fam = _ALIASES.get(m.group(1), m.group(1))
        n = int(m.group(2))
        if n < _FAMILY_MIN[fam]:
            raise GraphError(f"no built-in graph {name!r}: size {n} out of range")
        if n + (fam == "star") > limits.MAX_DENSE_NODES:  # built dense, n × n
            raise GraphError(
                f"no built-in graph {name!r}: size {n} out of range, beyond "
                f"{limits.named('MAX_DENSE_NODES')} (built-in graphs are dense)"
            )
        return _FAMILIES[fam](n).with_name(name)
    raise GraphError(f"no built-in graph named {name!r}; known: " + ", ".join(named_graph_names()))


# --------------------------------------------------------------------------- coercion
#
# What a batch is: a PyG-like object by the rule of matlang.pyg_rule; a list or tuple, a 3-D
# array (G, n, n) and a ``.g6`` file are several graphs; everything else (a Graph, a 2-D
# adjacency, a networkx graph, a name or graph6 string) is one graph.


def is_pyg_like(obj: Any) -> bool:
    """A PyG ``Data``/``Batch`` or anything shaped like one (it has an ``edge_index``)."""
    return not isinstance(obj, Graph) and _attr(obj, "edge_index") is not None


def _pyg_graphs(data: Any) -> list[Graph]:
    """The graphs of a PyG-like batch, split by :func:`pyg_layout` (edges between graphs
    refused), with their features and edge weights."""
    n, ptr = pyg_layout(data)
    assert ptr is not None
    ei = _numpy(data.edge_index)
    check_edge_index(ei, n)
    ei = ei.astype(np.int64)
    w = edge_weights(data, ei.shape[1])
    x = _attr(data, "x")
    x = None if x is None else _numpy(x)
    if x is not None:
        check_x(x, n)
    # ptr[g] <= node < ptr[g + 1]: the last offset not above the node (empty graphs skipped)
    gid = np.searchsorted(ptr, ei, side="right") - 1
    cross = gid[0] != gid[1]
    if cross.any():
        k = int(np.flatnonzero(cross)[0])
        raise GraphError(
            f"edge ({ei[0, k]}, {ei[1, k]}) joins graph #{gid[0, k]} to graph #{gid[1, k]}",
            "batch",
        )
    order = np.argsort(gid[0], kind="stable")
    bounds = np.searchsorted(gid[0][order], np.arange(ptr.size))
    out = []
    for g in range(ptr.size - 1):
        lo, hi = int(ptr[g]), int(ptr[g + 1])
        sel = order[bounds[g] : bounds[g + 1]]
        out.append(
            from_edge_index(
                ei[:, sel] - lo,
                hi - lo,
                edge_weight=None if w is None else w[sel],
                name=f"#{g}",
                x=None if x is None else x[lo:hi],
                allow_weights=w is not None,
            )
        )
    return out


def as_graph(obj: Any, *, name: str | None = None, **options: Any) -> Graph:
    """Coerce ``obj`` to a :class:`Graph`.

    Accepts a Graph, a numpy/scipy/torch adjacency, a networkx graph, a PyG-like object with
    ``edge_index`` (and ``num_nodes``, ``edge_weight`` read as A's entries), or a string: a
    built-in name or a graph6 string. A batch of several graphs is refused: see
    :func:`as_graphs`.
    """
    if isinstance(obj, Graph):
        return obj if name is None else obj.with_name(name)
    if isinstance(obj, str):
        try:
            return named(obj) if name is None else named(obj).with_name(name)
        except GraphError as unknown:
            if not _G6_LINE.match(obj.strip() or " "):
                raise
            try:
                return from_graph6(obj, name=name)
            except GraphError:
                # A word such as "petersn" is far more likely a mistyped name than graph6 (whose
                # length is fixed by its first character): report the unknown name then.
                if re.fullmatch(r"[A-Za-z_]+\d*", obj):
                    raise unknown from None
                raise
    if _is_networkx(obj):
        nodes = list(obj.nodes())
        index = {v: i for i, v in enumerate(nodes)}
        # edge weights are the adjacency entries, so the 0/1 check (allow_weights) applies
        weights = [w for _, _, w in obj.edges(data="weight", default=1)]
        dtype = np.int64 if all(float(w).is_integer() for w in weights) else np.float64
        a = np.zeros((len(nodes), len(nodes)), dtype=dtype)
        multi = obj.is_multigraph()
        count: Counter[tuple[int, int]] = Counter()  # a multigraph's edges, by pair
        for (u, v), w in zip(obj.edges(), weights):
            i, j = index[u], index[v]
            if multi:  # parallel edges add up, as networkx.to_numpy_array adds them
                count[(i, j) if obj.is_directed() else (min(i, j), max(i, j))] += 1
                a[i, j] += w
            else:
                a[i, j] = w
            if not obj.is_directed() and i != j:
                a[j, i] = a[i, j]
        label = name or (obj.name or None)
        if count and not options.get("allow_weights"):
            (i, j), k = count.most_common(1)[0]
            if k > 1:
                raise GraphError(
                    f"networkx {type(obj).__name__}: edge ({nodes[i]!r}, {nodes[j]!r}) is stored "
                    f"{k} times; A is read as a simple graph: merge the parallel edges "
                    "(networkx.Graph(g)), or read their count as A's entry "
                    "(matlang.graphs.as_graph(g, allow_weights=True))",
                    label,
                )
        return from_adjacency(a, name=label, **options)
    if is_pyg_like(obj):
        n, ptr = pyg_layout(obj)
        if ptr is not None:
            if ptr.size != 2:
                raise GraphError(
                    f"a batch of {ptr.size - 1} graphs is not one graph: use as_graphs", name
                )
            return _pyg_graphs(obj)[0].with_name(name)
        # checked and located as the runtime does it, so every entry point gives the same message
        raw = obj.edge_index
        check_edge_index(raw if hasattr(raw, "shape") else _numpy(raw), n, name or "batch")
        feats = _attr(obj, "x")
        if feats is not None:
            check_x(feats, n, name or "batch")
        ei = _numpy(obj.edge_index)
        w = edge_weights(obj, ei.shape[1] if ei.ndim == 2 else 0, name or "batch")
        if w is not None:
            options.setdefault("allow_weights", True)
        return from_edge_index(ei, n, edge_weight=w, x=_attr(obj, "x"), name=name, **options)
    if obj is None or np.ndim(obj) == 0:
        raise GraphError(
            f"cannot make a graph from {type(obj).__name__}: give an adjacency matrix, an "
            "edge_index object, a networkx graph, a built-in name or a graph6 string",
            name,
        )
    return from_adjacency(obj, name=name, **options)


def is_one_graph(obj: Any) -> bool:
    """Whether ``obj`` stands for one graph (one value) rather than several (see the rule
    above): lists, tuples, 3-D arrays, ``.g6`` files and PyG-like batches are several."""
    if isinstance(obj, (Graph, str)) and not _is_g6_path(obj):
        return True
    if _is_g6_path(obj) or isinstance(obj, (list, tuple)):
        return False
    if _is_networkx(obj):
        return True
    if is_pyg_like(obj):
        return pyg_layout(obj)[1] is None
    nd = getattr(obj, "ndim", None)
    if isinstance(nd, int):
        return nd != 3
    return not isinstance(obj, Iterable) or isinstance(obj, Mapping)


def _is_g6_path(obj: Any) -> bool:
    return isinstance(obj, os.PathLike) or (isinstance(obj, str) and obj.endswith(".g6"))


def as_graphs(objs: Any) -> list[Graph]:
    """The graphs ``objs`` stands for: one when :func:`is_one_graph`, else each of a list, of a
    3-D array (G, n, n), of a ``.g6`` file or of a PyG-like batch."""
    if _is_g6_path(objs):
        return read_graph6(objs)
    if is_pyg_like(objs):
        return _pyg_graphs(objs) if pyg_layout(objs)[1] is not None else [as_graph(objs)]
    if is_one_graph(objs):
        return [as_graph(objs)]
    return [as_graph(o) for o in objs]


def _is_networkx(obj: Any) -> bool:
    return type(obj).__module__.startswith("networkx") and hasattr(obj, "nodes")
