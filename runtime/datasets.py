"""Loaders for the benchmark datasets of the paper (see ``data/README.md``).

The data folder is ``$MATLANG_DATA`` when set, else the datasets that ship with matlang: the
repository's ``data/`` folder (a source checkout or an editable install), or the copy inside an
installed wheel (``matlang._data``). ``matlang data path`` prints the folder in use. Every
loader validates what it reads and raises :class:`~matlang.errors.DataError` naming the file
(and graph) when something is malformed.
Graphs come back as :class:`~matlang.graphs.Graph`; datasets with labels or splits come back as
small frozen dataclasses holding the graphs and numpy arrays.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from matlang.errors import DataError, GraphError
from matlang.graphs import PAPER_GRAPH6, Graph, from_adjacency, from_edge_index, from_graph6
from matlang.witness import PairClass

ENV_VAR = "MATLANG_DATA"


# --------------------------------------------------------------------------- locating files


def _candidates() -> list[Path]:
    """Where the shipped datasets live: ``data/`` beside the package folders of a checkout
    (``runtime/`` is installed as ``matlang.runtime``, so its parent is the repository), then the
    wheel's copy ``matlang/_data``."""
    here = Path(__file__).resolve().parent
    return [here.parent / "data", here.parent / "_data"]


def data_root() -> Path:
    """The data folder: ``$MATLANG_DATA``, else the datasets shipped with matlang."""
    env = os.environ.get(ENV_VAR)
    if env:
        root = Path(env).expanduser()
        if not root.is_dir():
            raise DataError(f"{ENV_VAR}={env!r} is not a folder")
        return root
    for root in _candidates():
        if (root / "README.md").is_file():
            return root.resolve()
    looked = ", ".join(str(p) for p in _candidates())
    raise DataError(
        f"no data folder found (looked in {looked}); set {ENV_VAR} to the folder holding the "
        "datasets (see the data README)"
    )


def data_available(name: str | None = None) -> bool:
    """Whether the data folder (and, when ``name`` is given, that dataset's files) exists."""
    try:
        root = data_root()
    except DataError:
        return False
    if name is None:
        return True
    info = DATASETS.get(name)
    return info is not None and all((root / p).exists() for p in info.files)


def _file(*parts: str) -> Path:
    path = data_root().joinpath(*parts)
    if not path.exists():
        raise DataError(f"missing dataset file {path} (set {ENV_VAR} to another data folder?)")
    return path


