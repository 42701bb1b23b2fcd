"""Sparse homomorphism counts of a small pattern into a large graph, exactly (int64).

``hom(Q, G; roots)``: the number of homomorphisms Q → G with Q's root nodes on given nodes of G,
for every node (one root: a vector of n counts) or every edge (two adjacent roots: one count per
stored entry of A). Nothing here forms an n × n dense table.

The method is variable elimination over factors (a tree decomposition of Q, found greedily):

* a node of degree 1 folds into its neighbour's vector, ``w_u ← w_u ⊙ (M w_v)`` — cost nnz(M);
* a node of degree 2 between u and x becomes a sparse matrix ``M_u diag(w_v) M_xᵀ`` on (u, x);
  where (u, x) already has a factor, only its entries are computed (a masked product on
  GraphBLAS, ``C⟨S⟩ = L R``) — cost Σ_v |row of L| · |row of R| over the mask's rows;
* what is left when every remaining node has degree ≥ 3 (K4, the wheel, the prism, …: treewidth
  ≥ 3) is enumerated, vectorised: partial homomorphisms as arrays of node tuples, extended along
  one factor's rows and filtered by lookups in the others — cost the number of partial
  homomorphisms of the core, small on sparse graphs.

Factors are named by what they compute (``("mm", L, w, R)``…), so equal factors of different
quotients of one spasm are computed once (:class:`Host.cache`).

Values are int64; :func:`hom_bound` bounds every intermediate (a partial count of a connected
pattern with one node fixed is at most Δ^(k−1)), and callers refuse what could overflow.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import scipy.sparse as sp

from matlang.errors import MatlangError
from matlang.spasm import SmallGraph

#: Integer counts stay int64 while a bound on them is below this.
SAFE = 2**62

#: A degree-2 elimination without a mask is not planned when its product would exceed this many
#: stored entries (estimated); the node stays for the enumeration instead.
FILL_CAP = 6e7

#: Partial homomorphisms held at once by the enumeration (rows of node tuples).
CHUNK_ROWS = 4_000_000

Key = Hashable


class Host:
    """A large simple undirected graph as a CSR adjacency (0/1, int64, sorted indices), with
    the factors computed on it so far (:attr:`cache`, keyed by what they compute)."""

    def __init__(self, n: int, rows: np.ndarray, cols: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        keys = np.unique(rows * n + cols)  # sorted row-major, duplicates merged
        indptr = np.searchsorted(keys, np.arange(n + 1, dtype=np.int64) * n)
        a = sp.csr_matrix(
            (np.ones(keys.size, dtype=np.int64), keys % n if n else keys, indptr), shape=(n, n)
        )
        self.n = int(n)
        self.A = a
        self.deg = np.diff(a.indptr).astype(np.int64)
        self.max_degree = int(self.deg.max()) if n else 0
        nnz = max(int(a.nnz), 1)
        # the size-biased degree: rows of A·M grow by about this factor
        self.rho = float((self.deg.astype(np.float64) ** 2).sum() / nnz) if a.nnz else 0.0
        self.cache: dict[Key, Any] = {}
        self._lookups: dict[Key, tuple[np.ndarray, np.ndarray]] = {}
        self._keys = keys

    def clear(self) -> None:
        self.cache.clear()
        self._lookups.clear()

    def lookup_a(self) -> np.ndarray:
        """A's entries as sorted row·n + column keys."""
        return self._keys

    # ------------------------------------------------------------------ factor values

    def value(self, key: Key) -> Any:
        """The factor ``key`` names (a CSR matrix or an int64 vector), computed once."""
        if key == "A":
            return self.A
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        assert isinstance(key, tuple)
        op = key[0]
        out: Any
        if op == "T":
            out = self.value(key[1]).T.tocsr()
            out.sort_indices()
        elif op == "had":
            parts = [self.value(k) for k in key[1]]
            out = parts[0]
            for m in parts[1:]:
                out = out.multiply(m)
            out = sp.csr_matrix(out)
            out.eliminate_zeros()
            out.sort_indices()
        elif op == "mm":
            _, lk, wk, rk = key
            left = self._scaled(lk, wk)
            out = (left @ self.value(rk)).tocsr()
            out.eliminate_zeros()
            out.sort_indices()
        elif op == "mmask":
            _, lk, wk, rk, mk = key
            whole = ("mm", lk, wk, rk)
            if mk == whole:  # (L R) on its own entries is L R
                out = self.value(mk)
            else:
                out = _masked_product(self._scaled(lk, wk), self.value(rk), self.value(mk))
        elif op == "mv":
            _, mk, wk = key
            m = self.value(mk)
            out = m @ self.value(wk) if wk is not None else np.asarray(m.sum(axis=1)).ravel()
            out = np.asarray(out, dtype=np.int64)
        elif op == "prod":
            parts = [self.value(k) for k in key[1]]
            out = parts[0].copy()
            for v in parts[1:]:
                out *= v
        else:  # pragma: no cover - keys are built here
            raise AssertionError(f"unknown factor {key!r}")
        self.cache[key] = out
        return out

    def _scaled(self, lk: Key, wk: Key | None) -> Any:
        m = self.value(lk)
        if wk is None:
            return m
        out = m.copy()
        out.data = out.data * self.value(wk)[out.indices]  # M diag(w): column j times w_j
        out.eliminate_zeros()
        return out

    def lookup(self, key: Key) -> tuple[np.ndarray, np.ndarray]:
        """(sorted row·n + column keys, values) of a matrix factor, for vectorised reads."""
        hit = self._lookups.get(key)
        if hit is None:
            m = self.value(key)
            rows = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(m.indptr))
            hit = (rows * self.n + m.indices.astype(np.int64), np.asarray(m.data, np.int64))
            self._lookups[key] = hit
        return hit


