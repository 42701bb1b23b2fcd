"""Patterns to exact counting sentences, with the WL level counting them needs.

``sub(P, G) = Σ_Q μ(P, Q) · hom(Q, G)`` over the spasm of P (:mod:`matlang.spasm`). For a
quotient Q of treewidth ≤ 2, hom(Q, G) is a MATLANG sentence built by series–parallel
elimination of Q's nodes (:func:`hom_expr`): a node of degree 1 folds into its neighbour's vertex
weight (``w_u ⊙ (M w_v)``, L1), a node of degree 2 becomes a matrix product between its
neighbours (``M diag(w_v) N``, L1), parallel paths meet in ⊙ (L3) — except the last two, which
close a trace (``tr(diag(w_u) M diag(w_x) Nᵀ)``, L2) — and a component ends in ``𝟏ᵀ w``.

The level counting P needs is the spasm criterion (Dell, Grohe and Rattan, ICALP 2018; Zhang et
al., ICLR 2024): 1-WL counts P iff every quotient with a nonzero coefficient is a forest, 2-FWL
(= 3-WL = L3) iff every one has treewidth ≤ 2. Otherwise no MATLANG sentence counts P, and a
certificate is two graphs 2-FWL cannot tell apart with different counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from math import lcm
from typing import Any

from matlang import ast
from matlang.shapes import MATRIX
from matlang.spasm import PatternError, Quotient, SmallGraph, automorphisms, rooted_spasm, spasm

# --------------------------------------------------------------------------- reading patterns


def _cycle(k: int) -> SmallGraph:
    return SmallGraph.of(k, [(i, (i + 1) % k) for i in range(k)])


def _path(k: int) -> SmallGraph:
    return SmallGraph.of(k, [(i, i + 1) for i in range(k - 1)])


def _complete(k: int) -> SmallGraph:
    return SmallGraph.of(k, [(i, j) for i in range(k) for j in range(i + 1, k)])


def _star(k: int) -> SmallGraph:
    return SmallGraph.of(k + 1, [(0, i) for i in range(1, k + 1)])


#: Named patterns beside the families CN (cycle), PN (path on N nodes), KN and starN.
BUILTIN_PATTERNS: dict[str, SmallGraph] = {
    "triangle": _cycle(3),
    "diamond": SmallGraph.of(4, [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)]),  # chordal 4-cycle
    "tailed_triangle": SmallGraph.of(4, [(0, 1), (1, 2), (2, 0), (0, 3)]),
    "house": SmallGraph.of(5, [(0, 1), (1, 2), (2, 3), (3, 0), (2, 4), (3, 4)]),
    "bowtie": SmallGraph.of(5, [(0, 1), (1, 2), (2, 0), (0, 3), (3, 4), (4, 0)]),
}

_FAMILY = re.compile(r"(C|cycle|P|path|K|complete|star)(\d+)")


def pattern_names() -> list[str]:
    """The names :func:`read_pattern` knows (families take a size: C5, P4, K4, star3)."""
    return [*BUILTIN_PATTERNS, "C3…C10", "P2…P10", "K2…K10", "star1…star9"]


def _from_family(name: str) -> SmallGraph | None:
    m = _FAMILY.fullmatch(name)
    if m is None:
        return None
    kind, k = m.group(1), int(m.group(2))
    build, low = {
        "C": (_cycle, 3),
        "cycle": (_cycle, 3),
        "P": (_path, 2),
        "path": (_path, 2),
        "K": (_complete, 2),
        "complete": (_complete, 2),
        "star": (_star, 1),
    }[kind]
    size = k + 1 if kind == "star" else k
    if k < low or size > 10:
        raise PatternError(f"pattern {name!r}: size out of range (patterns have 2..10 nodes)")
    return build(k)


_SHORT = {"cycle": "C", "path": "P", "complete": "K", "star": "star", "C": "C", "P": "P", "K": "K"}


def suggest_pattern(text: str) -> str | None:
    """The built-in pattern a mistyped name most likely meant (``cycel5`` → ``C5``,
    ``tringle`` → ``triangle``), or None."""
    import difflib

    m = re.fullmatch(r"([A-Za-z_]+?)_?(\d+)", text)
    if m:
        family = difflib.get_close_matches(m.group(1).lower(), list(_SHORT), n=1, cutoff=0.6)
        if family:
            return f"{_SHORT[family[0]]}{m.group(2)}"
    if re.fullmatch(r"[A-Za-z_]+", text):
        close = difflib.get_close_matches(text.lower(), list(BUILTIN_PATTERNS), n=1, cutoff=0.6)
        if close:
            return close[0]
    return None


def _edge_list(text: str) -> SmallGraph | None:
    """``"0-1 1-2 2-0"``, ``"0-1,1-2"`` or ``"(0,1),(1,2)"``: the nodes are those the edges
    name (:func:`_from_pairs`)."""
    body = text.replace("(", " ").replace(")", " ").replace("[", " ").replace("]", " ")
    if not re.fullmatch(r"[\d\s,;:-]+", body) or not re.search(r"\d\s*[-:]\s*\d|\d\s*,\s*\d", body):
        return None
    pairs: list[tuple[int, int]] = []
    if "-" in body or ":" in body:
        for part in re.split(r"[,;\s]+", body.strip()):
            if not part:
                continue
            m = re.fullmatch(r"(\d+)[-:](\d+)", part)
            if m is None:
                raise PatternError(f"edge list {text!r}: cannot read {part!r} as an edge u-v")
            pairs.append((int(m.group(1)), int(m.group(2))))
    else:
        nums = [int(x) for x in re.findall(r"\d+", body)]
        if len(nums) % 2:
            raise PatternError(f"edge list {text!r}: an odd number of node ids")
        pairs = list(zip(nums[::2], nums[1::2]))
    return _from_pairs(pairs, f"edge list {text!r}")


def _from_pairs(pairs: list[tuple[int, int]], what: str) -> SmallGraph:
    """The pattern of the edges ``pairs``, its nodes those they name, numbered in increasing
    order, as networkx reads an edge list: ``1-2 2-3`` is the path on three nodes, not a path
    beside an isolated node 0 (a graph with isolated nodes: graph6, an adjacency or networkx)."""
    if not pairs:
        raise PatternError(f"{what} has no edges")
    names = sorted({v for p in pairs for v in p})
    if len(names) > 10:
        raise PatternError(f"{what}: patterns have at most 10 nodes, got {len(names)}")
    index = {v: i for i, v in enumerate(names)}
    return SmallGraph.of(len(names), [(index[u], index[v]) for u, v in pairs])


def read_pattern(pattern: Any) -> tuple[SmallGraph, str]:
    """A pattern and a display name from a built-in name, an edge list (text or pairs), a
    graph6 string, a :class:`matlang.graphs.Graph`, an adjacency or a networkx graph."""
    if isinstance(pattern, SmallGraph):
        return pattern, "pattern"
    if isinstance(pattern, str):
        text = pattern.strip()
        if text in BUILTIN_PATTERNS:
            return BUILTIN_PATTERNS[text], text
        fam = _from_family(text)
        if fam is not None:
            return fam, text
        edges = _edge_list(text)
        if edges is not None:
            return edges, text
        from matlang.errors import GraphError
        from matlang.graphs import from_graph6

        try:
            g = from_graph6(text)
        except GraphError as e:
            close = suggest_pattern(text)
            if close is not None:
                raise PatternError(
                    f"no pattern named {text!r}: did you mean {close!r}? (patterns: "
                    f"{', '.join(pattern_names())}, an edge list like '0-1 1-2 2-0', or graph6)"
                ) from None
            raise PatternError(
                f"cannot read pattern {text!r}: not a built-in name ({', '.join(pattern_names())}),"
                f" an edge list like '0-1 1-2 2-0', or graph6 ({e})"
            ) from None
        return _from_adjacency(g.adjacency, text), text
    if isinstance(pattern, (list, tuple)) and all(
        isinstance(p, (list, tuple)) and len(p) == 2 for p in pattern
    ):
        if not pattern:
            raise PatternError("the edge list is empty")
        return _from_pairs([(int(u), int(v)) for u, v in pattern], "the edge list"), "pattern"
    from matlang.graphs import as_graph

    g = as_graph(pattern)
    return _from_adjacency(g.adjacency, g.label()), g.label()


def _from_adjacency(a: Any, where: str) -> SmallGraph:
    n = int(a.shape[0])
    if n > 10:
        raise PatternError(f"pattern {where!r}: patterns have at most 10 nodes, got {n}")
    if n == 0:
        raise PatternError(f"pattern {where!r} has no nodes")
    return SmallGraph.of(n, [(i, j) for i in range(n) for j in range(i + 1, n) if a[i, j]])


def graph6(g: SmallGraph) -> str:
    from matlang.graphs import from_adjacency, to_graph6

    return to_graph6(from_adjacency(g.adjacency()))


# --------------------------------------------------------------------------- hom sentences

_A = ast.Input("A", MATRIX)

# A path matrix is a tuple of factors, read left to right: A, diag(w) or a ⊙ of path matrices.
Chain = tuple[ast.Expr, ...]


def _reverse_expr(e: ast.Expr) -> ast.Expr:
    """Mᵀ for the matrices built here (A and diag(w) are symmetric; (MN)ᵀ = NᵀMᵀ and
    (M ⊙ N)ᵀ = Mᵀ ⊙ Nᵀ), written without ᵀ."""
    if isinstance(e, ast.Mul):
        return ast.Mul(_reverse_expr(e.right), _reverse_expr(e.left))
    if isinstance(e, ast.Hadamard):
        return ast.Hadamard(_reverse_expr(e.left), _reverse_expr(e.right))
    return e  # A, A^k, diag(w)


def _reverse(c: Chain) -> Chain:
    return tuple(_reverse_expr(f) for f in reversed(c))


def _matrix(c: Chain) -> ast.Expr:
    """The product of a chain, consecutive A's written as a power."""
    parts: list[ast.Expr] = []
    run = 0
    for f in (*c, None):
        if f is not None and f == _A:
            run += 1
            continue
        if run:
            parts.append(_A if run == 1 else ast.Power(_A, run))
            run = 0
        if f is not None:
            parts.append(f)
    out = parts[0]
    for p in parts[1:]:
        out = ast.Mul(out, p)
    return out