def _load_npz(path: Path, keys: Mapping[str, int]) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file, checking that ``keys`` exist with the given ndim."""
    try:
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise DataError(f"{path}: cannot read as .npz ({e})") from e
    for key, ndim in keys.items():
        if key not in arrays:
            raise DataError(f"{path}: missing array {key!r} (has {sorted(arrays)})")
        if arrays[key].ndim != ndim:
            raise DataError(f"{path}: array {key!r} has {arrays[key].ndim} dims, expected {ndim}")
    return arrays


def _load_mat(path: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    from scipy.io import loadmat

    try:
        mat = loadmat(path)
    except Exception as e:  # scipy raises many types for a corrupt file
        raise DataError(f"{path}: cannot read as a MATLAB file ({e})") from e
    for key in keys:
        if key not in mat:
            have = sorted(k for k in mat if not k.startswith("__"))
            raise DataError(f"{path}: missing key {key!r} (has {have})")
    return mat


def _index(path: Path, name: str, arr: np.ndarray, size: int) -> np.ndarray:
    """A 1-D integer index array whose entries lie in ``0..size-1``."""
    arr = np.asarray(arr)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise DataError(f"{path}: {name} must be a 1-D integer array, got {arr.dtype} {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= size):
        raise DataError(f"{path}: {name} has entries outside 0..{size - 1}")
    return arr.astype(np.int64)


def _ptr(path: Path, name: str, ptr: np.ndarray, count: int, total: int) -> np.ndarray:
    if ptr.shape != (count + 1,) or ptr[0] != 0 or ptr[-1] != total or np.any(np.diff(ptr) < 0):
        raise DataError(
            f"{path}: {name} must be non-decreasing offsets from 0 to {total} of length {count + 1}"
        )
    return ptr.astype(np.int64)


def _edge_graphs(
    path: Path,
    prefix: str,
    num_nodes: np.ndarray,
    edge_index: np.ndarray,
    edge_ptr: np.ndarray,
    x: np.ndarray | None = None,
    node_ptr: np.ndarray | None = None,
) -> list[Graph]:
    """Graphs from concatenated local edge lists, each validated (simple and undirected)."""
    graphs = []
    for i, n in enumerate(num_nodes.tolist()):
        ei = edge_index[:, edge_ptr[i] : edge_ptr[i + 1]]
        feats = None if x is None or node_ptr is None else x[node_ptr[i] : node_ptr[i + 1]]
        try:
            graphs.append(from_edge_index(ei, int(n), name=f"{prefix}:{i}", x=feats))
        except GraphError as e:
            raise DataError(f"{path}: graph {i}: {e}") from e
    return graphs


# --------------------------------------------------------------------------- graph6 datasets


def _read_graph6(path: Path, prefix: str) -> list[Graph]:
    """Every graph of a graph6 file; lines of one size are decoded together (vectorised)."""
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e})") from e
    lines = [ln.strip() for ln in lines]
    lines = [ln for ln in lines if ln]
    graphs: list[Graph | None] = [None] * len(lines)
    by_len: dict[int, list[int]] = {}
    for i, ln in enumerate(lines):
        if ln.startswith(b">>graph6<<"):
            lines[i] = ln = ln[len(b">>graph6<<") :]
        by_len.setdefault(len(ln), []).append(i)
    for length, idx in by_len.items():
        first = lines[idx[0]]
        n = first[0] - 63 if length else -1
        simple = 0 <= n < 63 and length == 1 + (n * (n - 1) // 2 + 5) // 6
        block = np.frombuffer(b"".join(lines[i] for i in idx), dtype=np.uint8)
        block = block.reshape(len(idx), length) if length else block.reshape(len(idx), 0)
        if not simple or np.any(block[:, 0] != first[0]) or np.any((block < 63) | (block > 126)):
            # Unusual lines (big graphs, mixed sizes, bad bytes) go through the checked parser.
            for i in idx:
                try:
                    graphs[i] = from_graph6(lines[i], name=f"{prefix}:{i}")
                except GraphError as e:
                    raise DataError(f"{path}: line {i + 1}: {e}") from e
            continue
        nbits = n * (n - 1) // 2
        bits = np.unpackbits((block[:, 1:] - 63)[:, :, None], axis=2)[:, :, 2:]
        bits = bits.reshape(len(idx), -1)[:, :nbits]
        iu = np.triu_indices(n, 1)
        # graph6 lists the upper triangle column by column: (0,1), (0,2), (1,2), (0,3), ...
        order = np.lexsort((iu[0], iu[1]))
        adj = np.zeros((len(idx), n, n), dtype=np.int64)
        adj[:, iu[0][order], iu[1][order]] = bits
        adj = adj + adj.transpose(0, 2, 1)
        for pos, i in enumerate(idx):
            a = np.ascontiguousarray(adj[pos])
            a.setflags(write=False)
            # Symmetric 0/1 with an empty diagonal by construction: no further check needed.
            graphs[i] = Graph(a, f"{prefix}:{i}")
    return [g for g in graphs if g is not None]


def load_graph6(path: str | os.PathLike[str], prefix: str | None = None) -> list[Graph]:
    """Every graph of any graph6 file, named ``prefix:i`` (0-based; prefix = the file's stem)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"no such graph6 file: {p}")
    return _read_graph6(p, prefix or p.stem)


def load_graph8c() -> list[Graph]:
    """graph8c: the 11117 connected simple graphs on 8 nodes (no features, no split)."""
    return _read_graph6(_file("graph8c", "graph8c.g6"), "graph8c")


def load_sr25() -> list[Graph]:
    """sr25: the 15 strongly regular graphs srg(25,12,5,6) (no features, no split)."""
    return _read_graph6(_file("sr25", "sr251256.g6"), "sr25")


#: Names of the six paper graphs, in the order of ``paper_pairs.g6``.
PAPER_PAIR_NAMES: tuple[str, ...] = tuple(PAPER_GRAPH6)


def load_paper_pairs() -> list[Graph]:
    """The six graphs of the paper's appendix (pairs 0-1, 2-3, 4-5), named as there."""
    path = _file("paper_pairs", "paper_pairs.g6")
    graphs = _read_graph6(path, "paper_pairs")
    if len(graphs) != len(PAPER_PAIR_NAMES):
        raise DataError(f"{path}: expected {len(PAPER_PAIR_NAMES)} graphs, found {len(graphs)}")
    return [g.with_name(nm) for g, nm in zip(graphs, PAPER_PAIR_NAMES, strict=True)]


# --------------------------------------------------------------------------- BREC


#: BREC's categories as its paper reports them (Table 2): Regular is BREC's ``Regular`` range
#: plus ``4-Vertex_Condition`` and ``Distance_Regular``.
BREC_CATEGORIES: tuple[str, ...] = ("Basic", "Regular", "Extension", "CFI")

# The paper's Regular category is the union of these ranges of ``categories.json``.
_BREC_PAPER_PARTS: dict[str, tuple[str, ...]] = {
    "Basic": ("Basic",),
    "Regular": ("Regular", "4-Vertex_Condition", "Distance_Regular"),
    "Extension": ("Extension",),
    "CFI": ("CFI",),
}


@dataclass(frozen=True, eq=False)
class BrecData:
    """BREC (Wang & Zhang 2023): 400 pairs of non-isomorphic graphs, graphs ``2k``, ``2k+1``.

    ``parts`` holds the half-open pair ranges of ``categories.json`` (BREC's own six parts and
    the Simple/Strongly regular split, which overlaps ``Regular``); :meth:`category` maps a pair
    to the paper's four categories (:data:`BREC_CATEGORIES`).
    """

    graphs: list[Graph]
    pairs: np.ndarray  # (400, 2)
    parts: Mapping[str, tuple[int, int]]

    def category(self, k: int) -> str:
        """The paper's category (Basic, Regular, Extension, CFI) of pair ``k``."""
        for cat, names in _BREC_PAPER_PARTS.items():
            if any(self.parts[n][0] <= k < self.parts[n][1] for n in names):
                return cat
        raise DataError(f"BREC pair {k} lies in no category")

    def categories(self) -> np.ndarray:
        """The paper's category of every pair, as an array of names."""
        return np.array([self.category(k) for k in range(len(self.pairs))])


def load_brec() -> BrecData:
    """BREC from ``brec/brec_pairs.g6`` (lines 2k, 2k+1 = pair k) and ``brec/categories.json``."""
    import json

    path = _file("brec", "brec_pairs.g6")
    graphs = _read_graph6(path, "brec")
    if len(graphs) % 2:
        raise DataError(f"{path}: {len(graphs)} graphs; pairs need an even number")
    count = len(graphs) // 2
    for k in range(count):
        a, b = graphs[2 * k], graphs[2 * k + 1]
        if a.num_nodes != b.num_nodes:
            raise DataError(
                f"{path}: pair {k} (lines {2 * k + 1}, {2 * k + 2}) joins graphs of "
                f"{a.num_nodes} and {b.num_nodes} nodes"
            )
    cpath = _file("brec", "categories.json")
    try:
        raw = json.loads(cpath.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"{cpath}: cannot read as JSON ({e})") from e
    if not isinstance(raw, dict):
        raise DataError(f"{cpath}: expected an object of category -> [start, end)")
    parts: dict[str, tuple[int, int]] = {}
    for name, rng in raw.items():
        ok = isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, int) for v in rng)
        if not ok or not 0 <= rng[0] <= rng[1] <= count:
            raise DataError(f"{cpath}: {name!r} must be [start, end) within 0..{count}, got {rng}")
        parts[name] = (rng[0], rng[1])
    needed = {n for names in _BREC_PAPER_PARTS.values() for n in names}
    if missing := sorted(needed - set(parts)):
        raise DataError(f"{cpath}: missing categories {missing}")
    covered = np.zeros(count, dtype=np.int64)
    for n in needed:
        covered[parts[n][0] : parts[n][1]] += 1
    if np.any(covered != 1):
        k = int(np.flatnonzero(covered != 1)[0])
        raise DataError(
            f"{cpath}: pair {k} lies in {covered[k]} of {sorted(needed)}; they must partition "
            f"the {count} pairs"
        )
    pairs = np.arange(2 * count, dtype=np.int64).reshape(count, 2)
    return BrecData(graphs, pairs, parts)