def _masked_product(left: Any, right: Any, mask: Any) -> Any:
    """``(left @ right)`` on the entries of ``mask`` only (GraphBLAS ``C⟨S⟩ = L R``)."""
    import graphblas as gb

    lg = gb.io.from_scipy_sparse(left)
    rg = gb.io.from_scipy_sparse(right)
    mg = gb.io.from_scipy_sparse(mask)
    c = gb.Matrix(gb.dtypes.INT64, left.shape[0], right.shape[1])
    c(mg.S) << lg.mxm(rg, gb.semiring.plus_times[gb.dtypes.INT64])
    out = gb.io.to_scipy_sparse(c, format="csr").astype(np.int64)
    out.sort_indices()
    return out


# ---------------------------------------------------------------------- keys


def tkey(k: Key) -> Key:
    """The key of the transpose of matrix factor ``k`` (A and M diag(w) Mᵀ are symmetric)."""
    if k == "A":
        return k
    assert isinstance(k, tuple)
    if k[0] == "T":
        return k[1]
    if k[0] == "had":
        return ("had", tuple(sorted((tkey(x) for x in k[1]), key=repr)))
    if k[0] == "mm":
        _, lk, wk, rk = k
        return ("mm", tkey(rk), wk, tkey(lk))
    if k[0] == "mmask":
        _, lk, wk, rk, mk = k
        return ("mmask", tkey(rk), wk, tkey(lk), tkey(mk))
    return ("T", k)  # pragma: no cover


def _had(keys: Sequence[Key]) -> Key:
    if len(keys) == 1:
        return keys[0]
    return ("had", tuple(sorted(keys, key=repr)))


def _prod(keys: Sequence[Key]) -> Key | None:
    if not keys:
        return None
    if len(keys) == 1:
        return keys[0]
    return ("prod", tuple(sorted(keys, key=repr)))


# ---------------------------------------------------------------------- elimination