def _hadamard(chains: list[Chain]) -> Chain:
    if len(chains) == 1:
        return chains[0]
    out = _matrix(chains[0])
    for c in chains[1:]:
        out = ast.Hadamard(out, _matrix(c))
    return (out,)


def _times(w: ast.Expr | None, x: ast.Expr) -> ast.Expr:
    """w ⊙ x for columns, w = None standing for 𝟏."""
    return x if w is None else ast.Hadamard(w, x)


def _apply(c: Chain, w: ast.Expr | None) -> ast.Expr:
    return ast.Mul(_matrix(c), w if w is not None else ast.Ones())


def _diag(w: ast.Expr | None) -> Chain:
    return () if w is None else (ast.Diag(w),)


class _Elimination:
    """Series–parallel elimination of one graph's nodes into a MATLANG expression."""

    def __init__(self, g: SmallGraph) -> None:
        self.weight: dict[int, ast.Expr | None] = {v: None for v in range(g.n)}
        # (u, v) with u < v → the parallel path matrices from u to v
        self.edges: dict[tuple[int, int], list[Chain]] = {e: [(_A,)] for e in sorted(g.edges)}

    def neighbours(self, v: int) -> list[int]:
        return sorted({u if w == v else w for (u, w) in self.edges if v in (u, w)})

    def chains(self, u: int, v: int) -> list[Chain]:
        if u < v:
            return self.edges.get((u, v), [])
        return [_reverse(c) for c in self.edges.get((v, u), [])]

    def _score(self, v: int) -> tuple[int, ...]:
        nb = self.neighbours(v)
        multi = sum(len(self.chains(v, u)) - 1 for u in nb)
        closes = len(nb) == 2 and (min(nb), max(nb)) in self.edges
        return (len(nb), multi, int(closes), v)

    def eliminate(self, v: int) -> None:
        nb = self.neighbours(v)
        w = self.weight.pop(v)
        if len(nb) == 1:
            (u,) = nb
            c = _hadamard(self.chains(u, v))
            self.weight[u] = _times(self.weight[u], _apply(c, w))
            self.edges.pop((min(u, v), max(u, v)))
        else:
            u, x = nb
            left, right = _hadamard(self.chains(u, v)), _hadamard(self.chains(v, x))
            self.edges.pop((min(u, v), max(u, v)))
            self.edges.pop((min(v, x), max(v, x)))
            self.edges.setdefault((u, x), []).append((*left, *_diag(w), *right))

    def run(self, component: list[int], root: int | None) -> ast.Expr:
        """hom of one component as a scalar (a column with ``root``)."""
        alive = set(component)
        while True:
            if root is None and len(alive) == 2:
                u, x = sorted(alive)
                cs = self.chains(u, x)
                wu, wx = self.weight[u], self.weight[x]
                if len(cs) >= 2:
                    # Σᵢⱼ wᵤᵢ Mᵢⱼ Nᵢⱼ wₓⱼ = tr(diag(wᵤ) M diag(wₓ) Nᵀ)
                    m = _hadamard(cs[:-1])
                    return ast.Trace(_matrix((*_diag(wu), *m, *_diag(wx), *_reverse(cs[-1]))))
                if len(cs) == 1:
                    row = ast.Transpose(wu if wu is not None else ast.Ones())
                    return ast.Mul(row, _apply(cs[0], wx))
            if len(alive) == 1 or (root is not None and alive == {root}):
                (v,) = alive
                w = self.weight[v]
                if root is not None:
                    return w if w is not None else ast.Ones()
                return ast.Mul(ast.Transpose(ast.Ones()), w if w is not None else ast.Ones())
            free = [v for v in alive if v != root and len(self.neighbours(v)) <= 2]
            if not free:
                raise PatternError("a quotient of treewidth > 2 has no MATLANG hom sentence")
            v = min(free, key=self._score)
            if not self.neighbours(v):  # an isolated node of a component is the component
                raise AssertionError("isolated node inside a component")  # pragma: no cover
            self.eliminate(v)
            alive.discard(v)


