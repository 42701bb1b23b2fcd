"""Witness pairs: lower bounds on the WL level a sentence needs.

A *class* is a set of graphs that one fragment provably cannot tell apart:

* tag 1 (**1-WL**): 1-WL-equivalent graphs (Remark 1: no L1⁺ sentence separates them) — the
  paper's decalin / bicyclopentyl, unions of cycles, random d-regular graphs with equal n and d,
  non-regular pairs on 8 nodes from graph8c; with ``datasets``: graph8c's 1-WL classes and EXP.
* tag 2 (**L2**): cospectral d-regular graphs with equal n. For a regular graph every vector an
  L2⁺ sentence builds is a constant multiple of 𝟏 and every matrix a polynomial in A and 𝟏𝟏ᵀ, so
  each scalar is a function of n, d and the spectrum — the paper's cospectral_G / cospectral_H and
  Godsil–McKay switched pairs.
* tag 3 (**3-WL**): 3-WL-equivalent graphs (Remark 3) — rook4x4 / shrikhande; with ``datasets``:
  the 15 strongly regular graphs of sr25.

If a sentence separates two graphs of a tag-k class, it needs more than Lk: that pair is a
*witness*. A sentence whose (normalised) fragment is Lk and that separates a class of tag ≥ k
would contradict the theory: that is a bug of the analyzer, and :class:`SoundnessError` is raised.

Values are compared exactly (ints, Fractions); float values (sentences with exp, sqrt, ...) count
as different only beyond a relative 1e-6 and as equal within 1e-9 (in between: no conclusion). A
vector sentence is compared as the multiset of its entries, a matrix through 𝟏ᵀM𝟏 (both stay in
the sentence's own fragment). Graphs on which evaluation fails (1/0, log 0) are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from matlang import ast, limits
from matlang.errors import MatlangError
from matlang.graphs import Graph, from_adjacency, from_graph6, named

#: Names of the tags, as the witness JSON writes them.
TAGS: dict[int, str] = {1: "1-WL", 2: "L2", 3: "3-WL"}


class SoundnessError(RuntimeError):
    """A sentence separated graphs that its own fragment cannot separate: an analyzer bug."""


# --------------------------------------------------------------------------- built-in data

# Random d-regular graphs with pairwise different spectra (so pairwise non-isomorphic), made by
# runtime.generators.random_regular with seeds 1..5 for (n, d) in this order.
_REGULAR: dict[tuple[int, int], tuple[str, ...]] = {
    (8, 3): ("G`iRIo", "GV`@YW", "GDhNAg", "GYgSYg", "GcLrCS"),
    (10, 3): ("Ib@KOegHO", "IaaQPGqIO", "I_gohPBs?", "IB?KsZ_X?", "IwcX?LACW", "IOZP?eWOo"),
    (12, 3): (
        "KASaDGs__SOB",
        "K?BJ?_iSSQU?",
        "KAd`?eG@LCGI",
        "K@Q\\@?POKSGI",
        "K_SQD?SI_LSG",
        "KE_J??eKQIPG",
    ),
    (10, 4): ("IWJQ^_YeG", "IasdKdsJO", "I[pSHlgEg", "IKwo{LooW", "IAmuAMqYO", "IFy@BNEF_"),
    (12, 4): ("KwKaK_REW[W`", "KsLOgSDQLDKI", "Kq_PO[QXTHJC", "KOJRgQPeR@HH", "KWgEBKUf?hJ@"),
}

# Cospectral, non-isomorphic (2-FWL separates them) 4-regular pairs: a random regular graph and
# its Godsil–McKay switch (runtime.generators.cospectral_regular_pairs, seeds 11 and 13).
_COSPECTRAL: tuple[tuple[str, str], ...] = (
    ("IqKU`ZcBo", "IW`[rHRm?"),
    ("IMQLHVSMO", "IVXS?[Nw_"),
    ("I@o}YapwO", "IqTTHoeaW"),
    ("KUgQISsW?Roq", "K{DWWEBIIAeH"),
    ("KCYATJoR_eE`", "KCdqLOBOn?fC"),
)

# Non-regular 1-WL-equivalent pairs on 8 nodes with different spectra (the first eight such
# classes of graph8c, all connected graphs on 8 nodes).
_NONREGULAR: tuple[tuple[str, str], ...] = (
    ("G?`DQk", "G?`F?{"),
    ("G?`Drg", "G?`F`w"),
    ("G?`Drk", "G?`F`{"),
    ("G?`cuG", "G?bBf?"),
    ("G?`eKw", "G?bFF_"),
    ("G?`vF?", "G?otTG"),
    ("G?bDrg", "G?bF`w"),
    ("G?bDrk", "G?bF`{"),
)


def disjoint_union(*graphs: Graph) -> Graph:
    """The disjoint union of graphs (block-diagonal adjacency), unnamed."""
    n = sum(g.num_nodes for g in graphs)
    a = np.zeros((n, n), dtype=np.int64)
    at = 0
    for g in graphs:
        k = g.num_nodes
        a[at : at + k, at : at + k] = g.adjacency
        at += k
    return from_adjacency(a)


# --------------------------------------------------------------------------- classes


@dataclass(frozen=True, eq=False)
class PairClass:
    """Graphs that the fragment ``tag`` cannot tell apart; ``ids`` say where each comes from."""

    tag: int
    source: str
    graphs: tuple[Graph, ...]
    ids: tuple[str, ...] = ()

    def id_of(self, i: int) -> str:
        return self.ids[i] if self.ids else self.graphs[i].label()


@dataclass(frozen=True, eq=False)
class Witness:
    """Two graphs that the fragment ``level`` cannot separate but the sentence does."""

    level: int
    source: str
    graphs: tuple[Graph, Graph]
    values: tuple[Any, Any]
    ids: tuple[str, str]

    @property
    def level_name(self) -> str:
        return TAGS[self.level]

    @property
    def pair(self) -> tuple[str, str]:
        """Built-in names where the graph has one, else graph6 strings."""
        return self.graphs[0].label(), self.graphs[1].label()

    def to_json(self) -> dict[str, Any]:
        from matlang.evaluator import to_json

        return {
            "level": self.level_name,
            "pair": list(self.pair),
            "values": [to_json(v) for v in self.values],
            "source": self.source,
        }

    def __str__(self) -> str:
        from matlang.evaluator import format_value as show

        a, b = self.pair
        return (
            f"{self.level_name}-equivalent pair {a} / {b} ({self.source}): "
            f"{show(self.values[0])} ≠ {show(self.values[1])}"
        )


def _builtin_classes() -> list[PairClass]:
    paper = [named(n) for n in ("decalin", "bicyclopentyl")]
    out = [
        PairClass(
            3,
            "paper: 4×4 rook's graph and Shrikhande graph",
            (named("rook4x4"), named("shrikhande")),
        ),
        PairClass(
            2, "paper: cospectral 4-regular pair", (named("cospectral_G"), named("cospectral_H"))
        ),
        PairClass(1, "paper: decalin and bicyclopentyl", tuple(paper)),
    ]
    c3, c4 = named("cycle3"), named("cycle4")
    out += [
        PairClass(
            1, "2-regular: a 6-cycle and two triangles", (named("cycle6"), disjoint_union(c3, c3))
        ),
        PairClass(
            1,
            "2-regular: a 7-cycle and a triangle with a 4-cycle",
            (named("cycle7"), disjoint_union(c3, c4)),
        ),
        PairClass(
            1, "2-regular: an 8-cycle and two 4-cycles", (named("cycle8"), disjoint_union(c4, c4))
        ),
    ]
    for (n, d), codes in _REGULAR.items():
        out.append(
            PairClass(
                1, f"random {d}-regular graphs on {n} nodes", tuple(from_graph6(c) for c in codes)
            )
        )
    for g6, h6 in _COSPECTRAL:
        g, h = from_graph6(g6), from_graph6(h6)
        d = int(g.adjacency[0].sum())
        out.append(PairClass(2, f"Godsil–McKay cospectral {d}-regular pair", (g, h)))
    for g6, h6 in _NONREGULAR:
        out.append(
            PairClass(
                1,
                "non-regular 1-WL-equivalent pair on 8 nodes (graph8c)",
                (from_graph6(g6), from_graph6(h6)),
            )
        )
    return out


# --------------------------------------------------------------------------- comparing values

_EQUAL, _APART = 1e-9, 1e-6


def _readout(v: Any, shape: ast.Shape) -> Any:
    """What two graphs' values are compared by: a scalar itself, a vector's sorted entries, a
    matrix's sum 𝟏ᵀM𝟏."""
    if shape.is_scalar:
        return v
    arr = np.asarray(v)
    if shape.is_vector:
        flat = arr.reshape(-1)
        if flat.dtype == object:
            return sorted(flat.tolist())
        return np.sort(flat).tolist()
    if arr.dtype == object:
        return sum(arr.reshape(-1).tolist(), 0)
    return arr.sum().item()