# --------------------------------------------------------------------------- EXP


@dataclass(frozen=True, eq=False)
class ExpData:
    """EXP (Abboud et al.): 600 pairs of 1-WL-equivalent graphs, graph ``2k`` SAT, ``2k+1`` UNSAT.

    Each graph's ``x`` is the (n, 1) int64 literal/clause feature.
    """

    graphs: list[Graph]
    y: np.ndarray  # (G,) 1 = satisfiable
    pairs: np.ndarray  # (G/2, 2)
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray


def load_exp() -> ExpData:
    """EXP from ``exp/exp.npz`` (graphs with x, labels, pairs and the authors' split)."""
    path = _file("exp", "exp.npz")
    z = _load_npz(
        path,
        {
            "num_nodes": 1,
            "node_ptr": 1,
            "x": 2,
            "edge_index": 2,
            "edge_ptr": 1,
            "y": 1,
            "pairs": 2,
            "train_idx": 1,
            "val_idx": 1,
            "test_idx": 1,
        },
    )
    num_nodes = z["num_nodes"]
    count = num_nodes.shape[0]
    node_ptr = _ptr(path, "node_ptr", z["node_ptr"], count, z["x"].shape[0])
    if np.any(np.diff(node_ptr) != num_nodes):
        i = int(np.flatnonzero(np.diff(node_ptr) != num_nodes)[0])
        raise DataError(f"{path}: graph {i}: node_ptr disagrees with num_nodes")
    if z["edge_index"].shape[0] != 2:
        raise DataError(f"{path}: edge_index must have shape (2, E), got {z['edge_index'].shape}")
    edge_ptr = _ptr(path, "edge_ptr", z["edge_ptr"], count, z["edge_index"].shape[1])
    graphs = _edge_graphs(path, "exp", num_nodes, z["edge_index"], edge_ptr, z["x"], node_ptr)
    y = z["y"]
    if y.shape != (count,):
        raise DataError(f"{path}: y has shape {y.shape}, expected ({count},)")
    pairs = z["pairs"]
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise DataError(f"{path}: pairs must have shape (P, 2), got {pairs.shape}")
    _index(path, "pairs", pairs.reshape(-1), count)
    return ExpData(
        graphs,
        y.astype(np.int64),
        pairs.astype(np.int64),
        _index(path, "train_idx", z["train_idx"], count),
        _index(path, "val_idx", z["val_idx"], count),
        _index(path, "test_idx", z["test_idx"], count),
    )


