"""Sentence banks: every scalar sentence of a fragment up to a size, as certified lower bounds.

A *bank* is the set of scalar sentences of a fragment (L1, L2, L3 of the paper, with the ``+``
enrichment) whose syntax tree has at most ``max_size`` nodes. A pair of graphs is *separated* by
the bank when some sentence of the bank takes different values on the two graphs; since every
sentence is an isomorphism invariant, that certifies the pair non-isomorphic and is a lower bound
on what the fragment (hence any model the fragment bounds) can tell apart.

The grammar (each production's size is the number of AST nodes it adds, so a sentence's size is
``Expr.size`` of the tree :func:`to_expr` builds)::

    v := 𝟏 | M v | v ⊙ w                       (vectors; M v only in L3 beyond M = A)
    M := A | diag(v) | M N | M ⊙ N            (matrices; L2 and L3; ⊙ only in L3)
    s := 𝟏ᵀ v | tr(M)                         (readouts; tr only in L2 and L3, where the
                                               sum of v is read as tr(diag(v)), one node less)

What is left out loses no separation at a given size:

- ``+``, ``-`` and scalar factors: every operation is linear in each argument, so a sentence
  with a sum equals the sum of the sentences that keep one side of each ``+`` (each smaller);
  if the sum differs on two graphs, one of those terms does. Likewise ``s · X`` splits into the
  scalar ``s`` and the sentence with ``X`` in its place. So the ``+`` enrichment adds no
  separating power at any size bound, and the bank enumerates ``+``-free sentences only.
- Transposes: ``(M N)ᵀ = Nᵀ Mᵀ``, ``(M ⊙ N)ᵀ = Mᵀ ⊙ Nᵀ``, ``Aᵀ = A``, ``diag(v)ᵀ = diag(v)``
  push a transpose to the leaves, where it vanishes, with fewer nodes.
- Products are kept right-nested (``(M N) P = M (N P)``, same size) and ``(M N) v`` is
  ``M (N v)``; ``diag(u) v`` is ``u ⊙ v`` (one node fewer); ⊙ is commutative and associative.

*Exact evaluation, certified.* Values are computed bottom-up modulo the prime
:data:`PRIME` (p ≈ 2²¹, so a product of residues summed over n ≤ 2048 terms is exact in float64
BLAS). Residues that differ certify that the integers differ, so every separation reported is
certain; equal residues of different integers (probability ~1/p per comparison) can only hide a
separation, never invent one: the count is a certified lower bound.

*Deduplication by value.* Two expressions with equal values (as node-indexed arrays on every
graph of the set being searched) are interchangeable in any larger sentence, so only the first
(smallest) is kept: on a pair of graphs this is exact for the question "does a sentence of size
≤ K separate the pair" and prunes far more than a syntactic normal form could (e.g. on a strongly
regular pair every matrix collapses into span{I, A, J}). The bank's sentence count is the same
deduplication on a fixed set of random graphs (:func:`bank_sentences`).

*Multiset readouts* (``multiset=True``): the multiset of a vector's entries is also an
invariant of the fragment — its power sums ``𝟏ᵀ diag(v)ᵏ 𝟏`` (k ≤ n) are L1 sentences and
determine it — so a vector whose entry multisets differ separates the pair; in L3 the same holds
for a matrix's entries through ``𝟏ᵀ (M ⊙ ⋯ ⊙ M) 𝟏``. The witness printed is that power sum for the
first k that differs; it is larger than ``max_size``, which then bounds ``v`` (or ``M``) rather
than the whole sentence: the search is "all sentences of size ≤ K, plus the power sums of their
vectors", and says so in its results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from matlang import ast
from matlang.errors import MatlangError

Fragment = Literal["L1", "L2", "L3"]
FRAGMENTS: tuple[str, ...] = ("L1", "L2", "L3")

#: The modulus: the largest prime below 2²¹. Residues < p; a product of two is < 2⁴², and a sum
#: of n ≤ 2048 of them stays below 2⁵³, so float64 matrix products are exact.
PRIME = 2_097_143
_FLOAT_MAX_N = 2048

#: Entries (float64) a search may hold before it stops growing (about 400 MB).
DEFAULT_BUDGET = 50_000_000

Kind = Literal["v", "m"]


@dataclass(frozen=True)
class Node:
    """One expression of a search: an operation on earlier nodes (``args`` are node ids)."""

    kind: Kind
    op: str  # "1", "A", "Mv", "vhad", "diag", "mul", "had"
    args: tuple[int, ...]
    size: int


@dataclass
class Separation:
    """How a pair was separated: the readout, the node read, its size and the witness."""

    readout: str  # "sum", "tr", "multiset", "matrix-multiset"
    node: int
    size: int  # size of the sentence (for multisets: of the sentence read, k = 1)
    power: int = 1  # k of the power sum for multiset readouts
    values: tuple[int, int] = (0, 0)  # residues mod PRIME on the two graphs


@dataclass
class Search:
    """The nodes of a bottom-up search and, per node, its values on the graphs searched."""

    fragment: Fragment
    max_size: int
    nodes: list[Node] = field(default_factory=list)
    complete_size: int = 0  # every sentence of size ≤ this was examined
    truncated: bool = False
    separation: Separation | None = None


# --------------------------------------------------------------------------- arithmetic


def _mod(x: np.ndarray) -> np.ndarray:
    return np.fmod(x, PRIME, out=x)


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a @ b) mod p for residue arrays; exact in float64 up to n = 2048, else in int64."""
    n = a.shape[-1]
    if n <= _FLOAT_MAX_N:
        return _mod(np.matmul(a, b))
    out = np.matmul(a.astype(np.int64), b.astype(np.int64)) % PRIME
    return out.astype(np.float64)