class _State:
    """Factors over Q's live nodes: vectors by node, matrices by ordered pair (u, v)."""

    def __init__(self, q: SmallGraph) -> None:
        self.unary: dict[int, list[Key]] = {v: [] for v in range(q.n)}
        self.binary: dict[tuple[int, int], list[Key]] = {}
        for u, v in q.edges:
            self.binary.setdefault((u, v), []).append("A")
        self.alive = set(range(q.n))

    def neighbours(self, v: int) -> list[int]:
        return sorted({b if a == v else a for (a, b) in self.binary if v in (a, b)})

    def matrix(self, u: int, v: int) -> Key | None:
        """The Hadamard product of the factors on {u, v}, oriented rows u, columns v."""
        keys = [k for k in self.binary.get((u, v), [])]
        keys += [tkey(k) for k in self.binary.get((v, u), [])]
        return _had(keys) if keys else None

    def drop_pair(self, u: int, v: int) -> None:
        self.binary.pop((u, v), None)
        self.binary.pop((v, u), None)


def _rho(host: Host, key: Key | None, memo: dict[Key, float]) -> float:
    """Estimated stored entries per row of a matrix factor."""
    if key is None:
        return 0.0
    if key == "A":
        return max(host.rho, 1.0)
    if key in memo:
        return memo[key]
    if key in host.cache:
        m = host.cache[key]
        r = m.nnz / max(host.n, 1)
    else:
        assert isinstance(key, tuple)
        op = key[0]
        if op == "T":
            r = _rho(host, key[1], memo)
        elif op == "had":
            r = min(_rho(host, k, memo) for k in key[1])
        elif op == "mm":
            r = min(float(host.n), _rho(host, key[1], memo) * _rho(host, key[3], memo))
        else:  # mmask
            r = _rho(host, key[4], memo)
    memo[key] = r
    return r


def _flops(host: Host, key: Key | None, memo: dict[Key, float]) -> float:
    """Estimated work to compute a factor not computed yet (0 when cached)."""
    if key is None or key == "A" or key in host.cache:
        return 0.0
    assert isinstance(key, tuple)
    op = key[0]
    n = host.n
    if op == "T":
        return n * _rho(host, key[1], memo) + _flops(host, key[1], memo)
    if op == "had":
        return sum(n * _rho(host, k, memo) + _flops(host, k, memo) for k in key[1])
    if op == "mmask" and key[4] == ("mm", key[1], key[2], key[3]):
        return _flops(host, key[4], memo)
    if op in ("mm", "mmask"):
        own = n * _rho(host, key[1], memo) * _rho(host, key[3], memo)
        extra = _flops(host, key[1], memo) + _flops(host, key[3], memo)
        if op == "mmask":
            extra += _flops(host, key[4], memo)
        return own + extra
    return 0.0


def _step(state: _State, v: int) -> tuple[str, Any]:
    """What eliminating v makes: ("vec", u, key) or ("mat", u, x, key), or ("core", None)."""
    nb = state.neighbours(v)
    w = _prod(state.unary[v])
    if len(nb) == 1:
        (u,) = nb
        m = state.matrix(u, v)
        return "vec", (u, ("mv", m, w))
    if len(nb) == 2:
        u, x = nb
        left, right = state.matrix(u, v), state.matrix(v, x)
        mask = state.matrix(u, x)
        if mask is None:
            return "mat", (u, x, ("mm", left, w, right), None)
        return "mat", (u, x, ("mmask", left, w, right, mask), mask)
    return "core", None


def hom_rooted(host: Host, q: SmallGraph, roots: Sequence[int]) -> np.ndarray:
    """hom(Q, G) with ``roots`` fixed: one root gives an int64 vector over G's nodes; two
    adjacent roots (a, b) give one count per stored entry of A (CSR order: (u, v) with a on u,
    b on v)."""
    if not roots or len(roots) > 2:
        raise ValueError("hom_rooted takes one or two roots")
    if len(roots) == 2 and (min(roots), max(roots)) not in q.edges:
        raise ValueError("two roots must be adjacent in the pattern")
    state = _State(q)
    rootset = set(roots)
    memo: dict[Key, float] = {}
    _, actions = _search(host, state, rootset, frozenset(), memo, {})
    for action in actions:
        if action[0] == "elim":
            _, v, kind, what = action
            _apply(state, v, kind, what)
        elif action[0] == "theta":
            return _close_theta(host, state, action[1], action[2], action[3])
    if state.alive == rootset:
        return _assemble(host, state, list(roots))
    return _enumerate(host, state, list(roots))