# --------------------------------------------------------------------------- counting data


@dataclass(frozen=True, eq=False)
class CountingData:
    """Graphs for substructure counting: a split and one label array per target name."""

    graphs: list[Graph]
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    labels: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = ""


#: Label arrays stored in ``randomgraph/dataset1.npz`` (Chen et al.'s targets).
RANDOMGRAPH_LABELS: tuple[str, ...] = (
    "count_triangle",
    "count_tailed_triangle",
    "count_chordal_cycle",
    "count_star",
    "count_attributed_triangle",
)


def load_randomgraph() -> CountingData:
    """Chen et al.'s "Dataset 1" (5000 Erdős–Rényi graphs on 10 nodes, split 1500/1000/2500).

    This is *not* the paper's "Random" dataset (18.8 nodes on average; see the data README);
    :func:`runtime.generators.paperlike_random` gives a stand-in with those statistics.
    """
    path = _file("randomgraph", "dataset1.npz")
    keys = {"num_nodes": 1, "edge_index": 2, "edge_ptr": 1, "train_idx": 1, "val_idx": 1}
    keys |= {"test_idx": 1} | {name: 1 for name in RANDOMGRAPH_LABELS}
    z = _load_npz(path, keys)
    num_nodes = z["num_nodes"]
    count = num_nodes.shape[0]
    if z["edge_index"].shape[0] != 2:
        raise DataError(f"{path}: edge_index must have shape (2, E), got {z['edge_index'].shape}")
    edge_ptr = _ptr(path, "edge_ptr", z["edge_ptr"], count, z["edge_index"].shape[1])
    graphs = _edge_graphs(path, "randomgraph", num_nodes, z["edge_index"], edge_ptr)
    labels = {}
    for name in RANDOMGRAPH_LABELS:
        if z[name].shape != (count,):
            raise DataError(f"{path}: {name} has shape {z[name].shape}, expected ({count},)")
        labels[name] = z[name]
    return CountingData(
        graphs,
        _index(path, "train_idx", z["train_idx"], count),
        _index(path, "val_idx", z["val_idx"], count),
        _index(path, "test_idx", z["test_idx"], count),
        labels,
        "randomgraph (Chen et al. 2020, Dataset 1)",
    )


