"""Table 3's last column: binary classification of planar graphs by the frequency of their signal.

The paper takes this dataset from Balcilar et al. (ICLR 2021, "Analyzing the expressive power of
graph neural networks in a spectral perspective"): 5,000 planar graphs, 3,000 / 1,000 / 1,000
to train, validate and test, binary cross-entropy. Their file (``bandclass.mat``) is not
published; the procedure that makes it is (``prepare_bandclass_dataset.py`` of
balcilar/gnn-spectral-expressive-power, read to learn it), and :func:`make_bandclass` follows
it with a draw of its own:

- a 200 × 200 image of ``sin(4π f x / 200)`` (stripes of frequency ``f``), rotated by an angle
  in U(−90°, 90°) (cubic spline, grown to hold the rotation), and its central 100 × 100 window
  shifted down by U{0, …, 9} rows;
- 200 seed pixels drawn uniformly; each pixel belongs to its nearest seed (the Voronoi cells,
  which the authors' watershed of the distance map gives), a node per cell, an edge between two
  cells that share a pixel side (a planar graph); the node's signal is the image's mean over its
  cell. The authors draw again any graph with a node of degree 0, which two seeds on one pixel
  make (one of them gets no cell): the seeds are drawn as distinct pixels, the same law;
- graphs come in pairs, one of each class: class 1 with ``f`` in U(2, 2.5) or U(4, 4.5) (even
  odds), class 0 with ``f`` uniform on [1, 5] outside [1.9, 2.6] and [3.9, 4.6] (drawn until it
  falls there); the first 3,000 graphs train, the next 1,000 validate, the last 1,000 test.

The one node feature is the signal (the authors' dataset class reads one column). Generating
5,000 graphs takes a minute or two; :func:`bandclass_splits` keeps them under
``.matlang_cache/`` of the working folder (one file per draw and size), so every model of a draw
sees the same graphs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from matlang.errors import DataError

#: Graphs and nodes per graph of the paper's dataset.
GRAPHS = 5000
NODES = 200
#: The image: a (2·RES)² sinusoid, rotated, cut to RES × RES.
RES = 100
#: Where generated datasets are kept (the project's cache folder, ignored by git).
CACHE = Path(".matlang_cache")


@dataclass(frozen=True)
class Item:
    """One graph in PyG's format (what :func:`benchmarks.paper.table4.to_graphs` reads):
    ``x`` (n, 1) the signal, ``edge_index`` (2, E) both directions, ``y`` the class, and the
    frequency it was drawn with."""

    x: np.ndarray
    edge_index: np.ndarray
    y: np.ndarray
    frequency: float


def stripes(frequency: float, angle: float, shift: int) -> np.ndarray:
    """The RES × RES window of the rotated sinusoid of ``frequency`` (see the module)."""
    from scipy import ndimage

    x = np.arange(2 * RES, dtype=np.float64)[None, :].repeat(2 * RES, 0)
    image = np.sin(x / (2 * RES) * 4 * frequency * np.pi)
    rotated = ndimage.rotate(image, angle)
    rows, cols = rotated.shape
    top = shift + (rows - RES) // 2
    left = (cols - RES) // 2
    return np.asarray(rotated[top : top + RES, left : left + RES])


def voronoi_cells(res: int, seeds: np.ndarray) -> np.ndarray:
    """``(res, res)``: the seed nearest to each pixel of a ``res × res`` image (``seeds``:
    ``(k, 2)`` rows and columns; between equally near seeds, any one of them)."""
    from scipy.spatial import cKDTree

    grid = np.stack(np.meshgrid(np.arange(res), np.arange(res), indexing="ij"), -1).reshape(-1, 2)
    return np.asarray(cKDTree(seeds).query(grid)[1]).reshape(res, res)


def voronoi_graph(
    image: np.ndarray, rng: np.random.Generator, nodes: int = NODES
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(signal (nodes,), edges (2, E))`` of the cells of ``nodes`` random seed pixels on
    ``image``, or ``None`` when a cell has no pixel or no neighbour (draw again)."""
    res = image.shape[0]
    # distinct pixels: the authors' uniform draw, kept only when no two seeds share a pixel
    # (a shared pixel leaves a cell without pixels, a node of degree 0, and they draw again)
    flat = rng.choice(res * res, size=nodes, replace=False)
    labels = voronoi_cells(res, np.stack([flat // res, flat % res], 1))
    counts = np.bincount(labels.ravel(), minlength=nodes)
    if counts.min() == 0:
        return None
    signal = np.bincount(labels.ravel(), weights=image.ravel(), minlength=nodes) / counts
    pairs = np.concatenate(
        [
            np.stack([labels[:-1, :].ravel(), labels[1:, :].ravel()], 1),
            np.stack([labels[:, :-1].ravel(), labels[:, 1:].ravel()], 1),
        ]
    )
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    adjacency = np.zeros((nodes, nodes), dtype=bool)
    adjacency[pairs[:, 0], pairs[:, 1]] = True
    adjacency |= adjacency.T
    if not adjacency.any(1).all():
        return None
    return signal, np.stack(np.nonzero(adjacency))


def class_frequency(label: int, rng: np.random.Generator) -> float:
    """A frequency of class ``label`` (see the module)."""
    if label == 1:
        low = 2.0 if rng.uniform() < 0.5 else 4.0
        return float(rng.uniform(low, low + 0.5))
    while True:
        f = float(rng.uniform(1.0, 5.0))
        if f < 1.9 or 2.6 < f < 3.9 or f > 4.6:
            return f


def make_bandclass(graphs: int = GRAPHS, seed: int = 0, nodes: int = NODES) -> list[Item]:
    """``graphs`` graphs (an even number), in pairs of class 1 then class 0, from ``seed``."""
    if graphs < 2 or graphs % 2:
        raise DataError(f"bandclass: an even number of graphs (pairs of classes), got {graphs}")
    rng = np.random.default_rng(seed)
    items: list[Item] = []
    for k in range(graphs):
        label = 1 - k % 2
        f = class_frequency(label, rng)
        image = stripes(f, float(rng.uniform(-90.0, 90.0)), int(rng.integers(0, 10)))
        drawn = None
        while drawn is None:
            drawn = voronoi_graph(image, rng, nodes)
        signal, edges = drawn
        items.append(Item(signal[:, None], edges, np.array([label]), f))
    return items


def _cache_file(cache: Path, graphs: int, seed: int, nodes: int) -> Path:
    tag = hashlib.sha1(Path(__file__).read_bytes()).hexdigest()[:10]  # the generator's version
    return cache / f"bandclass-{graphs}x{nodes}-seed{seed}-{tag}.npz"


def load_bandclass(
    graphs: int = GRAPHS, seed: int = 0, nodes: int = NODES, cache: Path | None = CACHE
) -> list[Item]:
    """:func:`make_bandclass`, kept in the folder ``cache`` (a file per size, seed and version
    of this module; ``None``: generated every time) and read back from there (a file that
    cannot be read is generated again)."""
    if cache is None:
        return make_bandclass(graphs, seed, nodes)
    path = _cache_file(cache, graphs, seed, nodes)
    if path.exists():
        try:
            with np.load(path) as z:
                ends = np.cumsum(z["edge_counts"])
                edges = np.split(z["edges"], ends[:-1], axis=1)
                return [
                    Item(z["signal"][k][:, None], edges[k], z["y"][k : k + 1], float(z["f"][k]))
                    for k in range(graphs)
                ]
        except (OSError, ValueError, KeyError, IndexError):
            pass  # a broken or foreign file: made again below
    items = make_bandclass(graphs, seed, nodes)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(
        tmp,
        signal=np.stack([it.x[:, 0] for it in items]),
        edges=np.concatenate([it.edge_index for it in items], 1),
        edge_counts=np.array([it.edge_index.shape[1] for it in items]),
        y=np.concatenate([it.y for it in items]),
        f=np.array([it.frequency for it in items]),
    )
    tmp.replace(path)
    return items


def bandclass_splits(
    graphs: int = GRAPHS, seed: int = 0, nodes: int = NODES, cache: Path | None = CACHE
) -> dict[str, Sequence[Any]]:
    """``{"train", "val", "test"}`` of the generated dataset (:func:`load_bandclass`), in the
    paper's proportions (3 : 1 : 1, in the order of generation)."""
    items = load_bandclass(graphs, seed, nodes, cache)
    cut = [round(graphs * f) for f in (0.6, 0.8)]
    return {"train": items[: cut[0]], "val": items[cut[0] : cut[1]], "test": items[cut[1] :]}


__all__ = [
    "GRAPHS",
    "NODES",
    "Item",
    "bandclass_splits",
    "class_frequency",
    "load_bandclass",
    "make_bandclass",
    "stripes",
    "voronoi_cells",
    "voronoi_graph",
]