def hom_expr(q: SmallGraph, root: int | None = None) -> ast.Expr:
    """hom(Q, G) as a scalar sentence (with ``root``: the column of hom counts with the root on
    each node) for Q of treewidth ≤ 2; a :class:`PatternError` otherwise."""
    run = _Elimination(q)
    scalars: list[ast.Expr] = []
    vector: ast.Expr | None = None
    for comp in q.components():
        if root is not None and root in comp:
            vector = run.run(comp, root)
        else:
            scalars.append(run.run(comp, None))
    out = vector
    for s in scalars:
        out = s if out is None else ast.Mul(s, out)
    assert out is not None
    return out


# --------------------------------------------------------------------------- the count


def _binding_text(e: ast.Expr) -> str:
    from matlang.printer import to_text

    return to_text(e, definitions=False)


def count_program(terms: list[tuple[Fraction, ast.Expr, str]], name: str = "H") -> str:
    """``let H1 = …`` per hom term (with a comment saying which quotient), then the combination
    ``(c₁ H1 − c₂ H2 …) / D`` with integer cᵢ."""
    denom = lcm(*(c.denominator for c, _, _ in terms)) if terms else 1
    lines, sums = [], []
    for i, (c, e, note) in enumerate(terms, 1):
        lines.append(f"let {name}{i} = {_binding_text(e)}  # {note}")
        k = c * denom
        assert k.denominator == 1
        mag = abs(k.numerator)
        term = f"{name}{i}" if mag == 1 else f"{mag} {name}{i}"
        sums.append(("- " if k < 0 else "+ ") + term)
    body = " ".join(sums)
    body = body[2:] if body.startswith("+ ") else "-" + body[2:]
    if denom != 1:
        body = f"({body})" if len(sums) > 1 or body.startswith("-") else body
        body = f"{body} / {denom}"
    return "\n".join([*lines, body])