def _copy(state: _State) -> _State:
    out = _State.__new__(_State)
    out.unary = {v: list(k) for v, k in state.unary.items()}
    out.binary = {e: list(k) for e, k in state.binary.items()}
    out.alive = set(state.alive)
    return out


def _apply(state: _State, v: int, kind: str, what: Any) -> None:
    for u in state.neighbours(v):
        state.drop_pair(u, v)
    state.alive.discard(v)
    state.unary.pop(v)
    if kind == "vec":
        u, key = what
        state.unary[u].append(key)
    else:
        u, x, key, mask = what
        if mask is not None:
            state.drop_pair(u, x)
            key = _had([key, mask])
        state.binary.setdefault((u, x), []).append(key)


def _signature(state: _State) -> Any:
    return (
        tuple(sorted((v, tuple(sorted(map(repr, k)))) for v, k in state.unary.items())),
        tuple(sorted((e, tuple(sorted(map(repr, k)))) for e, k in state.binary.items())),
    )


def _search(
    host: Host,
    state: _State,
    rootset: set[int],
    planned: frozenset[Key],
    memo: dict[Key, float],
    seen: dict[Any, tuple[float, list[Any]]],
) -> tuple[float, list[Any]]:
    """The cheapest way (estimated work, list of actions) to finish from ``state``: eliminate a
    node of degree ≤ 2, close a theta at the root (:func:`_close_theta`), or enumerate the
    rest. Exhaustive over orders (Q has at most 8 nodes), states memoised."""
    sig = _signature(state)
    if sig in seen:
        return seen[sig]
    n = host.n
    if state.alive == rootset:
        return 0.0, []
    options: list[tuple[float, list[Any]]] = []
    if len(rootset) == 1:
        (r,) = rootset
        theta = _theta(state, r)
        if theta is not None:
            x, ys = theta
            cost = 0.0
            for y in ys:
                cost += (
                    n * _rho(host, state.matrix(r, y), memo) * _rho(host, state.matrix(y, x), memo)
                )
            options.append((cost, [("theta", r, x, ys)]))
    for v in sorted(state.alive - rootset):
        kind, what = _step(state, v)
        if kind == "core":
            continue
        key = what[1] if kind == "vec" else what[2]
        if kind == "mat" and what[3] is None and key not in host.cache and key not in planned:
            if n * _rho(host, key, memo) > FILL_CAP:
                continue
        cost = 0.0 if key in planned else _flops(host, key, memo)
        nxt = _copy(state)
        _apply(nxt, v, kind, what)
        sub_cost, sub = _search(host, nxt, rootset, planned | {key}, memo, seen)
        options.append((cost + sub_cost, [("elim", v, kind, what), *sub]))
    if not options:
        rest = len(state.alive - rootset)
        options.append((n * max(host.rho, 1.0) ** (rest + 1), [("enum",)]))
    best = min(options, key=lambda o: o[0])
    seen[sig] = best
    return best


def _theta(state: _State, r: int) -> tuple[int, list[int]] | None:
    """(x, [y…]) when the live nodes besides the root r are x and nodes y each adjacent to
    exactly r and x: parallel paths r – y – x (and maybe an edge r – x) that close at r."""
    rest = sorted(state.alive - {r})
    for x in rest:
        ys = [y for y in rest if y != x]
        if ys and all(state.neighbours(y) == sorted((r, x)) for y in ys):
            if set(state.neighbours(x)) <= {r, *ys}:
                return x, ys
    return None


