"""Graphs: one immutable type, built from every format a user is likely to hold.

A :class:`Graph` is an adjacency matrix with a name. By default it must be simple and
undirected (symmetric 0/1, no self-loops); ``allow_weights``, ``allow_self_loops`` and
``allow_directed`` relax that knowingly. Built-in named graphs need no data folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from matlang.errors import GraphError


@dataclass(frozen=True, eq=False)
class Graph:
    """An adjacency matrix ``adjacency`` (n×n numpy array) with an optional name and features."""

    adjacency: np.ndarray
    name: str | None = None
    x: np.ndarray | None = field(default=None, repr=False)

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
        raise GraphError(f"adjacency must be a square matrix, got shape {a.shape}", name)
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
            "(pass allow_weights=True for a weighted graph)",
            name,
        )
    if binary:
        a = a.astype(np.int64)
    if not allow_self_loops and np.any(np.diag(a) != 0):
        i = int(np.flatnonzero(np.diag(a))[0])
        raise GraphError(
            f"self-loop at node {i} (pass allow_self_loops=True to keep self-loops)", name
        )
    if not allow_directed and not np.array_equal(a, a.T):
        i, j = (int(v) for v in np.argwhere(a != a.T)[0])
        raise GraphError(
            f"adjacency is not symmetric: entry ({i}, {j}) is {a[i, j].item()!r} but ({j}, {i}) "
            f"is {a[j, i].item()!r} (pass allow_directed=True for a directed graph)",
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
        a = a.toarray()
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    arr = np.asarray(a)
    arr = _check(arr, name, allow_weights, allow_self_loops, allow_directed)
    feats = None if x is None else np.asarray(x)
    if feats is not None and feats.shape[0] != arr.shape[0]:
        raise GraphError(
            f"features have {feats.shape[0]} rows but the graph has {arr.shape[0]} nodes", name
        )
    return Graph(arr, name, feats)


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
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise GraphError(f"edge_index must have shape (2, E), got {ei.shape}", name)
    if ei.size and not np.issubdtype(ei.dtype, np.integer):
        raise GraphError(f"edge_index must hold integers, got dtype {ei.dtype}", name)
    ei = ei.astype(np.int64)
    if num_nodes is None:
        num_nodes = int(ei.max()) + 1 if ei.size else 0
    if ei.size and (ei.min() < 0 or ei.max() >= num_nodes):
        bad = int(ei.max()) if ei.max() >= num_nodes else int(ei.min())
        raise GraphError(
            f"edge_index refers to node {bad} but the graph has {num_nodes} nodes", name
        )
    if edge_weight is None:
        w = np.ones(ei.shape[1], dtype=np.int64)
    else:
        if hasattr(edge_weight, "detach"):
            edge_weight = edge_weight.detach().cpu().numpy()
        w = np.asarray(edge_weight).reshape(-1)
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
                "undirected edge (or pass allow_directed=True for a directed graph)",
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
        if n < _FAMILY_MIN[fam] or n > 100000:
            raise GraphError(f"no built-in graph {name!r}: size {n} out of range")
        return _FAMILIES[fam](n).with_name(name)
    raise GraphError(f"no built-in graph named {name!r}; known: " + ", ".join(named_graph_names()))


# --------------------------------------------------------------------------- coercion


def as_graph(obj: Any, *, name: str | None = None, **options: Any) -> Graph:
    """Coerce ``obj`` to a :class:`Graph`.

    Accepts a Graph, a numpy/scipy/torch adjacency, a networkx graph, a PyG-like object with
    ``edge_index`` (and ``num_nodes``), or a string: a built-in name or a graph6 string.
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
        for (u, v), w in zip(obj.edges(), weights):
            a[index[u], index[v]] = w
            if not obj.is_directed():
                a[index[v], index[u]] = w
        return from_adjacency(a, name=name or (obj.name or None), **options)
    if hasattr(obj, "edge_index"):
        n = getattr(obj, "num_nodes", None)
        return from_edge_index(
            obj.edge_index,
            int(n) if n is not None else None,
            x=getattr(obj, "x", None),
            name=name,
            **options,
        )
    if obj is None or np.ndim(obj) == 0:
        raise GraphError(
            f"cannot make a graph from {type(obj).__name__}: give an adjacency matrix, an "
            "edge_index object, a networkx graph, a built-in name or a graph6 string",
            name,
        )
    return from_adjacency(obj, name=name, **options)


def as_graphs(objs: Any) -> list[Graph]:
    """A list of graphs from a single graph-like object or an iterable of them."""
    if isinstance(objs, (Graph, str)) or _is_networkx(objs) or hasattr(objs, "edge_index"):
        return [as_graph(objs)]
    if isinstance(objs, np.ndarray) and objs.ndim == 2:
        return [as_graph(objs)]
    if isinstance(objs, Iterable):
        return [as_graph(o) for o in objs]
    return [as_graph(objs)]


def _is_networkx(obj: Any) -> bool:
    return type(obj).__module__.startswith("networkx") and hasattr(obj, "nodes")