@dataclass(frozen=True)
class PatternResult:
    """What :func:`pattern` found out about one pattern (keys of ``to_json`` as the issue)."""

    name: str
    graph: SmallGraph
    automorphisms: int
    quotients: tuple[Quotient, ...]
    sentence: str | None  # the program text (let bindings + the combination); None beyond L3
    expr: ast.Expr | None
    fragment: str  # "L1" | "L2" | "L3" (the analyzer, after rewrites) | "none"
    wl: str
    reason: str
    witness: dict[str, Any] | None = None
    rooted: bool = False
    notes: tuple[str, ...] = field(default=())

    @property
    def graph6(self) -> str:
        return graph6(self.graph)

    def to_json(self) -> dict[str, Any]:
        return {
            "pattern": self.graph6,
            "name": self.name,
            "nodes": self.graph.n,
            "edges": len(self.graph.edges),
            "automorphisms": self.automorphisms,
            "rooted": self.rooted,
            "sentence": self.sentence,
            "fragment": self.fragment,
            "wl": self.wl,
            "reason": self.reason,
            "quotients": [
                {
                    "graph6": graph6(q.graph),
                    "nodes": q.graph.n,
                    "edges": len(q.graph.edges),
                    **({"root": q.root} if q.root is not None else {}),
                    "coefficient": _fraction_json(q.coefficient),
                    "treewidth": q.treewidth,
                }
                for q in self.quotients
            ],
            "witness": self.witness,
        }

    def explain(self) -> str:
        g = self.graph
        lines = [
            f"pattern:    {self.name} ({self.graph6}; {g.n} nodes, {len(g.edges)} "
            f"edge{'s' if len(g.edges) != 1 else ''}, "
            f"|Aut| = {self.automorphisms})",
            f"fragment:   {self.fragment}",
            f"WL:         {self.wl}",
            f"why:        {self.reason}",
            f"spasm:      {len(self.quotients)} quotient(s) with a nonzero coefficient "
            f"(largest treewidth {max(q.treewidth for q in self.quotients)})",
        ]
        if self.witness is not None:
            w = self.witness
            lines.append(
                f"witness:    {w['level']}-equivalent pair {w['pair'][0]} / {w['pair'][1]} "
                f"({w['source']}): counts {w['values'][0]} ≠ {w['values'][1]}"
            )
        lines.extend(f"note:       {n}" for n in self.notes)
        if self.sentence is not None:
            what = "per-node count (a column)" if self.rooted else "count"
            lines.append(f"sentence ({what}):")
            lines.extend("  " + ln for ln in self.sentence.splitlines())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def _repr_html_(self) -> str:  # a notebook shows the table and the witness pair drawn
        from matlang.display import pattern_html

        return pattern_html(self)