def _close_theta(host: Host, state: _State, r: int, x: int, ys: list[int]) -> np.ndarray:
    """hom with r fixed = Σ_x M_rx w_x Π_y (L_ry diag(w_y) R_yx)[r, x], by blocks of root
    rows: the products L R are formed a block at a time and never stored whole."""
    memo: dict[Key, float] = {}
    paths: dict[Key, int] = {}
    for y in ys:
        key = ("mm", state.matrix(r, y), _prod(state.unary[y]), state.matrix(y, x))
        paths[key] = paths.get(key, 0) + 1
    direct = state.matrix(r, x)
    wx, wr = _prod(state.unary[x]), _prod(state.unary[r])
    width = max(_rho(host, k, memo) for k in paths)
    block = int(max(64, min(host.n, 2e7 / max(width, 1.0))))
    out = np.zeros(host.n, dtype=np.int64)
    for lo in range(0, host.n, block):
        hi = min(host.n, lo + block)
        acc: Any = None
        for path, times in paths.items():
            assert isinstance(path, tuple)
            _, lk, wk, rk = path
            left = host.value(lk)[lo:hi]
            if wk is not None:
                left = left.copy()
                left.data = left.data * host.value(wk)[left.indices]
            prod = (left @ host.value(rk)).tocsr()
            for _ in range(times):
                acc = prod if acc is None else acc.multiply(prod)
        if direct is not None:
            acc = acc.multiply(host.value(direct)[lo:hi])
        acc = sp.csr_matrix(acc)
        if wx is not None:
            acc.data = acc.data * host.value(wx)[acc.indices]
        out[lo:hi] = np.asarray(acc.sum(axis=1), dtype=np.int64).ravel()
    if wr is not None:
        out *= host.value(wr)
    return out


def _assemble(host: Host, state: _State, roots: list[int]) -> np.ndarray:
    if len(roots) == 1:
        (r,) = roots
        w = _prod(state.unary[r])
        return np.ones(host.n, dtype=np.int64) if w is None else host.value(w).copy()
    a, b = roots
    m = state.matrix(a, b)
    assert m is not None
    keys, vals = host.lookup(m)
    akeys = host.lookup_a()
    pos = np.searchsorted(keys, akeys)
    pos = np.minimum(pos, max(keys.size - 1, 0))
    out = np.where(keys[pos] == akeys, vals[pos], 0) if keys.size else np.zeros_like(akeys)
    out = out.astype(np.int64)
    rows = akeys // host.n
    cols = akeys % host.n
    wa, wb = _prod(state.unary[a]), _prod(state.unary[b])
    if wa is not None:
        out *= host.value(wa)[rows]
    if wb is not None:
        out *= host.value(wb)[cols]
    return out