def _check_fragment(fragment: str) -> Fragment:
    key = fragment.upper()
    if key not in FRAGMENTS:
        raise MatlangError(f"unknown fragment {fragment!r}; use one of {', '.join(FRAGMENTS)}")
    return key  # type: ignore[return-value]


def adjacency_stack(adjacencies: Sequence[np.ndarray]) -> np.ndarray:
    """The graphs' adjacency matrices as one (G, n, n) float64 residue array (equal n)."""
    sizes = {a.shape for a in adjacencies}
    if len(sizes) != 1:
        raise MatlangError(f"a bank search needs graphs of one size, got shapes {sorted(sizes)}")
    stack = np.stack([np.asarray(a) for a in adjacencies]).astype(np.float64)
    if stack.shape[-1] != stack.shape[-2]:
        raise MatlangError(f"adjacency matrices must be square, got shape {stack.shape[1:]}")
    return np.mod(stack, PRIME)


# --------------------------------------------------------------------------- the search


class _Pool:
    """Nodes of one kind: values stacked per size, and a table from value to node."""

    def __init__(self, kind: Kind) -> None:
        self.kind = kind
        self.levels: dict[int, np.ndarray] = {}  # size -> (k, G, n[, n])
        self.ids: dict[int, list[int]] = {}  # size -> node ids, in level order
        self.ops: dict[int, list[str]] = {}
        self.table: dict[bytes, list[int]] = {}
        self.entries = 0

    def level(self, s: int) -> np.ndarray | None:
        return self.levels.get(s)