def _fraction_json(c: Fraction) -> int | str:
    return c.numerator if c.denominator == 1 else f"{c.numerator}/{c.denominator}"


def counting_sentence(
    p: SmallGraph, *, rooted: bool = False
) -> tuple[list[Quotient], str | None, list[Quotient]]:
    """The spasm, the counting program's text (None when some quotient has treewidth > 2) and
    the quotients of treewidth > 2."""
    quotients = rooted_spasm(p) if rooted else spasm(p)
    hard = [q for q in quotients if q.treewidth > 2]
    if hard:
        return quotients, None, hard
    terms = []
    for q in quotients:
        m = len(q.graph.edges)
        note = f"hom({graph6(q.graph)}): {q.graph.n} nodes, {m} edge{'s' if m != 1 else ''}"
        if q.root is not None:
            note += f", rooted at node {q.root}"
        terms.append((q.coefficient, hom_expr(q.graph, q.root), note))
    return quotients, count_program(terms), []


# --------------------------------------------------------------------------- the analysis

#: The spasm criterion's statements, by level (1: every quotient a forest; 3: treewidth ≤ 2).
THEORY = {
    1: "countable by 1-WL: every quotient with a nonzero coefficient is a forest",
    3: "countable by 3-WL (2-FWL, L3): every quotient with a nonzero coefficient has "
    "treewidth ≤ 2, and some has a cycle",
}