def _enumerate(host: Host, state: _State, roots: list[int]) -> np.ndarray:
    """Sum over the live nodes' assignments of the product of the factors, grouped by the
    roots, by extending partial assignments (arrays of node tuples) one node at a time."""
    n = host.n
    memo: dict[Key, float] = {}
    order = list(roots)
    rest = sorted(state.alive - set(roots))
    anchors: list[tuple[int, Key] | None] = [None] * len(order)
    if len(roots) == 2:
        anchors[1] = (roots[0], state.matrix(roots[0], roots[1]))
    while rest:

        def score(v: int) -> tuple[float, float, int]:
            links = [u for u in order if state.matrix(u, v) is not None]
            rho = min((_rho(host, state.matrix(u, v), memo) for u in links), default=1e30)
            return (-len(links), rho, v)

        v = min(rest, key=score)
        links = [u for u in order if state.matrix(u, v) is not None]
        u = min(links, key=lambda u: _rho(host, state.matrix(u, v), memo))
        anchors.append((u, state.matrix(u, v)))
        order.append(v)
        rest.remove(v)
    pos = {v: i for i, v in enumerate(order)}
    checks: list[list[tuple[int, Key]]] = [[] for _ in order]
    for i, v in enumerate(order):
        anchor = anchors[i]
        for u in order[:i]:
            m = state.matrix(u, v)
            if m is not None and (anchor is None or u != anchor[0]):
                checks[i].append((u, m))
    weights = [_prod(state.unary[v]) for v in order]
    # warm the factors (outside the chunk loop)
    for i in range(len(order)):
        a = anchors[i]
        if a is not None:
            host.value(a[1])
        for _, m in checks[i]:
            host.lookup(m)
        if weights[i] is not None:
            host.value(weights[i])
    growth = 1.0
    for a in anchors[1:]:
        assert a is not None
        growth *= max(_rho(host, a[1], memo), 1.0)
    step = int(max(64, min(n, CHUNK_ROWS / max(growth, 1.0))))
    if len(roots) == 1:
        out = np.zeros(n, dtype=np.int64)
    else:
        akeys = host.lookup_a()
        out = np.zeros(akeys.size, dtype=np.int64)
    for lo in range(0, n, step):
        cols = [np.arange(lo, min(n, lo + step), dtype=np.int64)]
        val = np.ones(cols[0].size, dtype=np.int64)
        if weights[0] is not None:
            val = val * host.value(weights[0])[cols[0]]
        keep = val != 0
        cols, val = [c[keep] for c in cols], val[keep]
        for i in range(1, len(order)):
            anchor = anchors[i]
            assert anchor is not None
            m = host.value(anchor[1])
            src = cols[pos[anchor[0]]]
            starts, ends = m.indptr[src], m.indptr[src + 1]
            counts = (ends - starts).astype(np.int64)
            total = int(counts.sum())
            rep = np.repeat(np.arange(src.size), counts)
            offs = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
            idx = np.repeat(starts.astype(np.int64), counts) + offs
            new = m.indices[idx].astype(np.int64)
            val = val[rep] * np.asarray(m.data[idx], dtype=np.int64)
            cols = [c[rep] for c in cols]
            keep = np.ones(new.size, dtype=bool)
            for u, mk in checks[i]:
                keys, vals = host.lookup(mk)
                k = cols[pos[u]] * n + new
                at = np.searchsorted(keys, k)
                at = np.minimum(at, max(keys.size - 1, 0))
                got = np.where(keys[at] == k, vals[at], 0) if keys.size else np.zeros_like(k)
                val = val * got
            if weights[i] is not None:
                val = val * host.value(weights[i])[new]
            keep = val != 0
            cols = [c[keep] for c in cols]
            cols.append(new[keep])
            val = val[keep]
        if len(roots) == 1:
            np.add.at(out, cols[0], val)
        else:
            akeys = host.lookup_a()
            k = cols[0] * n + cols[1]
            np.add.at(out, np.searchsorted(akeys, k), val)
    return out


def hom_bound(host: Host, q: SmallGraph) -> float:
    """A bound on every count and partial count of :func:`hom_rooted` for a connected Q: at
    most Δ^(k−1) per root assignment, n Δ^(k−1) summed."""
    return float(max(host.n, 1)) * float(max(host.max_degree, 1)) ** max(q.n - 1, 0)


def check_bound(host: Host, q: SmallGraph, scale: float = 1.0) -> None:
    b = hom_bound(host, q) * scale
    if b >= SAFE:
        raise MatlangError(
            f"homomorphism counts of a {q.n}-node pattern on a graph with n = {host.n} and "
            f"maximum degree {host.max_degree} could reach {b:.2g}, past int64's exact range "
            f"(2^62): count refuses rather than round"
        )


# ---------------------------------------------------------------------- listing copies


def _extend(host: Host, cols: Any, src: np.ndarray, oriented: Any = None) -> Any:
    """Every (row, neighbour) pair of the partial rows: (row index, new node) arrays."""
    m = host.A if oriented is None else oriented
    starts, ends = m.indptr[src], m.indptr[src + 1]
    counts = (ends - starts).astype(np.int64)
    total = int(counts.sum())
    rep = np.repeat(np.arange(src.size), counts)
    offs = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    new = m.indices[np.repeat(starts.astype(np.int64), counts) + offs].astype(np.int64)
    return rep, new


