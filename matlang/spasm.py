"""Small patterns: canonical forms, automorphisms, treewidth, the spasm and homomorphism counts.

A subgraph count is a fixed linear combination of homomorphism counts (Lovász; Curticapean, Dell
and Marx, STOC 2017)::

    inj(P, G) = Σ_π μ(π) · hom(P/π, G),      μ(π) = Π_{B ∈ π} (−1)^{|B|−1} (|B| − 1)!

over the partitions π of V(P) into independent sets (a block with an edge inside gives a loop,
and a simple G has no hom from a graph with a loop). ``sub(P, G) = inj(P, G) / |Aut(P)|``. The
quotients P/π are simple graphs (parallel edges collapse: hom counts into simple G do not see
multiplicity), grouped by isomorphism into the *spasm* with one coefficient each.

Everything here is plain Python on tiny graphs (a pattern has at most :data:`MAX_NODES` nodes);
:func:`hom_count` counts homomorphisms into a large graph by variable elimination on numpy,
independently of the MATLANG evaluator.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from math import factorial

import numpy as np

from matlang.errors import MatlangError

#: The largest pattern :func:`spasm` accepts (Bell(10) = 115975 partitions).
MAX_NODES = 10


class PatternError(MatlangError):
    """A pattern that cannot be read or is out of range."""


@dataclass(frozen=True)
class SmallGraph:
    """A simple undirected graph on nodes 0..n-1, edges as sorted pairs."""

    n: int
    edges: frozenset[tuple[int, int]]

    @staticmethod
    def of(n: int, edges: Iterable[tuple[int, int]]) -> SmallGraph:
        out = set()
        for u, v in edges:
            if u == v:
                raise PatternError(f"pattern edge ({u}, {v}) is a self-loop")
            if not (0 <= u < n and 0 <= v < n):
                raise PatternError(f"pattern edge ({u}, {v}) names a node outside 0..{n - 1}")
            out.add((min(u, v), max(u, v)))
        return SmallGraph(n, frozenset(out))

    @cached_property
    def neighbours(self) -> tuple[frozenset[int], ...]:
        adj: list[set[int]] = [set() for _ in range(self.n)]
        for u, v in self.edges:
            adj[u].add(v)
            adj[v].add(u)
        return tuple(frozenset(a) for a in adj)

    def adjacency(self) -> np.ndarray:
        a = np.zeros((self.n, self.n), dtype=np.int64)
        for u, v in self.edges:
            a[u, v] = a[v, u] = 1
        return a

    def components(self) -> list[list[int]]:
        seen: set[int] = set()
        out = []
        for s in range(self.n):
            if s in seen:
                continue
            comp, stack = [], [s]
            seen.add(s)
            while stack:
                u = stack.pop()
                comp.append(u)
                for w in self.neighbours[u]:
                    if w not in seen:
                        seen.add(w)
                        stack.append(w)
            out.append(sorted(comp))
        return out

    def is_forest(self) -> bool:
        return len(self.edges) == self.n - len(self.components())

    def relabel(self, order: Sequence[int]) -> SmallGraph:
        """The graph whose node i is node ``order[i]`` of this one."""
        pos = {v: i for i, v in enumerate(order)}
        return SmallGraph.of(self.n, ((pos[u], pos[v]) for u, v in self.edges))


# --------------------------------------------------------------------------- canonical forms


def _refine(g: SmallGraph, colours: list[int]) -> list[int]:
    """Colour refinement (1-WL) to a stable colouring; colours are ranks, so equal inputs on
    isomorphic graphs give corresponding outputs."""
    while True:
        sigs = [
            (colours[v], tuple(sorted(colours[w] for w in g.neighbours[v]))) for v in range(g.n)
        ]
        ranks = {s: i for i, s in enumerate(sorted(set(sigs)))}
        new = [ranks[s] for s in sigs]
        if len(set(new)) == len(set(colours)):
            return new
        colours = new


def _leaves(g: SmallGraph, colours: list[int]) -> Iterator[list[int]]:
    """Individualisation–refinement: every discrete colouring reachable by individualising a
    vertex of the first smallest non-singleton cell and refining."""
    colours = _refine(g, colours)
    if len(set(colours)) == g.n:
        yield colours
        return
    sizes: dict[int, int] = {}
    for c in colours:
        sizes[c] = sizes.get(c, 0) + 1
    target = min((s, c) for c, s in sizes.items() if s > 1)[1]
    for v in range(g.n):
        if colours[v] == target:
            # v gets a colour of its own just below its cell; ranks are kept apart by doubling
            yield from _leaves(
                g, [2 * c + (1 if (c == target and u != v) else 0) for u, c in enumerate(colours)]
            )


def _code(g: SmallGraph, colours: list[int]) -> tuple[tuple[int, int], ...]:
    order = sorted(range(g.n), key=lambda v: colours[v])
    return tuple(sorted(g.relabel(order).edges))


def canonical(g: SmallGraph, root: int | None = None) -> tuple[int, tuple[tuple[int, int], ...]]:
    """A key equal for two graphs exactly when they are isomorphic (with ``root`` mapped to
    root when given)."""
    start = [0] * g.n
    if root is not None:
        start[root] = 1
    return g.n, min(_code(g, c) for c in _leaves(g, start))


def _joint_colours(
    g: SmallGraph, h: SmallGraph, rg: int | None, rh: int | None
) -> tuple[list[int], list[int]]:
    """Stable colours of g and h refined together (so that they are comparable)."""
    union = SmallGraph(g.n + h.n, g.edges | {(u + g.n, v + g.n) for u, v in h.edges})
    start = [0] * union.n
    if rg is not None and rh is not None:
        start[rg] = start[g.n + rh] = 1
    c = _refine(union, start)
    return c[: g.n], c[g.n :]


def isomorphic(g: SmallGraph, h: SmallGraph, rg: int | None = None, rh: int | None = None) -> bool:
    """Whether g ≅ h (with rg mapped to rh when given): colour refinement of both together,
    then backtracking over colour-preserving maps."""
    if g.n != h.n or len(g.edges) != len(h.edges):
        return False
    cg, ch = _joint_colours(g, h, rg, rh)
    if sorted(cg) != sorted(ch):
        return False
    order = sorted(range(g.n), key=lambda v: (sum(cg[x] == cg[v] for x in range(g.n)), v))
    image: dict[int, int] = {}
    used: set[int] = set()
    ng, nh = g.neighbours, h.neighbours

    def extend(i: int) -> bool:
        if i == g.n:
            return True
        v = order[i]
        for w in range(h.n):
            if w in used or ch[w] != cg[v]:
                continue
            if all((image[u] in nh[w]) == (u in ng[v]) for u in image):
                image[v] = w
                used.add(w)
                if extend(i + 1):
                    return True
                del image[v]
                used.discard(w)
        return False

    return extend(0)


def invariant(g: SmallGraph, root: int | None = None) -> tuple[object, ...]:
    """An isomorphism invariant: sizes and the multiset of stable colour-refinement colours."""
    start = [0] * g.n
    if root is not None:
        start[root] = 1
    return g.n, len(g.edges), tuple(sorted(_refine(g, start)))


def automorphisms(g: SmallGraph) -> int:
    """|Aut(g)|, by backtracking over degree-preserving maps."""
    nb = g.neighbours
    count = 0
    image = [-1] * g.n
    used = [False] * g.n

    def extend(v: int) -> None:
        nonlocal count
        if v == g.n:
            count += 1
            return
        for w in range(g.n):
            if used[w] or len(nb[w]) != len(nb[v]):
                continue
            if all((image[u] in nb[w]) == (u in nb[v]) for u in range(v)):
                image[v], used[w] = w, True
                extend(v + 1)
                used[w] = False

    extend(0)
    return count


# --------------------------------------------------------------------------- treewidth


def treewidth(g: SmallGraph) -> int:
    """The exact treewidth, by dynamic programming over vertex sets (Bodlaender et al. 2012):
    TW(S) = min over v ∈ S of max(TW(S − v), |Q(S − v, v)|), where Q(S, v) are the vertices
    outside S ∪ {v} reachable from v through S."""
    n = g.n
    if n <= 1:
        return 0
    nb = [sum(1 << w for w in g.neighbours[v]) for v in range(n)]

    def q(s: int, v: int) -> int:
        seen, stack, out = 1 << v, [v], 0
        while stack:
            u = stack.pop()
            m = nb[u] & ~seen
            seen |= m
            while m:
                w = (m & -m).bit_length() - 1
                m &= m - 1
                if s >> w & 1:
                    stack.append(w)
                else:
                    out += 1
        return out

    tw = [0] * (1 << n)
    tw[0] = -1
    for s in range(1, 1 << n):
        best = n
        m = s
        while m:
            v = (m & -m).bit_length() - 1
            m &= m - 1
            rest = s & ~(1 << v)
            best = min(best, max(tw[rest], q(rest, v)))
        tw[s] = best
    return tw[(1 << n) - 1]


# --------------------------------------------------------------------------- the spasm


def independent_partitions(g: SmallGraph) -> Iterator[list[list[int]]]:
    """Every partition of V(g) into independent sets (restricted growth: node v joins an
    earlier block with no neighbour of v, or opens a new one)."""
    nb = g.neighbours
    blocks: list[list[int]] = []

    def place(v: int) -> Iterator[list[list[int]]]:
        if v == g.n:
            yield [list(b) for b in blocks]
            return
        for b in blocks:
            if not any(u in nb[v] for u in b):
                b.append(v)
                yield from place(v + 1)
                b.pop()
        blocks.append([v])
        yield from place(v + 1)
        blocks.pop()

    return place(0)


def quotient(g: SmallGraph, blocks: Sequence[Sequence[int]]) -> tuple[SmallGraph, list[int]]:
    """g with each block merged to one node (parallel edges collapse), and each node's block."""
    where = [0] * g.n
    for i, b in enumerate(blocks):
        for v in b:
            where[v] = i
    return SmallGraph.of(len(blocks), ((where[u], where[v]) for u, v in g.edges)), where