def _scalar_relation(a: Any, b: Any) -> bool | None:
    """True: equal; False: provably different; None: too close to call (floats)."""
    if isinstance(a, float) or isinstance(b, float):
        x, y = float(a), float(b)
        if np.isnan(x) or np.isnan(y):
            return None
        gap = abs(x - y)
        scale = max(1.0, abs(x), abs(y))
        if gap <= _EQUAL * scale:
            return True
        if gap > _APART * scale:
            return False
        return None
    return bool(Fraction(a) == Fraction(b))


def relation(a: Any, b: Any) -> bool | None:
    """Equal (True), different (False) or undecided (None), for readouts."""
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        out: bool | None = True
        for x, y in zip(a, b):
            r = _scalar_relation(x, y)
            if r is False:
                return False
            if r is None:
                out = None
        return out
    return _scalar_relation(a, b)


# --------------------------------------------------------------------------- the library


class WitnessLibrary:
    """Classes of graphs to search for witnesses, best (highest) tag first."""

    def __init__(self, classes: Sequence[PairClass]) -> None:
        self.classes = list(classes)

    @staticmethod
    def default(extra: Sequence[PairClass] = ()) -> WitnessLibrary:
        """The built-in library (built once), plus ``extra`` classes (the data folder's, from
        :func:`runtime.datasets.witness_classes`, when ``matlang.classify(datasets=True)``)."""
        lib = _builtin()
        if not extra:
            return lib
        return WitnessLibrary([*lib.classes, *extra])

    @property
    def graphs(self) -> list[Graph]:
        return [g for c in self.classes for g in c.graphs]

    def search(
        self,
        expr: ast.Expr,
        level: int,
        *,
        seconds: float = limits.WITNESS_SECONDS,
        notes: list[str] | None = None,
    ) -> Witness | None:
        """A witness for a sentence whose fragment is L``level``: a pair from a class of the
        highest tag below ``level`` that the sentence separates; None if there is none.

        Classes of tag ≥ ``level`` are evaluated too, and raise :class:`SoundnessError` when the
        sentence separates them. The search stops after ``seconds`` (None then, and a line
        saying so appended to ``notes``).
        """
        import time

        from matlang.evaluator import evaluate_graph

        memo: dict[int, Any] = {}
        fail = object()
        deadline = time.monotonic() + seconds

        def value(g: Graph) -> Any:
            key = id(g)
            if key not in memo:
                if time.monotonic() > deadline:
                    raise _OutOfTime
                try:
                    v = evaluate_graph(expr, g)
                    memo[key] = _readout(v, expr.shape)
                except (MatlangError, ZeroDivisionError, OverflowError, FloatingPointError):
                    memo[key] = fail
            return memo[key]

        def separated(cls: PairClass) -> tuple[int, int] | None:
            first: tuple[int, Any] | None = None
            for i, g in enumerate(cls.graphs):
                v = value(g)
                if v is fail:
                    continue
                if first is None:
                    first = (i, v)
                elif relation(first[1], v) is False:
                    return first[0], i
            return None

        try:
            return self._search(expr, level, separated, value)
        except _OutOfTime:
            if notes is not None:
                limit = limits.named("WITNESS_SECONDS")
                notes.append(f"witness search stopped after {seconds:g} s ({limit})")
            return None

    def _search(self, expr: ast.Expr, level: int, separated: Any, value: Any) -> Witness | None:
        for cls in self.classes:
            if cls.tag >= level:
                hit = separated(cls)
                if hit is not None:
                    from matlang.printer import to_text

                    i, j = hit
                    raise SoundnessError(
                        f"internal error: {to_text(expr)} is classified L{level} but separates "
                        f"the {TAGS[cls.tag]}-equivalent graphs {cls.id_of(i)} and {cls.id_of(j)} "
                        f"({cls.source}): {value(cls.graphs[i])!r} ≠ {value(cls.graphs[j])!r}. "
                        "Please report this bug."
                    )
        for tag in range(level - 1, 0, -1):
            for cls in self.classes:
                if cls.tag != tag:
                    continue
                hit = separated(cls)
                if hit is not None:
                    i, j = hit
                    source = cls.source
                    if cls.ids:
                        source += f": {cls.ids[i]} and {cls.ids[j]}"
                    return Witness(
                        tag,
                        source,
                        (cls.graphs[i], cls.graphs[j]),
                        (value(cls.graphs[i]), value(cls.graphs[j])),
                        (cls.id_of(i), cls.id_of(j)),
                    )
        return None


class _OutOfTime(Exception):
    """The witness search ran past its time (caught in :meth:`WitnessLibrary.search`)."""


@lru_cache(maxsize=1)
def _builtin() -> WitnessLibrary:
    return WitnessLibrary(_builtin_classes())


__all__ = [
    "TAGS",
    "PairClass",
    "SoundnessError",
    "Witness",
    "WitnessLibrary",
    "disjoint_union",
    "relation",
]