# --------------------------------------------------------------------------- 2D grid


@dataclass(frozen=True, eq=False)
class GridData:
    """The 30×30 grid of the filtering task: one graph, three (x, y) signal instances, a mask.

    Target columns of ``y``: :attr:`TARGETS`. Instance roles: :attr:`split`.
    """

    graph: Graph
    x: tuple[np.ndarray, ...]  # three (900, 1) inputs
    y: tuple[np.ndarray, ...]  # three (900, 3) targets
    mask: np.ndarray  # (900, 1); loss only where 1
    split: Mapping[str, int] = field(default_factory=lambda: {"train": 0, "test": 1, "val": 2})

    TARGETS = ("band-pass", "low-pass", "high-pass")

    def instance(self, k: int) -> Graph:
        """The grid carrying instance ``k``'s input signal as ``x``."""
        return Graph(self.graph.adjacency, f"{self.graph.name}[{k}]", self.x[k])


def load_twodgrid30() -> GridData:
    """The 2D-grid filtering data (``twodgrid30/TwoDGrid30.mat``)."""
    path = _file("twodgrid30", "TwoDGrid30.mat")
    mat = _load_mat(path, ("A", "F"))
    try:
        graph = from_adjacency(np.asarray(mat["A"]), name="twodgrid30")
    except GraphError as e:
        raise DataError(f"{path}: {e}") from e
    feats = np.asarray(mat["F"], dtype=np.float64)
    if feats.shape != (graph.num_nodes, 13):
        raise DataError(f"{path}: F has shape {feats.shape}, expected ({graph.num_nodes}, 13)")
    xs = tuple(feats[:, 4 * k : 4 * k + 1] for k in range(3))
    ys = tuple(feats[:, 4 * k + 1 : 4 * k + 4] for k in range(3))
    mask = feats[:, 12:13]
    if not np.isin(mask, (0.0, 1.0)).all():
        raise DataError(f"{path}: mask column F[:, 12] must be 0/1")
    return GridData(graph, xs, ys, mask)


# --------------------------------------------------------------------------- TU


