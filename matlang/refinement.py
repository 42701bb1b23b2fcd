"""Refinement sentences: L3+ sentences that run rounds of the folklore 2-WL test (≡ 3-WL).

The paper bounds L3 by 3-WL and cites Geerts (2020, Theorem 9.2) for the converse, whose proof
builds sentences that *simulate* 2-FWL: a matrix ``X_t`` whose entry ``(i, j)`` stands for the
colour of the pair ``(i, j)`` after ``t`` rounds, and ``X_{t+1}(i, j)`` computed from
``X_t(i, j)`` and the multiset ``{(X_t(i, k), X_t(k, j))}_k`` by a matrix product of pointwise
functions of ``X_t``. With the ``+`` enrichment — sums, scalars and pointwise functions, which add
no separating power to L3 (Proposition 7.5 there) — one family of such sentences is::

    X_0     = A + 2 diag(𝟏)                         0: no edge, 1: edge, 2: i = j
    X_{t+1} = h(c_t X_t + f_t(X_t) g_t(X_t))        h(x) = x mod p
    s_{t,k} = 𝟏ᵀ r_k(X_t) 𝟏                           r_k(x) = xᵏ mod p

where ``f_t``, ``g_t`` are cubic polynomials taken mod p and ``c_t`` a scalar, all fixed, seeded
constants (:func:`rounds`): the family is one list of sentences, the same for every graph.
``Σ_k f(X(i, k)) g(X(k, j)) = Σ_{u,v≤3} α_u β_v Σ_k X(i,k)ᵘ X(k,j)ᵛ`` mixes the multiset's
moments with random weights, so ``X_{t+1}`` hashes (old colour, multiset of colour pairs) the way
a 2-FWL round does; ``r_k`` reads the multiset of ``X_t``'s entries through its power sums.

*What is certain and what is not.* The sentences are evaluated exactly: every value is an
integer below p (products of residues summed over n terms stay below n·p² < 2⁶³ in int64), so
two graphs whose values differ are certainly separated, by an explicit L3+ sentence
(:func:`witness_program`, checkable with ``matlang eval``). Every value is a function of the
2-FWL colours, so the family never separates a pair 3-WL does not. The hashing may merge two
colours (the moments up to degree 3 of two multisets, or the combination with the old colour,
may coincide), which can only lose a separation; :class:`Refinement` records, per round, the
number of distinct values, which equals the number of 2-FWL colours when nothing was merged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from matlang.errors import MatlangError

#: The modulus: the largest prime below 2²⁵; ``c X + F G`` with entries below p stays below
#: (n + 1)·p² < 2⁶³ for n ≤ :data:`MAX_NODES`.
MODULUS = 33_554_393
MAX_NODES = 8_000
#: Degree of the polynomials f_t, g_t (degree 1 merges colours on BREC's CFI pairs; 3 does not).
DEGREE = 3
SEED = 2021


@dataclass(frozen=True)
class Round:
    """The constants of one round: coefficients of f and g (constant term first), and c."""

    f: tuple[int, ...]
    g: tuple[int, ...]
    c: int


def rounds(count: int, seed: int = SEED) -> list[Round]:
    """The constants of the first ``count`` rounds (a prefix of every longer list)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        f = tuple(int(v) for v in rng.integers(1, MODULUS, DEGREE + 1))
        g = tuple(int(v) for v in rng.integers(1, MODULUS, DEGREE + 1))
        out.append(Round(f, g, int(rng.integers(1, MODULUS))))
    return out


def _poly(x: np.ndarray, coeffs: Sequence[int]) -> np.ndarray:
    """Σ coeffs[u] xᵘ mod p by Horner's rule (every intermediate below p²)."""
    out = np.full_like(x, coeffs[-1])
    for a in coeffs[-2::-1]:
        out = (out * x + a) % MODULUS
    return out


def initial(stack: np.ndarray) -> np.ndarray:
    """``X_0 = A + 2 diag(𝟏)`` for a (G, n, n) stack of 0/1 adjacency matrices."""
    n = stack.shape[-1]
    if n > MAX_NODES:
        raise MatlangError(f"refinement sentences are exact up to {MAX_NODES} nodes, got {n}")
    return stack.astype(np.int64) + 2 * np.eye(n, dtype=np.int64)


def step(x: np.ndarray, r: Round) -> np.ndarray:
    """``X_{t+1} = (c X_t + f(X_t) g(X_t)) mod p`` (matrix product per graph)."""
    return (r.c * x + np.matmul(_poly(x, r.f), _poly(x, r.g))) % MODULUS


def power_sums(x: np.ndarray, k: int) -> np.ndarray:
    """``s_k = Σ_ij (X_ijᵏ mod p)`` per graph of a (G, n, n) stack, as exact integers."""
    y = x.copy()
    for _ in range(k - 1):
        y = y * x % MODULUS
    return y.reshape(y.shape[0], -1).sum(axis=1)


@dataclass
class Refinement:
    """A pair's run: rounds computed, why it stopped, the separating sentence (round t and
    power k, with its two values) and the distinct values of ``X_t`` per round."""

    rounds_run: int = 0
    stable: bool = False  # stopped because the number of distinct values stopped growing
    separation: tuple[int, int] | None = None  # (t, k)
    values: tuple[int, int] = (0, 0)
    colours: list[int] = field(default_factory=list)


def _first_power(x: np.ndarray, y: np.ndarray) -> tuple[int, int, int] | None:
    """The first k with Σ (xᵏ mod p) ≠ Σ (yᵏ mod p), for two value arrays whose multisets
    differ (over F_p the power sums k ≤ len determine a multiset: Newton's identities).
    Graphs of different sizes differ at k ≤ 2 (the sums are 2m + 2n and 2m + 4n at t = 0)."""
    px, py = x.reshape(-1).astype(np.int64), y.reshape(-1).astype(np.int64)
    ax, ay = px.copy(), py.copy()
    for k in range(1, max(len(px), len(py)) + 1):
        sx, sy = int(ax.sum()), int(ay.sum())
        if sx != sy:
            return k, sx, sy
        ax, ay = ax * px % MODULUS, ay * py % MODULUS
    return None