def mobius(blocks: Sequence[Sequence[int]]) -> int:
    """μ(0̂, π) in the partition lattice: Π (−1)^{|B|−1} (|B| − 1)!."""
    out = 1
    for b in blocks:
        out *= (-1) ** (len(b) - 1) * factorial(len(b) - 1)
    return out


@dataclass(frozen=True)
class Quotient:
    """One graph of the spasm, its coefficient in sub(P, ·) and its treewidth."""

    graph: SmallGraph
    coefficient: Fraction
    treewidth: int
    root: int | None = None  # the root's node, for a rooted spasm


def spasm(p: SmallGraph, *, root: int | None = None) -> list[Quotient]:
    """sub(P, G) = Σ_Q coefficient(Q) · hom(Q, G) over the returned quotients (nonzero
    coefficients only, most nodes first). With ``root``: copies of P with ``root`` on a given
    node v of G as Σ_Q coefficient · hom(Q, G; root's block ↦ v) (see :func:`rooted_spasm`)."""
    if p.n > MAX_NODES:
        raise PatternError(f"patterns have at most {MAX_NODES} nodes, got {p.n}")
    aut = automorphisms(p)
    # invariant → [[quotient, root, summed μ], ...] of pairwise non-isomorphic quotients
    buckets: dict[object, list[list]] = {}
    for blocks in independent_partitions(p):
        q, where = quotient(p, blocks)
        r = None if root is None else where[root]
        bucket = buckets.setdefault(invariant(q, r), [])
        entry = next((e for e in bucket if isomorphic(e[0], q, e[1], r)), None)
        if entry is None:
            entry = [q, r, 0]
            bucket.append(entry)
        entry[2] += mobius(blocks)
    out = [
        Quotient(q, Fraction(c, aut), treewidth(q), r)
        for bucket in buckets.values()
        for q, r, c in bucket
        if c != 0
    ]
    out.sort(key=lambda x: (-x.graph.n, -len(x.graph.edges)))
    return out


