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
#: The most quotients (independent partitions, times the root classes of a rooted count) a
#: spasm enumerates: about 1 ms of plain Python each, so at most ~30 s on one core. Counted
#: before anything is enumerated (:func:`partition_count`).
MAX_QUOTIENTS = 25_000
#: The most steps (``n`` to the number of nodes an elimination step joins) a homomorphism count
#: by :func:`hom_count` may take, checked before the einsum allocates its ``n^k`` table.
MAX_HOM_STEPS = 10**8


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
    return _coloured_isomorphic(g, cg, h, ch)


def _stable(g: SmallGraph, root: int | None) -> list[int]:
    """g's stable colour-refinement colours (the root apart): canonical, so an isomorphism
    maps colours to equal colours, and two graphs' colourings can be compared directly."""
    start = [0] * g.n
    if root is not None:
        start[root] = 1
    return _refine(g, start)


def _coloured_isomorphic(g: SmallGraph, cg: list[int], h: SmallGraph, ch: list[int]) -> bool:
    """Whether an isomorphism g → h maps each colour ``cg`` to the same colour ``ch``."""
    if g.n != h.n or len(g.edges) != len(h.edges) or sorted(cg) != sorted(ch):
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
    """|Aut(g)| by the orbit–stabiliser chain: the product over v of the orbit of v under the
    automorphisms fixing 0..v-1, each orbit point found by one search for an automorphism (the
    first one found settles it) — not by listing the automorphisms (10! of K10)."""
    total = 1
    for v in range(g.n):
        fixed = {u: u for u in range(v)}
        total *= sum(1 for w in range(g.n) if _automorphism_exists(g, {**fixed, v: w}))
    return total


def _automorphism_exists(g: SmallGraph, start: dict[int, int]) -> bool:
    """Whether an automorphism of g extends the partial map ``start``."""
    nb = g.neighbours
    if len(set(start.values())) != len(start):
        return False
    image = dict(start)
    for u, w in start.items():
        if len(nb[u]) != len(nb[w]):
            return False
        for x, y in start.items():
            if (x in nb[u]) != (y in nb[w]):
                return False
    used = set(image.values())
    rest = [v for v in range(g.n) if v not in image]

    def extend(i: int) -> bool:
        if i == len(rest):
            return True
        v = rest[i]
        for w in range(g.n):
            if w in used or len(nb[w]) != len(nb[v]):
                continue
            if all((image[u] in nb[w]) == (u in nb[v]) for u in image):
                image[v] = w
                used.add(w)
                if extend(i + 1):
                    return True
                del image[v]
                used.discard(w)
        return False

    return extend(0)


# --------------------------------------------------------------------------- treewidth


def _at_most_two(g: SmallGraph) -> bool:
    """Whether treewidth(g) ≤ 2, by the reduction rules of partial 2-trees (Arnborg and
    Proskurowski 1986): a graph has treewidth at most 2 exactly when deleting nodes of degree
    ≤ 1 and replacing a node of degree 2 by an edge between its neighbours empties it."""
    adj = {v: set(g.neighbours[v]) for v in range(g.n)}
    changed = True
    while adj and changed:
        changed = False
        for v in list(adj):
            nbrs = adj[v]
            if len(nbrs) > 2:
                continue
            if len(nbrs) == 2:
                a, b = nbrs
                adj[a].add(b)
                adj[b].add(a)
            for w in nbrs:
                adj[w].discard(v)
            del adj[v]
            changed = True
    return not adj


def treewidth(g: SmallGraph) -> int:
    """The exact treewidth, by dynamic programming over vertex sets (Bodlaender et al. 2012):
    TW(S) = min over v ∈ S of max(TW(S − v), |Q(S − v, v)|), where Q(S, v) are the vertices
    outside S ∪ {v} reachable from v through S."""
    n = g.n
    if n <= 1 or not g.edges:
        return 0
    if g.is_forest():
        return 1
    if _at_most_two(g):  # most quotients: no 2ⁿ table
        return 2
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


def partition_count(g: SmallGraph) -> int:
    """How many partitions of V(g) into independent sets there are (what
    :func:`independent_partitions` yields), by a sum over subsets — without enumerating them:
    ``f(S) = Σ f(S ∖ I)`` over the independent ``I ⊆ S`` holding S's lowest node."""
    n = g.n
    nbr = [sum(1 << w for w in g.neighbours[v]) for v in range(n)]
    independent = [True] * (1 << n)
    for s in range(1, 1 << n):
        low = (s & -s).bit_length() - 1
        rest = s & (s - 1)
        independent[s] = independent[rest] and not (nbr[low] & rest)
    f = [0] * (1 << n)
    f[0] = 1
    for s in range(1, 1 << n):
        low = s & -s
        rest = s ^ low
        total = 0
        sub = rest
        while True:  # every subset of the rest, with the lowest node added
            i = sub | low
            if independent[i]:
                total += f[s ^ i]
            if sub == 0:
                break
            sub = (sub - 1) & rest
        f[s] = total
    return f[(1 << n) - 1]