def join_clique(g: Any, m: int) -> Any:
    """g joined to a clique K_m (every new node adjacent to everything). Joins with a fixed
    graph keep 2-FWL equivalence (the complement of a disjoint union of complements), so
    rook4x4 ∨ K_m and shrikhande ∨ K_m are 2-FWL-equivalent and have larger cliques."""
    import numpy as np

    from matlang.graphs import from_adjacency

    n = g.num_nodes
    a = np.ones((n + m, n + m), dtype=np.int64) - np.eye(n + m, dtype=np.int64)
    a[:n, :n] = g.adjacency
    return from_adjacency(a)


def complement(g: Any) -> Any:
    """The complement graph (2-FWL equivalence of two graphs carries over to it)."""
    import numpy as np

    from matlang.graphs import from_adjacency

    n = g.num_nodes
    return from_adjacency(np.ones((n, n), dtype=np.int64) - np.eye(n, dtype=np.int64) - g.adjacency)


def _pairs_3wl(extra: Sequence[Any]) -> list[tuple[str, Any, str, Any, str]]:
    """2-FWL-equivalent pairs to search for a certificate: (id, graph, id, graph, source): the
    built-in rook4x4 / shrikhande, their joins with K1..K3 and their complements, then every
    pair of each tag-3 class of ``extra`` (sr25 from the data folder)."""
    from matlang.graphs import named

    rook, shrikhande = named("rook4x4"), named("shrikhande")
    out: list[tuple[str, Any, str, Any, str]] = [
        (
            "rook4x4",
            rook,
            "shrikhande",
            shrikhande,
            "paper: 4×4 rook's graph and Shrikhande graph, srg(16,6,2,2)",
        ),
    ]
    for m in (1, 2, 3):
        out.append(
            (
                f"rook4x4 ∨ K{m}",
                join_clique(rook, m),
                f"shrikhande ∨ K{m}",
                join_clique(shrikhande, m),
                f"the paper's pair joined to a clique K{m} (joins keep 2-FWL equivalence)",
            )
        )
    co_rook, co_shrikhande = complement(rook), complement(shrikhande)
    out.append(
        (
            "complement(rook4x4)",
            co_rook,
            "complement(shrikhande)",
            co_shrikhande,
            "complements of the paper's pair, srg(16,9,4,6) (complements keep 2-FWL equivalence)",
        )
    )
    for cls in extra:
        if cls.tag != 3:
            continue
        for i in range(len(cls.graphs)):
            for j in range(i + 1, len(cls.graphs)):
                out.append((cls.id_of(i), cls.graphs[i], cls.id_of(j), cls.graphs[j], cls.source))
    return out


def certificate(
    p: SmallGraph, quotients: Sequence[Quotient] | None = None, extra: Sequence[Any] = ()
) -> dict[str, Any] | None:
    """Two graphs 2-FWL cannot tell apart on which P has different subgraph counts (exact, by
    the spasm and numpy homomorphism counts, not by a sentence); None if none is found."""
    from matlang.spasm import hom_count

    qs = list(quotients) if quotients is not None else spasm(p)
    counts: dict[int, Fraction] = {}

    def count(g: Any) -> Fraction:
        if id(g) not in counts:
            a = g.adjacency
            counts[id(g)] = sum((q.coefficient * hom_count(q.graph, a) for q in qs), Fraction(0))
        return counts[id(g)]

    for gi, g, hi, h, source in _pairs_3wl(extra):
        a, b = count(g), count(h)
        if a != b:
            return {
                "level": "3-WL",
                "pair": [gi, hi],
                "values": [_fraction_json(a), _fraction_json(b)],
                "source": source,
            }
    return None