class _Searcher:
    def __init__(
        self,
        stack: np.ndarray,
        fragment: Fragment,
        max_size: int,
        *,
        pair: bool,
        multiset: bool,
        budget: int,
    ) -> None:
        self.adj = stack
        self.G, self.n = stack.shape[0], stack.shape[1]
        self.frag = fragment
        self.K = max_size
        self.pair = pair
        self.multiset = multiset
        self.budget = budget
        self.search = Search(fragment, max_size)
        self.vec_read = vector_readout_cost(fragment)
        self.vec = _Pool("v")
        self.mat = _Pool("m")
        self.values: dict[int, np.ndarray] = {}
        rng = np.random.default_rng(12345)
        # Random projections hash a value before the exact byte comparison.
        self._proj = {
            "v": rng.integers(1, 1 << 10, size=(self.G * self.n, 2)).astype(np.float64),
            "m": rng.integers(1, 1 << 10, size=(self.G * self.n * self.n, 2)).astype(np.float64),
        }

    # ----------------------------------------------------------------- adding nodes

    def _add(
        self, pool: _Pool, s: int, cands: np.ndarray, makers: Sequence[tuple[str, tuple[int, ...]]]
    ) -> None:
        """Keep the candidates (c, G, ...) whose value is new and non-zero, in order."""
        if not len(makers):
            return
        flat = cands.reshape(len(makers), -1)
        nonzero: np.ndarray = np.asarray(flat.any(axis=1))
        # The projection of a residue vector: exact in float64 (< 2^21 · 2^10 · length).
        keys = np.fmod(flat @ self._proj[pool.kind], float(1 << 50)).astype(np.int64)
        _, first = np.unique(keys, axis=0, return_index=True)
        keep_rows: list[int] = []
        for r in np.sort(first).tolist():
            if not nonzero[r]:
                continue
            k = keys[r].tobytes()
            row = flat[r]
            same = pool.table.get(k)
            if same is not None and any(
                np.array_equal(self.values[i].reshape(-1), row) for i in same
            ):
                continue
            keep_rows.append(r)
        # Rows sharing a projection key inside the batch but differing in value were dropped by
        # np.unique's first-index; they are rare (the key has ~60 bits), and dropping one only
        # loses an expression, never invents a separation.
        if not keep_rows:
            return
        kept = cands[keep_rows]
        ids = []
        for j, r in enumerate(keep_rows):
            op, args = makers[r]
            nid = len(self.search.nodes)
            self.search.nodes.append(Node(pool.kind, op, args, s))
            self.values[nid] = kept[j]
            pool.table.setdefault(keys[r].tobytes(), []).append(nid)
            ids.append(nid)
        if s in pool.levels:
            pool.levels[s] = np.concatenate([pool.levels[s], kept])
            pool.ids[s].extend(ids)
            pool.ops[s].extend(makers[r][0] for r in keep_rows)
        else:
            pool.levels[s] = kept
            pool.ids[s] = ids
            pool.ops[s] = [makers[r][0] for r in keep_rows]
        pool.entries += kept.size
        self._check(pool, s, ids, kept)

    # ----------------------------------------------------------------- separation checks

    def _best(self) -> int:
        sep = self.search.separation
        return sep.size if sep is not None else self.K + 1

    def _found(self, sep: Separation) -> None:
        if sep.size < self._best():
            self.search.separation = sep

    def _check(self, pool: _Pool, s: int, ids: list[int], vals: np.ndarray) -> None:
        if not self.pair:
            return
        if pool.kind == "v":
            size = s + self.vec_read  # 𝟏ᵀ v, or tr(diag(v)) where tr exists
            if size > self.K or size >= self._best():
                return
            sums = np.fmod(vals.sum(axis=-1), PRIME)  # (k, 2)
            diff = np.flatnonzero(sums[:, 0] != sums[:, 1])
            if diff.size:
                i = int(diff[0])
                self._found(Separation("sum", ids[i], size, 1, (int(sums[i, 0]), int(sums[i, 1]))))
                return
            if self.multiset:
                srt = np.sort(vals, axis=-1)
                diff = np.flatnonzero(np.any(srt[:, 0] != srt[:, 1], axis=-1))
                if diff.size:
                    i = int(diff[0])
                    k, a, b = _first_power_sum(vals[i, 0], vals[i, 1])
                    self._found(Separation("multiset", ids[i], size, k, (a, b)))
        else:
            size = s + 1  # tr(M)
            if self.frag != "L1" and size <= self.K and size < self._best():
                tr = np.fmod(np.trace(vals, axis1=-2, axis2=-1), PRIME)  # (k, 2)
                diff = np.flatnonzero(tr[:, 0] != tr[:, 1])
                if diff.size:
                    i = int(diff[0])
                    self._found(Separation("tr", ids[i], size, 1, (int(tr[i, 0]), int(tr[i, 1]))))
                    return
            size = s + 4  # 𝟏ᵀ M 𝟏 shape for the entry multiset
            if self.multiset and self.frag == "L3" and size <= self.K and size < self._best():
                flat = np.sort(vals.reshape(vals.shape[0], 2, -1), axis=-1)
                diff = np.flatnonzero(np.any(flat[:, 0] != flat[:, 1], axis=-1))
                if diff.size:
                    i = int(diff[0])
                    k, a, b = _first_power_sum(vals[i, 0].reshape(-1), vals[i, 1].reshape(-1))
                    self._found(Separation("matrix-multiset", ids[i], size, k, (a, b)))

    # ----------------------------------------------------------------- levels

    def _chunks(self, total: int, per_item: int) -> int:
        """How many candidates to build at once (about 2^24 entries per block)."""
        return max(1, (1 << 24) // max(1, per_item))

    def _vectors(self, s: int) -> None:
        G, n = self.G, self.n
        if s == 1:
            self._add(self.vec, 1, np.ones((1, G, n)), [("1", ())])
            return
        # M v: in L1/L2 only M = A (other products decompose into vector steps).
        for sm in range(1, s - 1):
            sv = s - 1 - sm
            vs = self.vec.level(sv)
            if vs is None:
                continue
            if self.frag == "L3":
                ms = self.mat.level(sm)
                if ms is None:
                    continue
                sel = [k for k, op in enumerate(self.mat.ops[sm]) if op in ("A", "had")]
                if not sel:
                    continue
                mids = [self.mat.ids[sm][k] for k in sel]
                mvals = ms[sel]
            else:
                if sm != 1:
                    continue
                mids, mvals = [-1], self.adj[None]
            step = self._chunks(0, G * n * n)
            for lo in range(0, len(mids), max(1, step // max(1, len(vs)))):
                hi = min(len(mids), lo + max(1, step // max(1, len(vs))))
                prod = _matmul(mvals[lo:hi, None], vs[None, :, :, :, None])[..., 0]
                makers = [("Mv", (mids[a], vid)) for a in range(lo, hi) for vid in self.vec.ids[sv]]
                self._add(self.vec, s, prod.reshape(-1, G, n), makers)
        # v ⊙ w, sizes s1 ≤ s2 (and ids in order when equal).
        for s1 in range(1, (s - 1) // 2 + 1):
            s2 = s - 1 - s1
            a, b = self.vec.level(s1), self.vec.level(s2)
            if a is None or b is None:
                continue
            ida, idb = self.vec.ids[s1], self.vec.ids[s2]
            prod = _mod(a[:, None] * b[None])  # (ka, kb, G, n)
            pairs = [(i, j) for i in range(len(ida)) for j in range(len(idb)) if s1 < s2 or i <= j]
            if not pairs:
                continue
            ii = np.array([p[0] for p in pairs])
            jj = np.array([p[1] for p in pairs])
            makers = [("vhad", (ida[i], idb[j])) for i, j in pairs]
            self._add(self.vec, s, prod[ii, jj], makers)

    def _matrices(self, s: int) -> None:
        G, n = self.G, self.n
        if s == 1:
            self._add(self.mat, 1, self.adj[None].copy(), [("A", (-1,))])
            return
        vs = self.vec.level(s - 1)
        if vs is not None:
            d = np.zeros((len(vs), G, n, n))
            idx = np.arange(n)
            d[..., idx, idx] = vs
            self._add(self.mat, s, d, [("diag", (v,)) for v in self.vec.ids[s - 1]])
        per = max(1, (1 << 24) // (G * n * n))
        for s1 in range(1, s - 1):
            s2 = s - 1 - s1
            left, right = self.mat.level(s1), self.mat.level(s2)
            if left is None or right is None:
                continue
            # M N with M not a product (right-nested chains).
            lsel = [k for k, op in enumerate(self.mat.ops[s1]) if op != "mul"]
            if lsel:
                lids = [self.mat.ids[s1][k] for k in lsel]
                rids = self.mat.ids[s2]
                block = max(1, per // max(1, len(rids)))
                for lo in range(0, len(lsel), block):
                    sub = lsel[lo : lo + block]
                    prod = _matmul(left[sub][:, None], right[None])
                    makers = [("mul", (lids[lo + a], r)) for a in range(len(sub)) for r in rids]
                    self._add(self.mat, s, prod.reshape(-1, G, n, n), makers)
            if self.frag != "L3":
                continue
            # M ⊙ N with M not a ⊙; when N is not a ⊙ either, only one order of the two.
            lsel = [k for k, op in enumerate(self.mat.ops[s1]) if op != "had"]
            if not lsel:
                continue
            rops = self.mat.ops[s2]
            pairs = [
                (a, b)
                for a in lsel
                for b in range(len(rops))
                if rops[b] == "had" or s1 < s2 or (s1 == s2 and a <= b)
            ]
            for lo in range(0, len(pairs), per):
                chunk = pairs[lo : lo + per]
                ii = np.array([p[0] for p in chunk])
                jj = np.array([p[1] for p in chunk])
                prod = _mod(left[ii] * right[jj])
                makers = [("had", (self.mat.ids[s1][a], self.mat.ids[s2][b])) for a, b in chunk]
                self._add(self.mat, s, prod, makers)

    def run(self, progress: Callable[[int], None] | None = None) -> Search:
        use_mats = self.frag != "L1"
        for s in range(1, self.K + 1):
            # The smallest sentence any node of size s can still give.
            floor = s + 1 if use_mats else s + self.vec_read
            if floor > self.K or (self.pair and floor >= self._best()):
                break
            if self.vec.entries + self.mat.entries > self.budget:
                self.search.truncated = True
                break
            if s + self.vec_read <= self.K:
                self._vectors(s)
            if use_mats:
                self._matrices(s)
            self.search.complete_size = s + 1 if use_mats else s + self.vec_read
            if progress is not None:
                progress(s)
        if not self.search.truncated:
            self.search.complete_size = self.K
        return self.search


def vector_readout_cost(fragment: str) -> int:
    """Nodes a vector's sum adds to make a sentence: 𝟏ᵀ v (3), or tr(diag(v)) (2) with tr."""
    return 3 if fragment == "L1" else 2


def _first_power_sum(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int]:
    """The first k ≥ 1 with Σ aᵢᵏ ≢ Σ bᵢᵏ (mod p), for residue vectors whose multisets differ.

    Newton's identities hold over the field F_p for k ≤ n < p, so power sums k = 1..n determine
    the multiset of residues, and some k ≤ n differs.
    """
    pa, pb = a.astype(np.int64), b.astype(np.int64)
    xa, xb = pa.copy(), pb.copy()
    for k in range(1, len(a) + 1):
        sa, sb = int(xa.sum() % PRIME), int(xb.sum() % PRIME)
        if sa != sb:
            return k, sa, sb
        xa, xb = xa * pa % PRIME, xb * pb % PRIME
    raise AssertionError("entry multisets differ but no power sum does")  # pragma: no cover


def search_pair(
    a: np.ndarray,
    b: np.ndarray,
    fragment: str,
    max_size: int,
    *,
    multiset: bool = True,
    budget: int = DEFAULT_BUDGET,
) -> Search:
    """Search the bank of ``fragment`` up to ``max_size`` for a sentence separating two graphs.

    ``a``, ``b``: adjacency matrices (0/1, symmetric). The result's ``separation`` holds the
    smallest separating sentence found (None when none of size ≤ ``complete_size`` exists;
    ``truncated`` says the memory budget stopped the search before ``max_size``).
    """
    frag = _check_fragment(fragment)
    if max_size < 1:
        raise MatlangError(f"--max-size must be at least 1, got {max_size}")
    if a.shape != b.shape:
        # 𝟏ᵀ𝟏 = n tells graphs of different sizes apart.
        search = Search(frag, max_size, [Node("v", "1", (), 1)], complete_size=max_size)
        search.separation = Separation("sum", 0, 4, 1, (a.shape[0] % PRIME, b.shape[0] % PRIME))
        return search
    searcher = _Searcher(
        adjacency_stack([a, b]), frag, max_size, pair=True, multiset=multiset, budget=budget
    )
    return searcher.run()


# --------------------------------------------------------------------------- sentences


def to_expr(search: Search, node: int) -> ast.Expr:
    """The MATLANG expression of a node of ``search`` (its AST has ``Node.size`` nodes)."""
    memo: dict[int, ast.Expr] = {}

    def build(i: int) -> ast.Expr:
        if i == -1:
            return ast.Input("A")
        if i in memo:
            return memo[i]
        nd = search.nodes[i]
        if nd.op == "1":
            e: ast.Expr = ast.Ones()
        elif nd.op == "A":
            e = ast.Input("A")
        elif nd.op == "Mv":
            e = ast.Mul(build(nd.args[0]), build(nd.args[1]))
        elif nd.op in ("vhad", "had"):
            e = ast.Hadamard(build(nd.args[0]), build(nd.args[1]))
        elif nd.op == "diag":
            e = ast.Diag(build(nd.args[0]))
        elif nd.op == "mul":
            e = ast.Mul(build(nd.args[0]), build(nd.args[1]))
        else:  # pragma: no cover - every op is listed above
            raise MatlangError(f"unknown bank operation {nd.op!r}")
        memo[i] = e
        return e

    return build(node)


def witness(search: Search) -> ast.Expr | None:
    """The separating sentence of a search (None when the pair was not separated)."""
    sep = search.separation
    if sep is None:
        return None
    inner = to_expr(search, sep.node)
    ones_t = ast.Transpose(ast.Ones())
    with_tr = search.fragment != "L1"
    if sep.readout == "sum":
        # Σ vᵢ: tr(diag(v)) is one node smaller than 𝟏ᵀ v where tr exists.
        return ast.Trace(ast.Diag(inner)) if with_tr else ast.Mul(ones_t, inner)
    if sep.readout == "tr":
        return ast.Trace(inner)
    if sep.readout == "multiset":
        # Σ vᵢᵏ = tr(diag(v)ᵏ) = 𝟏ᵀ diag(v)ᵏ 𝟏
        body: ast.Expr = (
            ast.Diag(inner) if sep.power == 1 else ast.Power(ast.Diag(inner), sep.power)
        )
        return ast.Trace(body) if with_tr else ast.Mul(ones_t, ast.Mul(body, ast.Ones()))
    # matrix-multiset: 𝟏ᵀ (M ⊙ ⋯ ⊙ M) 𝟏 = Σ Mᵢⱼᵏ
    had = inner
    for _ in range(sep.power - 1):
        had = ast.Hadamard(had, inner)
    return ast.Mul(ones_t, ast.Mul(had, ast.Ones()))


def witness_record(search: Search) -> dict[str, object] | None:
    """A separated pair's witness as JSON — its text, AST size, the size ``--max-size`` bounds
    (they differ for multiset readouts, whose power sum is bounded through the vector it
    reads) and the readout — or None when the pair was not separated."""
    w = witness(search)
    if w is None or search.separation is None:
        return None
    from matlang.printer import to_text
    from matlang.witness_text import canonical

    return {
        "witness": to_text(canonical(w)),
        "size": w.size,
        "bank_size": search.separation.size,
        "readout": search.separation.readout,
    }


# --------------------------------------------------------------------------- banks on graph sets


def random_graphs(count: int, n: int, p: float, seed: int) -> np.ndarray:
    """``count`` seeded Erdős–Rényi adjacency matrices G(n, p), stacked (count, n, n)."""
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((count, n, n)) < p, 1)
    return (upper | upper.transpose(0, 2, 1)).astype(np.int64)


def bank(
    fragment: str,
    max_size: int,
    *,
    fingerprint: np.ndarray | None = None,
    budget: int = DEFAULT_BUDGET,
) -> Search:
    """The bank as a list of expressions: every node up to ``max_size``, deduplicated by value
    on the ``fingerprint`` graphs (default: 4 seeded G(10, 0.35) graphs).

    Two expressions equal on the fingerprint graphs are merged (kept once, the smaller): a
    heuristic for "equal everywhere", so a bank evaluated elsewhere may miss a separation an
    exact per-pair search (:func:`search_pair`) finds, never report a false one.
    """
    frag = _check_fragment(fragment)
    graphs = random_graphs(4, 10, 0.35, seed=2021) if fingerprint is None else fingerprint
    searcher = _Searcher(
        adjacency_stack(list(graphs)), frag, max_size, pair=False, multiset=False, budget=budget
    )
    return searcher.run()


def sentences(search: Search) -> list[tuple[str, int]]:
    """The scalar sentences of a bank: (readout, node) for every node whose readout fits the
    bound (``sum`` for vectors of size ≤ K − 3, or K − 2 with tr, and ``tr`` for matrices of
    size ≤ K − 1 in L2/L3)."""
    out: list[tuple[str, int]] = []
    for i, nd in enumerate(search.nodes):
        if nd.kind == "v" and nd.size + vector_readout_cost(search.fragment) <= search.max_size:
            out.append(("sum", i))
        elif nd.kind == "m" and search.fragment != "L1" and nd.size + 1 <= search.max_size:
            out.append(("tr", i))
    return out


def signatures(
    search: Search, adjacencies: Sequence[np.ndarray], *, multiset: bool = True, chunk: int = 256
) -> list[bytes]:
    """Per graph, the residues of every sentence of the bank (and, with ``multiset``, the
    sorted entries of every vector): equal signatures ⇔ no sentence of the bank separates.

    Graphs are evaluated in chunks of equal size, every node once per chunk (bottom-up).
    """
    reads = sentences(search)
    by_n: dict[int, list[int]] = {}
    for g, a in enumerate(adjacencies):
        by_n.setdefault(int(a.shape[0]), []).append(g)
    out: list[bytes] = [b""] * len(adjacencies)
    for n, members in by_n.items():
        for lo in range(0, len(members), chunk):
            idx = members[lo : lo + chunk]
            stack = adjacency_stack([adjacencies[g] for g in idx])
            vals = _replay(search, stack)
            parts = [np.full((len(idx), 1), n, dtype=np.int64)]
            for readout, node in reads:
                v = vals[node]
                if readout == "sum":
                    parts.append(np.fmod(v.sum(axis=-1), PRIME).astype(np.int64)[:, None])
                    if multiset:
                        parts.append(np.sort(v, axis=-1).astype(np.int64))
                else:
                    parts.append(
                        np.fmod(np.trace(v, axis1=-2, axis2=-1), PRIME).astype(np.int64)[:, None]
                    )
            sig = np.concatenate(parts, axis=1)
            for r, g in enumerate(idx):
                out[g] = sig[r].tobytes()
    return out


def _replay(search: Search, stack: np.ndarray) -> dict[int, np.ndarray]:
    """Every node's value on a stack of graphs (G, n, n), in node order."""
    G, n = stack.shape[0], stack.shape[1]
    vals: dict[int, np.ndarray] = {}
    diag_idx = np.arange(n)

    def get(i: int) -> np.ndarray:
        return stack if i == -1 else vals[i]

    for i, nd in enumerate(search.nodes):
        if nd.op == "1":
            v = np.ones((G, n))
        elif nd.op == "A":
            v = stack.copy()
        elif nd.op == "Mv":
            v = _matmul(get(nd.args[0]), get(nd.args[1])[..., None])[..., 0]
        elif nd.op in ("vhad", "had"):
            v = _mod(get(nd.args[0]) * get(nd.args[1]))
        elif nd.op == "diag":
            v = np.zeros((G, n, n))
            v[:, diag_idx, diag_idx] = get(nd.args[0])
        elif nd.op == "mul":
            v = _matmul(get(nd.args[0]), get(nd.args[1]))
        else:  # pragma: no cover
            raise MatlangError(f"unknown bank operation {nd.op!r}")
        vals[i] = v
    return vals