@dataclass(frozen=True, eq=False)
class TUData:
    """A TU benchmark: graphs with node features ``x``, labels ``y`` and 10 (train, test) folds.

    ``edge_attr`` holds MUTAG's one-hot bond types (n, n, 4) per graph, else None.
    """

    name: str
    graphs: list[Graph]
    y: np.ndarray
    folds: list[tuple[np.ndarray, np.ndarray]]
    edge_attr: list[np.ndarray] | None = None

    def __repr__(self) -> str:  # one line: the graphs and folds printed were 351 KB for MUTAG
        nodes = sum(g.num_nodes for g in self.graphs)
        feats = self.graphs[0].x.shape[1] if self.graphs and self.graphs[0].x is not None else 0
        return (
            f"TUData({self.name!r}, {len(self.graphs)} graphs, {nodes} nodes, {feats} node "
            f"features, {len(np.unique(self.y))} classes, {len(self.folds)} folds)"
        )


#: TU datasets: (label key in the .mat, label transform, default feature columns).
_TU: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray], slice]] = {
    "mutag": ("y", lambda y: (y + 1) // 2, slice(None)),  # {-1, +1} -> {0, 1}, as the authors
    "proteins": ("Y", lambda y: y, slice(0, 3)),  # columns 0-2: the one-hot node label
    "enzymes": ("Y", lambda y: y, slice(0, 3)),
    "ptc": ("Y", lambda y: y, slice(None)),
}


def load_tu(name: str, *, continuous: bool = False) -> TUData:
    """MUTAG, PROTEINS, ENZYMES or PTC with its 10 folds.

    ``x`` holds the authors' default columns (the one-hot node label for PROTEINS and ENZYMES);
    ``continuous=True`` keeps every column, the continuous attributes included.
    """
    key = name.lower()
    if key not in _TU:
        raise DataError(f"no TU dataset {name!r}; known: {', '.join(_TU)}")
    label_key, transform, default_cols = _TU[key]
    path = _file("tu", key, f"{key}.mat")
    mat = _load_mat(path, ("A", "F", label_key))
    adjs, feats = np.asarray(mat["A"]).reshape(-1), np.asarray(mat["F"]).reshape(-1)
    if adjs.shape != feats.shape:
        raise DataError(f"{path}: A has {adjs.size} graphs but F has {feats.size}")
    cols = slice(None) if continuous else default_cols
    graphs = []
    for i, (a, f) in enumerate(zip(adjs, feats, strict=True)):
        f = np.asarray(f, dtype=np.float64)
        if f.ndim != 2:
            raise DataError(f"{path}: graph {i}: F must be 2-D, got shape {f.shape}")
        try:
            graphs.append(from_adjacency(np.asarray(a), name=f"{key}:{i}", x=f[:, cols]))
        except GraphError as e:
            raise DataError(f"{path}: graph {i}: {e}") from e
    y = np.asarray(mat[label_key]).reshape(-1).astype(np.int64)
    if y.shape != (len(graphs),):
        raise DataError(f"{path}: {label_key} has {y.size} labels for {len(graphs)} graphs")
    edge_attr = None
    if "TA" in mat:
        edge_attr = [np.asarray(t) for t in np.asarray(mat["TA"]).reshape(-1)]
        for i, (t, g) in enumerate(zip(edge_attr, graphs, strict=True)):
            if t.shape[:2] != g.adjacency.shape or not np.array_equal(t.sum(-1), g.adjacency):
                raise DataError(f"{path}: graph {i}: TA does not sum to A over its last axis")
    return TUData(key, graphs, transform(y), _tu_folds(key, len(graphs)), edge_attr)


def _tu_folds(key: str, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    folds = []
    everything = np.arange(count)
    for k in range(1, 11):
        parts = []
        for part in ("train", "test"):
            path = _file("tu", key, "10fold_idx", f"{part}_idx-{k}.txt")
            try:
                idx = np.loadtxt(path, dtype=np.int64, ndmin=1)
            except ValueError as e:
                raise DataError(f"{path}: not one integer per line ({e})") from e
            parts.append(_index(path, f"{part} indices", idx, count))
        train, test = parts
        if np.intersect1d(train, test).size or not np.array_equal(
            np.union1d(train, test), everything
        ):
            raise DataError(f"fold {k} of {key}: train and test must partition the {count} graphs")
        folds.append((train, test))
    return folds


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class DatasetInfo:
    """A registered dataset: its loader, its files (relative to the data folder), a summary."""

    name: str
    loader: Callable[[], Any]
    files: tuple[str, ...]
    summary: str


DATASETS: dict[str, DatasetInfo] = {
    info.name: info
    for info in (
        DatasetInfo("graph8c", load_graph8c, ("graph8c/graph8c.g6",), "11117 graphs, 8 nodes"),
        DatasetInfo("sr25", load_sr25, ("sr25/sr251256.g6",), "15 srg(25,12,5,6) graphs"),
        DatasetInfo("exp", load_exp, ("exp/exp.npz",), "600 1-WL-equivalent pairs, SAT labels"),
        DatasetInfo(
            "randomgraph",
            load_randomgraph,
            ("randomgraph/dataset1.npz",),
            "5000 ER graphs with substructure counts",
        ),
        DatasetInfo(
            "twodgrid30",
            load_twodgrid30,
            ("twodgrid30/TwoDGrid30.mat",),
            "30x30 grid, 3 filtering instances",
        ),
        *(
            DatasetInfo(
                tu,
                partial(load_tu, tu),
                (f"tu/{tu}/{tu}.mat",),
                f"TU {tu.upper()}, 10 folds",
            )
            for tu in _TU
        ),
        DatasetInfo(
            "brec",
            load_brec,
            ("brec/brec_pairs.g6", "brec/categories.json"),
            "BREC: 400 non-isomorphic pairs in 4 categories",
        ),
        DatasetInfo(
            "paper_pairs",
            load_paper_pairs,
            ("paper_pairs/paper_pairs.g6",),
            "the paper's six example graphs",
        ),
    )
}


def load(name: str) -> Any:
    """Load a dataset by its registry name (see :data:`DATASETS`)."""
    key = name.lower().removeprefix("tu/")
    if key not in DATASETS:
        raise DataError(f"no dataset {name!r}; known: {', '.join(DATASETS)}")
    return DATASETS[key].loader()


# --------------------------------------------------------------------------- witnesses


def witness_classes() -> tuple[PairClass, ...]:
    """The data folder's witness classes for ``matlang.classify(datasets=True)``: graph8c's 1-WL
    classes, EXP's 1-WL-equivalent pairs and sr25 (verified once per data folder, cached);
    empty without a data folder."""
    if not data_available():
        return ()
    return _witness_classes(str(data_root()))


@lru_cache(maxsize=4)
def _witness_classes(root: str) -> tuple[PairClass, ...]:
    from matlang.runtime import datasets
    from matlang.runtime.wl import classes, pair_equivalence

    out: list[PairClass] = []
    if datasets.data_available("graph8c"):
        gs = datasets.load_graph8c()
        for c in classes(gs, "1-wl"):
            if len(c) > 1:
                out.append(
                    PairClass(
                        1,
                        "graph8c 1-WL class",
                        tuple(gs[i].with_name(None) for i in c),
                        tuple(f"graph8c[{i}]" for i in c),
                    )
                )
    if datasets.data_available("exp"):
        exp = datasets.load_exp()
        ok = pair_equivalence(exp.graphs, exp.pairs, "1-wl")
        for (i, j), eq in zip(exp.pairs.tolist(), ok.tolist()):
            if eq:
                g, h = exp.graphs[i], exp.graphs[j]
                out.append(
                    PairClass(
                        1,
                        "EXP 1-WL-equivalent pair",
                        (Graph(g.adjacency), Graph(h.adjacency)),
                        (f"exp[{i}]", f"exp[{j}]"),
                    )
                )
    if datasets.data_available("sr25"):
        gs = datasets.load_sr25()
        for c in classes(gs, "3-wl"):
            if len(c) > 1:
                out.append(
                    PairClass(
                        3,
                        "sr25 strongly regular graphs",
                        tuple(gs[i].with_name(None) for i in c),
                        tuple(f"sr25[{i}]" for i in c),
                    )
                )
    return tuple(out)