def check_work(p: SmallGraph, roots: int) -> None:
    """Refuse, before enumerating, a spasm of more than :data:`MAX_QUOTIENTS` quotients
    (``roots``: the root classes a rooted count enumerates it for)."""
    count = partition_count(p) * roots
    if count > MAX_QUOTIENTS:
        what = f" for each of {roots} classes of roots" if roots > 1 else ""
        raise PatternError(
            f"a pattern with {p.n} nodes and {len(p.edges)} edges has {count} quotients to "
            f"enumerate ({count // roots} partitions into independent sets{what}), past the "
            f"limit MAX_QUOTIENTS = {MAX_QUOTIENTS} (matlang.spasm): about 1 ms each; count a "
            "smaller pattern" + (" or the unrooted count" if roots > 1 else "")
        )


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
    if root is None:
        check_work(p, 1)
    aut = automorphisms(p)
    # invariant → [[quotient, root, summed μ], ...] of pairwise non-isomorphic quotients
    # the stable colours of each quotient are computed once: they key its bucket and restrict
    # the isomorphism search (a joint refinement per comparison cost ~3× as much)
    buckets: dict[object, list[list]] = {}
    for blocks in independent_partitions(p):
        q, where = quotient(p, blocks)
        r = None if root is None else where[root]
        colours = _stable(q, r)
        bucket = buckets.setdefault((q.n, len(q.edges), tuple(sorted(colours))), [])
        entry = next((e for e in bucket if _coloured_isomorphic(e[0], e[3], q, colours)), None)
        if entry is None:
            entry = [q, r, 0, colours]
            bucket.append(entry)
        entry[2] += mobius(blocks)
    out = [
        Quotient(q, Fraction(c, aut), treewidth(q), r)
        for bucket in buckets.values()
        for q, r, c, _ in bucket
        if c != 0
    ]
    out.sort(key=lambda x: (-x.graph.n, -len(x.graph.edges)))
    return out


def rooted_spasm(p: SmallGraph) -> list[Quotient]:
    """The per-node count: copies of P through node v of G as Σ_Q coefficient · hom_root(Q)(v),
    from inj_r(P, G)(v) (copies with r on v) summed over P's nodes r, divided by |Aut(P)|."""
    if p.n > MAX_NODES:
        raise PatternError(f"patterns have at most {MAX_NODES} nodes, got {p.n}")
    # roots in one orbit of Aut(P) have the same rooted spasm: one per orbit, times its size
    orbits: list[list[int]] = []
    for r in range(p.n):
        home = next((o for o in orbits if isomorphic(p, p, o[0], r)), None)
        if home is None:
            orbits.append([r])
        else:
            home.append(r)
    check_work(p, len(orbits))
    groups: list[Quotient] = []
    seen: dict[object, list[tuple[int, list[int]]]] = {}  # colours → [(group, colours)]
    for orbit in orbits:
        for q in spasm(p, root=orbit[0]):
            q = Quotient(q.graph, q.coefficient * len(orbit), q.treewidth, q.root)
            colours = _stable(q.graph, q.root)
            bucket = seen.setdefault(
                (q.graph.n, len(q.graph.edges), tuple(sorted(colours))), []
            )
            for i, cs in bucket:
                old = groups[i]
                if _coloured_isomorphic(old.graph, cs, q.graph, colours):
                    groups[i] = Quotient(
                        old.graph, old.coefficient + q.coefficient, old.treewidth, old.root
                    )
                    break
            else:
                bucket.append((len(groups), colours))
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
        if n ** len(names) > MAX_HOM_STEPS:
            raise PatternError(
                f"a homomorphism count of a {f.n}-node graph with {len(f.edges)} edges on a "
                f"{n}-node graph takes {n}^{len(names)} steps, past the limit MAX_HOM_STEPS = "
                "10^8 (matlang.spasm)"
            )
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
    "MAX_HOM_STEPS",
    "MAX_NODES",
    "MAX_QUOTIENTS",
    "check_work",
    "partition_count",
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