def search_pair(a: np.ndarray, b: np.ndarray, max_rounds: int) -> Refinement:
    """Run the family on two graphs for up to ``max_rounds`` rounds; stop at the first round
    whose entry multisets differ (then find the power k that tells), or when the number of
    distinct values stops growing (the partition is stable: later rounds cannot separate)."""
    if max_rounds < 0:
        raise MatlangError(f"--rounds must be at least 0, got {max_rounds}")
    consts = rounds(max_rounds)
    xa, xb = initial(a[None])[0], initial(b[None])[0]
    res = Refinement()
    for t in range(max_rounds + 1):
        if t:
            if a.shape == b.shape:
                both = step(np.stack([xa, xb]), consts[t - 1])
                xa, xb = both[0], both[1]
            else:
                xa, xb = step(xa[None], consts[t - 1])[0], step(xb[None], consts[t - 1])[0]
        res.rounds_run = t
        count = len(np.union1d(xa, xb))
        res.colours.append(count)
        if xa.shape != xb.shape or not np.array_equal(np.sort(xa, None), np.sort(xb, None)):
            found = _first_power(xa, xb)
            if found is not None:
                k, sa, sb = found
                res.separation, res.values = (t, k), (sa, sb)
            return res
        if t and count == res.colours[-2]:
            res.stable = True
            return res
    return res


# --------------------------------------------------------------------------- sentences


def _poly_text(coeffs: Sequence[int]) -> str:
    terms = [str(coeffs[0])] + [
        f"{a}*x" if u == 1 else f"{a}*x^{u}" for u, a in enumerate(coeffs) if u
    ]
    return " + ".join(terms)


def _power_text(k: int) -> str:
    """``xᵏ`` as a formula whose constant exponents stay ≤ 100 and values below p·2¹⁶⁶⁰⁰."""
    if k <= 100:
        return "x" if k == 1 else f"x^{k}"
    return f"Mod({_power_text(k // 100)}, {MODULUS})^100 * x^{k % 100}"


def witness_program(t: int, k: int) -> str:
    """The sentence ``s_{t,k}`` as a MATLANG program (``let`` bindings, one line each)."""
    p = MODULUS
    lines = [f"let h(x) = Mod(x, {p})"]
    consts = rounds(t)
    for s, r in enumerate(consts, 1):
        lines.append(f"let f{s}(x) = Mod({_poly_text(r.f)}, {p})")
        lines.append(f"let g{s}(x) = Mod({_poly_text(r.g)}, {p})")
    if k > 1:
        lines.append(f"let r(x) = Mod({_power_text(k)}, {p})")
    lines.append("let X0 = A + 2 diag(𝟏)")
    for s, r in enumerate(consts, 1):
        lines.append(f"let X{s} = h({r.c} X{s - 1} + f{s}(X{s - 1}) g{s}(X{s - 1}))")
    lines.append(f"𝟏ᵀ X{t} 𝟏" if k == 1 else f"𝟏ᵀ r(X{t}) 𝟏")
    return "\n".join(lines)


def witness_record(run: Refinement) -> dict[str, object] | None:
    """A separated pair's witness as JSON — round, power, the two values and the program — or
    None when the pair was not separated."""
    if run.separation is None:
        return None
    t, power = run.separation
    return {
        "round": t,
        "power": power,
        "values": list(run.values),
        "witness": witness_program(t, power),
    }


def readouts(adjacencies: Sequence[np.ndarray], max_rounds: int, powers: int) -> np.ndarray:
    """The values ``s_{t,k}`` (t ≤ ``max_rounds``, k ≤ ``powers``) of every graph, as a
    (graphs, (max_rounds + 1) · powers) int64 array: the family's features of each graph."""
    consts = rounds(max_rounds)
    out = np.zeros((len(adjacencies), (max_rounds + 1) * powers), dtype=np.int64)
    by_n: dict[int, list[int]] = {}
    for g, adj in enumerate(adjacencies):
        by_n.setdefault(int(adj.shape[0]), []).append(g)
    for members in by_n.values():
        x = initial(np.stack([np.asarray(adjacencies[g]) for g in members]))
        for t in range(max_rounds + 1):
            if t:
                x = step(x, consts[t - 1])
            for k in range(1, powers + 1):
                out[members, t * powers + k - 1] = power_sums(x, k)
    return out


def signatures(adjacencies: Sequence[np.ndarray], max_rounds: int) -> list[bytes]:
    """Per graph, the sorted entries of ``X_0 .. X_R`` (with n): equal signatures ⇔ no
    sentence ``s_{t,k}`` (t ≤ R, any k) separates the two graphs."""
    consts = rounds(max_rounds)
    out: list[bytes] = [b""] * len(adjacencies)
    by_n: dict[int, list[int]] = {}
    for g, adj in enumerate(adjacencies):
        by_n.setdefault(int(adj.shape[0]), []).append(g)
    for n, members in by_n.items():
        x = initial(np.stack([np.asarray(adjacencies[g]) for g in members]))
        parts = [np.full((len(members), 1), n, dtype=np.int64)]
        for t in range(max_rounds + 1):
            if t:
                x = step(x, consts[t - 1])
            parts.append(np.sort(x.reshape(len(members), -1), axis=1))
        sig = np.concatenate(parts, axis=1)
        for r, g in enumerate(members):
            out[g] = sig[r].tobytes()
    return out