def _has_edge(host: Host, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    keys = host.lookup_a()
    k = u * host.n + v
    if not keys.size:
        return np.zeros(k.size, dtype=bool)
    at = np.minimum(np.searchsorted(keys, k), keys.size - 1)
    return keys[at] == k  # type: ignore[no-any-return]


@lru_cache(maxsize=512)
def _listing_plan(q: SmallGraph) -> tuple[bool, list[int], list[int], Any, Any, np.ndarray]:
    """The order :func:`list_copies` extends Q's nodes in: each after its anchor (a
    neighbour), with the earlier nodes it must be adjacent to and those it must differ from."""
    clique = len(q.edges) == q.n * (q.n - 1) // 2
    if clique:
        order = list(range(q.n))
        parent = [-1] + [i - 1 for i in range(1, q.n)]
    else:
        start = max(range(q.n), key=lambda v: (len(q.neighbours[v]), -v))
        order, parent = [start], [-1]
        seen = {start}
        while len(order) < q.n:  # BFS order: each node after a neighbour (its anchor)
            for i, u in enumerate(order):
                nxt = sorted(w for w in q.neighbours[u] if w not in seen)
                if nxt:
                    w = max(nxt, key=lambda w: len(q.neighbours[w] & seen))
                    order.append(w)
                    parent.append(i)
                    seen.add(w)
                    break
    linked = [
        [j for j in range(i) if j != parent[i] and (clique or order[j] in q.neighbours[order[i]])]
        for i in range(q.n)
    ]
    apart = [[j for j in range(i) if j != parent[i] and j not in linked[i]] for i in range(q.n)]
    return clique, order, parent, linked, apart, np.argsort(order)


def list_copies(
    host: Host, q: SmallGraph, *, induced: bool = False, rows_per_chunk: int = CHUNK_ROWS
) -> Any:
    """Yield arrays (m, k) of injective homomorphisms of Q into G (induced: non-edges of Q on
    non-edges of G), chunked by the first node's image. Every copy of Q appears |Aut Q| times;
    for a complete Q (clique listing in degree order: each edge oriented towards the endpoint of
    larger (degree, id), whose out-degrees are at most √(2m)) each clique appears once."""
    n = host.n
    clique, order, parent, linked, apart, where = _listing_plan(q)
    oriented = None
    if clique:
        rank = np.lexsort((np.arange(n), host.deg))
        pos = np.empty(n, dtype=np.int64)
        pos[rank] = np.arange(n)
        a = host.A.tocoo()
        up = pos[a.row] < pos[a.col]
        oriented = sp.csr_matrix(
            (np.ones(int(up.sum()), dtype=np.int64), (a.row[up], a.col[up])), shape=(n, n)
        )
        oriented.sort_indices()
        growth = max(host.rho / 2, 1.0) ** (q.n - 1)
    else:
        growth = max(host.rho, 1.0) * max(host.rho - 1, 1.0) ** (q.n - 2)
    step = int(max(16, min(n, rows_per_chunk / growth))) if n else 1
    for lo in range(0, n, step):
        rows = np.arange(lo, min(n, lo + step), dtype=np.int64)[:, None]
        for i in range(1, q.n):
            rep, new = _extend(host, [], rows[:, parent[i]], oriented)
            rows = rows[rep]
            keep = None
            if apart[i]:
                keep = (rows[:, apart[i]] != new[:, None]).all(1)
                if induced:
                    for j in apart[i]:
                        keep &= ~_has_edge(host, rows[:, j], new)
            for j in linked[i]:
                hit = _has_edge(host, rows[:, j], new)
                keep = hit if keep is None else keep & hit
            if keep is not None:
                rows, new = rows[keep], new[keep]
            rows = np.concatenate([rows, new[:, None]], 1)
            if not rows.shape[0]:
                break
        if rows.shape[1] == q.n and rows.shape[0]:
            yield rows[:, where]


def listing_rows(host: Host, q: SmallGraph) -> float:
    """Estimated rows :func:`list_copies` ends with (a tree of Q grown on G, each step
    ρ − 1 new nodes after the first; ρ = Σd²/Σd)."""
    if len(q.edges) == q.n * (q.n - 1) // 2:
        return host.n * max(host.rho / 2, 1.0) ** min(q.n - 1, 2)
    # a copy is an injective map: past the first step a path does not step back
    return host.n * max(host.rho, 1.0) * max(host.rho - 1, 1.0) ** (q.n - 2)


__all__ = ["Host", "SAFE", "check_bound", "hom_bound", "hom_rooted", "list_copies", "listing_rows"]