def pattern(
    pattern: Any, *, rooted: bool = False, witness: bool = True, extra: Sequence[Any] = ()
) -> PatternResult:
    """The exact subgraph-count sentence of a pattern, its fragment and WL level.

    ``pattern``: a built-in name (``triangle``, ``C4``…``C8``, ``P3``…``P6``, ``K4``,
    ``diamond``, ``tailed_triangle``, ``star3``, ``house``, ``bowtie``), an edge list, a graph6
    string or a graph. ``rooted``: the per-node count (copies of P through each node) as a
    column sentence. ``witness`` searches lower bounds (as :func:`matlang.classify`) and, beyond
    L3, a certificate; ``extra`` adds classes of graphs
    (:class:`matlang.witness.PairClass`, e.g. the data folder's sr25, graph8c and EXP from
    ``matlang.pattern(datasets=True)``).
    """
    p, name = read_pattern(pattern)
    if not p.edges:
        raise PatternError(f"pattern {name!r} has no edges")
    quotients, text, hard = counting_sentence(p, rooted=rooted)
    aut = automorphisms(p)
    notes: list[str] = []
    if hard:
        worst = max(hard, key=lambda q: (q.treewidth, -q.graph.n))
        reason = (
            f"the quotient {graph6(worst.graph)} ({worst.graph.n} nodes, "
            f"{len(worst.graph.edges)} edges, coefficient {worst.coefficient}) has treewidth "
            f"{worst.treewidth} > 2: its homomorphism count is not 2-FWL invariant, so neither "
            "is the count (Dell, Grohe and Rattan 2018), and no MATLANG sentence computes it"
        )
        cert = None
        refused = None
        if witness:
            try:
                cert = certificate(p, None if rooted else quotients, extra)
            except PatternError as e:  # counts too large to take: said, not searched
                refused = f"no certificate searched: {e}"
                notes.append(refused)
        if witness and cert is None and refused is None:
            notes.append(
                "no certificate among the searched 2-FWL-equivalent pairs"
                + ("" if extra else " (datasets=True searches sr25 too)")
            )
        return PatternResult(
            name,
            p,
            aut,
            tuple(quotients),
            None,
            None,
            "none",
            "beyond 3-WL (2-FWL cannot count it)",
            reason,
            cert,
            rooted,
            tuple(notes),
        )
    from matlang.analysis import classify
    from matlang.parser import parse
    from matlang.witness import WitnessLibrary

    assert text is not None
    expr = parse(text)
    analysis = classify(expr, witness=witness, library=WitnessLibrary.default(extra))
    theory = 1 if all(q.graph.is_forest() for q in quotients) else 3
    if (analysis.level == 1) != (theory == 1):  # pragma: no cover - an analyzer bug
        raise AssertionError(
            f"pattern {name}: the analyzer says {analysis.fragment} but the spasm criterion "
            f"says {'1-WL' if theory == 1 else 'beyond 1-WL'}"
        )
    found = analysis.witness.to_json() if analysis.witness is not None else None
    notes.extend(analysis.notes)
    return PatternResult(
        name,
        p,
        aut,
        tuple(quotients),
        text,
        expr,
        analysis.fragment,
        analysis.wl,
        THEORY[theory],
        found,
        rooted,
        tuple(notes),
    )


__all__ = [
    "BUILTIN_PATTERNS",
    "THEORY",
    "PatternResult",
    "certificate",
    "pattern",
    "count_program",
    "counting_sentence",
    "graph6",
    "hom_expr",
    "pattern_names",
    "read_pattern",
]
