"""Weisfeiler–Lehman tests: 1-WL colour refinement and 2-FWL (folklore, as strong as 3-WL).

Both tests run *jointly* on a set of graphs with one shared colour dictionary, until the
partition stops refining. Two graphs are equivalent when their stable colour histograms agree;
since every new colour encodes the previous one, equal stable histograms imply equal histograms
at every earlier round, so refining the disjoint union to stability is a valid test.

- 1-WL (paper Eq. 10): ``c'(v) = (c(v), {{c(u) : u ∈ N(v)}})``.
- 2-FWL (paper Eq. 12): ``c'(i, j) = (c(i, j), {{(c(i, w), c(w, j)) : w ∈ [n]}})``, starting from
  ``(i == j, A_ij, c(i), c(j))`` with ``c`` the initial node colours.

Everything is exact (no hashing): a signature is a row of integers and rows are numbered by
``np.unique``. Initial node colours may come from ``Graph.x`` (``colors="x"``) or be given per
graph; by default every node has the same colour. Edge weights enter both tests; 1-WL needs
undirected graphs, 2-FWL also takes directed ones (``A_ij`` and ``A_ji`` are separate colours).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import numpy as np

from matlang.errors import GraphError, MatlangError
from matlang.graphs import Graph, as_graph

Test = Literal["1-wl", "3-wl"]

#: Accepted spellings of the two tests; 2-FWL is the folklore test equivalent to 3-WL.
TEST_NAMES: dict[str, Test] = {
    "1-wl": "1-wl",
    "wl": "1-wl",
    "1wl": "1-wl",
    "1-fwl": "1-wl",
    "3-wl": "3-wl",
    "3wl": "3-wl",
    "2-fwl": "3-wl",
    "2fwl": "3-wl",
}

#: Node colours: None (uniform), "x" (rows of each ``Graph.x``) or one array per graph.
Colors = str | Sequence[Any] | None

# Largest signature block (in entries) built at once by 2-FWL; bounds memory to ~100 MB.
_FWL_CHUNK = 1 << 23


def normalize_test(test: str) -> Test:
    """The canonical name (``"1-wl"`` or ``"3-wl"``) of a test given in any accepted spelling."""
    key = test.strip().lower().replace("_", "-")
    if key not in TEST_NAMES:
        raise MatlangError(
            f"unknown WL test {test!r}; use '1-wl' or '3-wl' (also: {', '.join(TEST_NAMES)})"
        )
    return TEST_NAMES[key]


# --------------------------------------------------------------------------- helpers


def _unique_rows(rows: np.ndarray) -> tuple[int, np.ndarray]:
    """Number the distinct rows of a 2-D integer array: (count, id per row).

    Rows are compared as raw bytes (a void view), which is several times faster than
    ``np.unique(axis=0)``; ids are consistent within one call, which is all a dictionary needs.
    """
    rows = np.ascontiguousarray(rows)
    if rows.shape[0] == 0:
        return 0, np.zeros(0, dtype=np.int64)
    void = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    uniq, inverse = np.unique(void, return_inverse=True)
    return int(uniq.shape[0]), inverse.reshape(-1).astype(np.int64)


def _codes(values: np.ndarray) -> np.ndarray:
    """Integer codes of the distinct values of a 1-D array (floats compared exactly)."""
    _, inverse = np.unique(values, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def _graphs(graphs: Iterable[Any]) -> list[Graph]:
    return [as_graph(g) for g in graphs]


def _label(g: Graph, i: int) -> str:
    return g.name or f"#{i}"


def initial_node_colors(graphs: Sequence[Graph], colors: Colors = None) -> list[np.ndarray]:
    """Initial node colours as int64 ids from one dictionary shared by all ``graphs``.

    ``colors`` is None (all nodes alike), ``"x"`` (equal rows of ``Graph.x`` get equal colours)
    or a sequence with one array per graph: labels of shape (n,) or feature rows of shape (n, d).
    """
    if colors is None:
        return [np.zeros(g.num_nodes, dtype=np.int64) for g in graphs]
    if isinstance(colors, str):
        if colors != "x":
            raise MatlangError(f"colors must be None, 'x' or one array per graph, got {colors!r}")
        per_graph: list[Any] = []
        for i, g in enumerate(graphs):
            if g.x is None:
                raise GraphError("has no node features (colors='x' needs Graph.x)", _label(g, i))
            per_graph.append(g.x)
    else:
        per_graph = list(colors)
        if len(per_graph) != len(graphs):
            raise MatlangError(
                f"colors has {len(per_graph)} entries but there are {len(graphs)} graphs"
            )
    blocks = []
    for i, (g, c) in enumerate(zip(graphs, per_graph, strict=True)):
        arr = np.asarray(c)
        if hasattr(c, "detach"):
            arr = c.detach().cpu().numpy()
        if arr.ndim == 0:
            raise GraphError("node colours must be an array with one entry per node", _label(g, i))
        arr = arr.reshape(arr.shape[0], int(np.prod(arr.shape[1:], dtype=np.int64)))
        if arr.shape[0] != g.num_nodes:
            raise GraphError(
                f"node colours have {arr.shape[0]} rows but the graph has {g.num_nodes} nodes",
                _label(g, i),
            )
        blocks.append(arr)
    widths = {b.shape[1] for b in blocks}
    if len(widths) > 1:
        raise MatlangError(f"node colours of the graphs have different widths {sorted(widths)}")
    stacked = np.concatenate(blocks) if blocks else np.zeros((0, 1))
    # Each column becomes integer codes first so that float features hash exactly and compactly.
    coded = np.stack([_codes(stacked[:, k]) for k in range(stacked.shape[1])], axis=1)
    _, ids = _unique_rows(coded)
    sizes = np.cumsum([0] + [g.num_nodes for g in graphs])
    return [ids[sizes[i] : sizes[i + 1]] for i in range(len(graphs))]


def _histogram_key(colors: np.ndarray) -> bytes:
    """A key equal for two colourings exactly when their colour multisets are equal."""
    return np.sort(colors.reshape(-1)).astype(np.int64).tobytes()


def _group(keys: Sequence[bytes]) -> list[list[int]]:
    """Indices grouped by equal key, groups ordered by their first member."""
    groups: dict[bytes, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    return list(groups.values())


# --------------------------------------------------------------------------- 1-WL


def refine_1wl(graphs: Iterable[Any], colors: Colors = None) -> list[np.ndarray]:
    """Stable 1-WL node colours of every graph, refined jointly with one shared dictionary.

    Weighted graphs refine on the multiset of (edge weight, neighbour colour); graphs must be
    undirected.
    """
    gs = _graphs(graphs)
    for i, g in enumerate(gs):
        if not np.array_equal(g.adjacency, g.adjacency.T):
            raise GraphError("1-WL here needs an undirected (symmetric) graph", _label(g, i))
    init = initial_node_colors(gs, colors)
    sizes = np.array([g.num_nodes for g in gs], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    total = int(offsets[-1])
    src_parts, dst_parts, w_parts = [], [], []
    for g, off in zip(gs, offsets[:-1], strict=True):
        r, c = np.nonzero(g.adjacency)
        src_parts.append(r + off)
        dst_parts.append(c + off)
        w_parts.append(g.adjacency[r, c])
    src = np.concatenate(src_parts).astype(np.int64) if gs else np.zeros(0, np.int64)
    dst = np.concatenate(dst_parts).astype(np.int64) if gs else np.zeros(0, np.int64)
    weights = np.concatenate(w_parts) if gs else np.zeros(0)
    weighted = bool(weights.size) and not np.all(weights == 1)
    wcode = _codes(weights) if weighted else None
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    wcode = None if wcode is None else wcode[order]
    degree = np.bincount(src, minlength=total)
    ptr = np.concatenate([[0], np.cumsum(degree)])
    # Nodes of equal degree have equal-length signatures, so they are numbered per degree
    # bucket (an exact multiset hash in O(E) memory). Buckets are fixed across rounds.
    buckets = []
    for d in np.unique(degree).tolist():
        nodes = np.flatnonzero(degree == d)
        buckets.append((nodes, ptr[nodes][:, None] + np.arange(d)[None, :]))
    color = np.concatenate(init) if gs else np.zeros(0, np.int64)
    _, color = _unique_rows(color[:, None])
    count = len(np.unique(color))
    while True:
        color = _refine_nodes(color, src, dst, wcode, buckets)
        new_count = int(color.max()) + 1 if color.size else 0
        if new_count == count:
            break
        count = new_count
    return [color[offsets[i] : offsets[i + 1]] for i in range(len(gs))]


def _refine_nodes(
    color: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    wcode: np.ndarray | None,
    buckets: Sequence[tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    """One 1-WL round: new colour ids for the signature (c(v), sorted neighbour elements).

    ``buckets`` holds, per degree, the nodes and the positions of their edges in ``src`` order.
    """
    elem = color[dst] if wcode is None else wcode * (int(color.max()) + 1) + color[dst]
    # Sort each node's elements; edges are already grouped by src, so sort by (src, elem).
    elem = elem[np.lexsort((elem, src))]
    new = np.empty_like(color)
    next_id = 0
    for nodes, cols in buckets:
        rows = np.concatenate([color[nodes][:, None], elem[cols]], axis=1)
        k, ids = _unique_rows(rows)
        # Buckets of different degrees never share an id.
        new[nodes] = ids + next_id
        next_id += k
    return new


# --------------------------------------------------------------------------- 2-FWL


def _initial_pair_colors(
    graphs: Sequence[Graph], node_colors: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """2-FWL colours at round 0: ``(i == j, A_ij, c(i), c(j))`` with one shared dictionary."""
    avals = [g.adjacency.reshape(-1) for g in graphs]
    acode = _codes(np.concatenate(avals)) if avals else np.zeros(0, np.int64)
    blocks = []
    start = 0
    for g, c in zip(graphs, node_colors, strict=True):
        n = g.num_nodes
        eye = np.eye(n, dtype=np.int64).reshape(-1)
        a = acode[start : start + n * n]
        start += n * n
        ci = np.repeat(c, n)
        cj = np.tile(c, n)
        blocks.append(np.stack([eye, a, ci, cj], axis=1))
    rows = np.concatenate(blocks) if blocks else np.zeros((0, 4), np.int64)
    _, ids = _unique_rows(rows)
    out, start = [], 0
    for g in graphs:
        n = g.num_nodes
        out.append(ids[start : start + n * n].reshape(n, n))
        start += n * n
    return out


def _refine_pairs(colors: Sequence[np.ndarray]) -> list[np.ndarray]:
    """One 2-FWL round over several graphs at once (one shared dictionary)."""
    num = max((int(c.max()) + 1 for c in colors if c.size), default=0)
    # (c(i,w), c(w,j)) packed into one integer; int32 halves the sort cost when it fits.
    dtype = np.int32 if num * num < 2**31 else np.int64
    by_size: dict[int, list[int]] = {}
    for k, c in enumerate(colors):
        by_size.setdefault(c.shape[0], []).append(k)
    out: list[np.ndarray] = [np.empty(0, np.int64)] * len(colors)
    next_id = 0
    for n, members in by_size.items():
        if n == 0:
            for k in members:
                out[k] = np.zeros((0, 0), np.int64)
            continue
        # Signatures of different sizes never coincide (multisets of n vs n' elements), so each
        # size is numbered on its own and offset.
        stack = np.stack([colors[k] for k in members]).astype(dtype)  # (G, n, n)
        trans = np.ascontiguousarray(stack.transpose(0, 2, 1))
        flat = stack.reshape(-1, n)  # row f = (graph f // n, i = f % n): c(i, ·)
        per_chunk = max(1, _FWL_CHUNK // (n * n))
        # Each chunk is numbered on its own, then the chunks' distinct rows once more jointly.
        uniq_blocks: list[np.ndarray] = []
        inverses: list[np.ndarray] = []
        for lo in range(0, flat.shape[0], per_chunk):
            hi = min(flat.shape[0], lo + per_chunk)
            gidx = np.arange(lo, hi) // n
            # sig[f, j, w] = c(i, w) * num + c(w, j)
            sig = flat[lo:hi, None, :] * dtype(num) + trans[gidx]
            sig.sort(axis=-1)
            rows = np.concatenate([flat[lo:hi].reshape(-1, 1), sig.reshape(-1, n)], axis=1)
            rows = np.ascontiguousarray(rows)
            void = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
            u, inv = np.unique(void, return_inverse=True)
            uniq_blocks.append(u)
            inverses.append(inv.reshape(-1))
        allu = np.concatenate(uniq_blocks)
        glob_u, glob_inv = np.unique(allu, return_inverse=True)
        glob_inv = glob_inv.reshape(-1)
        starts = np.concatenate([[0], np.cumsum([len(u) for u in uniq_blocks])])
        ids = np.concatenate([glob_inv[starts[b] + inv] for b, inv in enumerate(inverses)])
        ids += next_id
        next_id += int(glob_u.shape[0])
        ids = ids.reshape(len(members), n, n)
        for pos, k in enumerate(members):
            out[k] = ids[pos]
    return out


def refine_2fwl(graphs: Iterable[Any], colors: Colors = None) -> list[np.ndarray]:
    """Stable 2-FWL pair colours (one n×n array per graph), refined jointly."""
    gs = _graphs(graphs)
    pair = _initial_pair_colors(gs, initial_node_colors(gs, colors))
    count = _num_colors(pair)
    while True:
        pair = _refine_pairs(pair)
        new_count = _num_colors(pair)
        if new_count == count:
            return pair
        count = new_count


def _num_colors(colors: Sequence[np.ndarray]) -> int:
    if not colors:
        return 0
    return int(np.unique(np.concatenate([c.reshape(-1) for c in colors])).size)


def _fwl_partition(gs: Sequence[Graph], node_colors: Sequence[np.ndarray]) -> list[list[int]]:
    """2-FWL equivalence classes of ``gs``, pruning graphs as soon as they are told apart.

    A graph whose histogram is unique after some round differs from every other graph, so it
    leaves the joint run; the rest keep one shared dictionary, which is all the test needs.
    """
    pair = _initial_pair_colors(gs, node_colors)
    active = list(range(len(gs)))
    cols = {k: pair[k] for k in active}
    done: list[list[int]] = []
    while True:
        groups = _group([_histogram_key(cols[k]) for k in active])
        groups = [[active[p] for p in grp] for grp in groups]
        done.extend(grp for grp in groups if len(grp) == 1)
        active = [k for grp in groups if len(grp) > 1 for k in grp]
        if not active:
            break
        before = _num_colors([cols[k] for k in active])
        refined = _refine_pairs([cols[k] for k in active])
        after = _num_colors(refined)
        cols = dict(zip(active, refined, strict=True))
        if after == before:
            # Stable: the partition no longer changes, so neither do the histograms.
            done.extend(grp for grp in groups if len(grp) > 1)
            break
    return sorted(done, key=min)


# --------------------------------------------------------------------------- tests


def _presplit_keys(
    gs: Sequence[Graph], node_colors: Sequence[np.ndarray], kind: Test
) -> list[bytes]:
    """Keys equal for every pair ``kind`` may find equivalent: stable 1-WL histograms.

    1-WL here is for undirected graphs; 2-FWL handles directed ones, which are then split by
    size and node-colour histogram only.
    """
    directed = any(not np.array_equal(g.adjacency, g.adjacency.T) for g in gs)
    if kind == "3-wl" and directed:
        return [_histogram_key(c) for c in node_colors]
    return [_histogram_key(c) for c in refine_1wl(gs, node_colors)]


def classes(
    graphs: Iterable[Any],
    test: str = "1-wl",
    colors: Colors = None,
    *,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> list[list[int]]:
    """Equivalence classes of ``graphs`` under ``test``: every index in exactly one class.

    Classes (sorted inside) are ordered by their smallest index. For 3-WL the graphs are first
    split by 1-WL (3-WL refines it), and 2-FWL runs only inside 1-WL classes with several
    members; ``progress`` (e.g. ``tqdm``) wraps the loop over those classes.
    """
    gs = _graphs(graphs)
    kind = normalize_test(test)
    node_colors = initial_node_colors(gs, colors)
    by_1wl = _group(_presplit_keys(gs, node_colors, kind))
    if kind == "1-wl":
        return by_1wl
    out = [grp for grp in by_1wl if len(grp) == 1]
    todo = [grp for grp in by_1wl if len(grp) > 1]
    for grp in progress(todo) if progress is not None else todo:
        sub = _fwl_partition([gs[k] for k in grp], [node_colors[k] for k in grp])
        out.extend([grp[p] for p in s] for s in sub)
    return sorted((sorted(c) for c in out), key=min)


def count_equivalent_pairs(groups: Iterable[Sequence[int]]) -> int:
    """Number of unordered equivalent pairs: the sum of C(k, 2) over the classes."""
    return sum(len(g) * (len(g) - 1) // 2 for g in groups)


def equivalent(g: Any, h: Any, test: str = "1-wl", colors: Colors = None) -> bool:
    """Whether ``test`` ("1-wl" or "3-wl") cannot tell the graphs ``g`` and ``h`` apart.

    ``colors``: None, ``"x"`` or a pair of per-node colour arrays (see
    :func:`initial_node_colors`). Graphs of different sizes are never equivalent.
    """
    a, b = as_graph(g), as_graph(h)
    if a.num_nodes != b.num_nodes:
        return False
    return len(classes([a, b], test, colors)) == 1


def pair_equivalence(
    graphs: Sequence[Any],
    pairs: Sequence[tuple[int, int]] | np.ndarray,
    test: str = "1-wl",
    colors: Colors = None,
    *,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> np.ndarray:
    """For each pair (i, j) of indices into ``graphs``: is it ``test``-equivalent? (bool array)

    1-WL refines all graphs in one joint run; 3-WL runs 2-FWL pair by pair (``progress`` wraps
    that loop), skipping pairs that 1-WL already tells apart.
    """
    gs = _graphs(graphs)
    kind = normalize_test(test)
    idx = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if idx.size and (idx.min() < 0 or idx.max() >= len(gs)):
        raise MatlangError(f"pair index out of range: there are {len(gs)} graphs")
    node_colors = initial_node_colors(gs, colors)
    keys = _presplit_keys(gs, node_colors, kind)
    result = np.array([keys[i] == keys[j] for i, j in idx.tolist()], dtype=bool)
    if kind == "1-wl":
        return result
    todo = [k for k in range(len(idx)) if result[k]]
    for k in progress(todo) if progress is not None else todo:
        i, j = int(idx[k, 0]), int(idx[k, 1])
        sub = _fwl_partition([gs[i], gs[j]], [node_colors[i], node_colors[j]])
        result[k] = len(sub) == 1
    return result