def rooted_spasm(p: SmallGraph) -> list[Quotient]:
    """The per-node count: copies of P through node v of G as Σ_Q coefficient · hom_root(Q)(v),
    from inj_r(P, G)(v) (copies with r on v) summed over P's nodes r, divided by |Aut(P)|."""
    groups: list[Quotient] = []
    for r in range(p.n):
        for q in spasm(p, root=r):
            for i, old in enumerate(groups):
                if isomorphic(old.graph, q.graph, old.root, q.root):
                    groups[i] = Quotient(
                        old.graph, old.coefficient + q.coefficient, old.treewidth, old.root
                    )
                    break
            else:
                groups.append(q)
    out = [q for q in groups if q.coefficient != 0]
    out.sort(key=lambda x: (-x.graph.n, -len(x.graph.edges)))
    return out


# --------------------------------------------------------------------------- counting


def _eliminate(
    f: SmallGraph, adjacency: np.ndarray, root: int | None
) -> tuple[list[tuple[tuple[int, ...], np.ndarray]], int]:
    """Variable elimination of F's nodes (all but ``root``) over the factors A[u, v], one per
    edge, smallest scope first; returns the factors left (scopes () or (root,)) and n."""
    a = np.asarray(adjacency)
    n = int(a.shape[0])
    big = n ** max(f.n, 1) >= 2**62  # exact Python ints where int64 could overflow
    a = a.astype(object if big else np.int64)
    factors: list[tuple[tuple[int, ...], np.ndarray]] = [((u, v), a) for u, v in sorted(f.edges)]

    def scope(v: int) -> int:
        return len({x for vs, _ in factors if v in vs for x in vs})

    alive = [v for v in range(f.n) if v != root]
    while alive:
        v = min(alive, key=scope)
        alive.remove(v)
        mine = [fa for fa in factors if v in fa[0]]
        factors = [fa for fa in factors if v not in fa[0]]
        names = sorted({x for vs, _ in mine for x in vs} | {v})
        letters = {x: chr(97 + i) for i, x in enumerate(names)}
        out_vars = tuple(x for x in names if x != v)
        if not mine:
            t = np.array(n, dtype=a.dtype)  # an isolated node: n choices
        else:
            spec = ",".join("".join(letters[x] for x in vs) for vs, _ in mine)
            out = "".join(letters[x] for x in out_vars)
            t = np.asarray(np.einsum(f"{spec}->{out}", *[t for _, t in mine]))
        factors.append((out_vars, t))
    return factors, n


def hom_count(f: SmallGraph, adjacency: np.ndarray) -> int:
    """hom(F, G) as an exact int, by variable elimination over F's nodes on numpy (einsum) —
    independent of the MATLANG evaluator."""
    factors, _ = _eliminate(f, adjacency, None)
    total = 1
    for _, t in factors:
        total *= int(t.item())
    return total


def rooted_hom_count(f: SmallGraph, adjacency: np.ndarray, root: int) -> list[int]:
    """hom(F, G) with ``root`` on each node of G: one exact int per node."""
    factors, n = _eliminate(f, adjacency, root)
    vec = [1] * n
    for vs, t in factors:
        if vs == (root,):
            vec = [x * int(y) for x, y in zip(vec, t.tolist())]
        else:
            vec = [x * int(t.item()) for x in vec]
    return vec


def sub_count(p: SmallGraph, adjacency: np.ndarray) -> Fraction:
    """sub(P, G) through the spasm and :func:`hom_count` (an integer, as a Fraction)."""
    return sum((q.coefficient * hom_count(q.graph, adjacency) for q in spasm(p)), Fraction(0))


__all__ = [
    "MAX_NODES",
    "PatternError",
    "Quotient",
    "SmallGraph",
    "automorphisms",
    "canonical",
    "hom_count",
    "independent_partitions",
    "invariant",
    "isomorphic",
    "mobius",
    "quotient",
    "rooted_hom_count",
    "rooted_spasm",
    "spasm",
    "sub_count",
    "treewidth",
]
