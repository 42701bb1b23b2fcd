"""Support inference: a structural bound on where each matrix subexpression can be nonzero.

A :class:`Support` is a small immutable expression over two atoms, the edges ``E`` of the graph
(the support of ``A``) and the identity ``I`` (the support of ``diag(v)``), closed under

=============  =====================================  ========================================
``S ∘ T``      path composition (k-hop)               ``supp(M N) ⊆ supp M ∘ supp N``
``S ∩ T``      intersection                           ``supp(M ⊙ N) ⊆ supp M ∩ supp N``
``S ∪ T``      union                                  ``supp(M + N) ⊆ supp M ∪ supp N``
``Sᵀ``         transpose                              ``supp(Mᵀ) = (supp M)ᵀ``
``J``          everything (full, "dense")             ``f(M)`` with ``f(0) ≠ 0``, ``v wᵀ``
``∅``          nothing                                ``A ⊙ I`` (graphs have no self-loops)
=============  =====================================  ========================================

:func:`infer_support` gives the bound of a matrix expression. A bound is not yet something to
compute on: :func:`choose_mask` turns it into a **mask**, a support without ``∩`` and ``J`` that can
be built in memory linear in its size. For ``S ∩ T`` it keeps the cheaper side (a superset of the
intersection, so still a valid bound): ``A ⊙ A²`` lives on ``E``, not on the set of edges in
triangles, which would need the 2-hop set to find. A ``J`` left after that is an error
(:class:`FullMaskError`) unless the caller allows dense masks.

This module is used by :mod:`compiler.lower` and by the GNNML1/GNNML3 targets::

    s = infer_support(parse("A ⊙ A²"))    # E ∩ E∘E
    m = choose_mask(s)                     # E
    order(m)                               # 1: |m| grows like n·d¹
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import sympy as sp

from matlang import ast
from matlang.errors import CompileError, SourceError, Span
from matlang.functions import Function

# --------------------------------------------------------------------------- the lattice


@dataclass(frozen=True)
class Support:
    """Base class; subclasses are immutable and compare structurally."""

    def __str__(self) -> str:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    @property
    def is_full(self) -> bool:
        return isinstance(self, Full)

    @property
    def is_mask(self) -> bool:
        """True when the support can be built as it is (no ``∩``, no ``J``)."""
        if isinstance(self, (Meet, Full)):
            return False
        return all(c.is_mask for c in self.children())

    def children(self) -> tuple[Support, ...]:
        return ()


@dataclass(frozen=True)
class Edges(Support):
    """``E``: the entries of the adjacency matrix (symmetric, no self-loops)."""

    def __str__(self) -> str:
        return "E"


@dataclass(frozen=True)
class Identity(Support):
    """``I``: the diagonal."""

    def __str__(self) -> str:
        return "I"


@dataclass(frozen=True)
class Empty(Support):
    """``∅``: a matrix that is zero everywhere."""

    def __str__(self) -> str:
        return "∅"


@dataclass(frozen=True)
class Full(Support):
    """``J``: possibly nonzero everywhere. ``reason`` and ``origin`` say why (not compared)."""

    reason: str = field(default="", compare=False)
    origin: ast.Expr | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return "J"


@dataclass(frozen=True)
class Compose(Support):
    """``S ∘ T = {(i, j) : ∃k, (i, k) ∈ S, (k, j) ∈ T}``."""

    left: Support
    right: Support

    def children(self) -> tuple[Support, ...]:
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"{_wrap(self.left, 3)}∘{_wrap(self.right, 3)}"


@dataclass(frozen=True)
class Meet(Support):
    """``S ∩ T``."""

    left: Support
    right: Support

    def children(self) -> tuple[Support, ...]:
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"{_wrap(self.left, 2)} ∩ {_wrap(self.right, 2)}"


@dataclass(frozen=True)
class Join(Support):
    """``S ∪ T``."""

    left: Support
    right: Support

    def children(self) -> tuple[Support, ...]:
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"{_wrap(self.left, 1)} ∪ {_wrap(self.right, 1)}"


@dataclass(frozen=True)
class Flip(Support):
    """``Sᵀ = {(j, i) : (i, j) ∈ S}``."""

    operand: Support

    def children(self) -> tuple[Support, ...]:
        return (self.operand,)

    def __str__(self) -> str:
        return f"{_wrap(self.operand, 4)}ᵀ"


def _level(s: Support) -> int:
    if isinstance(s, Join):
        return 1
    if isinstance(s, Meet):
        return 2
    if isinstance(s, Compose):
        return 3
    return 5


def _wrap(s: Support, level: int) -> str:
    text = str(s)
    return f"({text})" if _level(s) < level else text


E = Edges()
I = Identity()  # noqa: E741 - the paper's name
EMPTY = Empty()


# --------------------------------------------------------------------------- smart constructors


def _sorted_pair(a: Support, b: Support) -> tuple[Support, Support]:
    """∩ and ∪ are commutative: a canonical operand order makes equal bounds compare equal."""
    return (a, b) if (str(a), repr(a)) <= (str(b), repr(b)) else (b, a)


def flip(s: Support) -> Support:
    """``Sᵀ``, pushed down to the atoms."""
    if isinstance(s, (Edges, Identity, Empty, Full)):
        return s  # Eᵀ = E (A is symmetric), Iᵀ = I, ∅ᵀ = ∅, Jᵀ = J
    if isinstance(s, Flip):
        return s.operand  # (Sᵀ)ᵀ = S
    if isinstance(s, Compose):
        return compose(flip(s.right), flip(s.left))  # (S∘T)ᵀ = Tᵀ∘Sᵀ
    if isinstance(s, Meet):
        return meet(flip(s.left), flip(s.right))  # (S∩T)ᵀ = Sᵀ∩Tᵀ
    if isinstance(s, Join):
        return join(flip(s.left), flip(s.right))  # (S∪T)ᵀ = Sᵀ∪Tᵀ
    return Flip(s)  # pragma: no cover - every support is one of the above


def compose(a: Support, b: Support) -> Support:
    """``a ∘ b`` with the identities of path composition applied."""
    if isinstance(a, Empty) or isinstance(b, Empty):
        return EMPTY  # ∅∘S = S∘∅ = ∅
    if isinstance(a, Identity):
        return b  # I∘S = S
    if isinstance(b, Identity):
        return a  # S∘I = S
    if isinstance(a, Full):
        return a  # J∘S ⊆ J
    if isinstance(b, Full):
        return b  # S∘J ⊆ J
    return Compose(a, b)


def meet(a: Support, b: Support) -> Support:
    """``a ∩ b`` with the lattice identities applied."""
    if a == b:
        return a  # S∩S = S
    if isinstance(a, Empty) or isinstance(b, Empty):
        return EMPTY  # S∩∅ = ∅
    if isinstance(a, Full):
        return b  # J∩S = S
    if isinstance(b, Full):
        return a  # S∩J = S
    if {type(a), type(b)} == {Edges, Identity}:
        return EMPTY  # E∩I = ∅: batches are validated to have no self-loops
    a, b = _sorted_pair(a, b)
    return Meet(a, b)


def join(a: Support, b: Support) -> Support:
    """``a ∪ b`` with the lattice identities applied."""
    if a == b:
        return a  # S∪S = S
    if isinstance(a, Empty):
        return b  # ∅∪S = S
    if isinstance(b, Empty):
        return a  # S∪∅ = S
    if isinstance(a, Full):
        return a  # J∪S = J
    if isinstance(b, Full):
        return b  # S∪J = J
    a, b = _sorted_pair(a, b)
    return Join(a, b)


# --------------------------------------------------------------------------- function facts


@dataclass(frozen=True)
class FunctionFacts:
    """What support inference needs to know about a pointwise ``f`` (its literal arguments
    already substituted): the value ``f(0, …, 0)`` and which arguments force ``f`` to zero."""

    at_zero: float  # f(0, ..., 0); nan or ±inf when undefined there
    zero_forcing: tuple[int, ...]  # positions i (among the variable arguments) with f|x_i=0 ≡ 0

    @property
    def vanishes_at_zero(self) -> bool:
        return self.at_zero == 0.0

    @property
    def finite_at_zero(self) -> bool:
        return math.isfinite(self.at_zero)


@functools.lru_cache(maxsize=1024)
def _facts(formula: sp.Expr, symbols: tuple[sp.Symbol, ...]) -> FunctionFacts:
    at0 = formula.subs({s: 0 for s in symbols})
    if at0.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        value = math.nan
        if len(symbols) == 1:  # log(0) is zoo to sympy; its limit from the right says -∞
            try:
                lim = sp.limit(formula, symbols[0], 0, "+")
            except (NotImplementedError, ValueError, TypeError):  # pragma: no cover
                lim = sp.nan
            if lim in (sp.oo, -sp.oo):
                value = math.inf if lim == sp.oo else -math.inf
    else:
        try:
            value = float(sp.N(sp.simplify(at0)))
        except (TypeError, ValueError):
            value = math.nan
    forcing = []
    if len(symbols) > 1:
        for i, s in enumerate(symbols):
            part = formula.subs(s, 0)
            if not part.has(sp.nan, sp.zoo) and sp.simplify(part) == 0:
                forcing.append(i)
    elif value == 0.0:
        forcing.append(0)
    return FunctionFacts(value, tuple(forcing))


def function_facts(e: ast.Apply) -> FunctionFacts:
    """The :class:`FunctionFacts` of an application (literal arguments substituted)."""
    fn: Function = e.function
    consts = e.constants
    formula = fn.specialize(consts)
    symbols = tuple(s for i, s in enumerate(fn.symbols) if i not in consts)
    return _facts(formula, symbols)


def _number(x: float) -> str:
    if math.isnan(x):
        return "undefined"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return str(int(x)) if x == int(x) else f"{x:g}"


# --------------------------------------------------------------------------- inference


def _text(e: ast.Expr) -> str:
    from matlang.printer import to_text

    return to_text(e, definitions=False)


class SupportInference:
    """Infers supports of matrix expressions, memoised per (structurally equal) subexpression."""

    def __init__(self) -> None:
        self._memo: dict[ast.Expr, Support] = {}

    def __call__(self, e: ast.Expr) -> Support:
        if not e.shape.is_matrix:
            raise TypeError(f"support of a {e.shape}: only matrices have supports")
        hit = self._memo.get(e)
        if hit is None:
            hit = self._infer(e)
            self._memo[e] = hit
        return hit

    def _infer(self, e: ast.Expr) -> Support:
        if isinstance(e, ast.Input):
            return E  # supp(A) = E
        if isinstance(e, ast.Diag):
            return I  # supp(diag v) = I
        if isinstance(e, ast.Hadamard):
            return meet(self(e.left), self(e.right))  # supp(M⊙N) ⊆ supp M ∩ supp N
        if isinstance(e, (ast.Add, ast.Sub)):
            return join(self(e.left), self(e.right))  # supp(M±N) ⊆ supp M ∪ supp N
        if isinstance(e, ast.Neg):
            return self(e.operand)  # supp(-M) = supp M
        if isinstance(e, ast.Div):
            return self(e.left)  # supp(M/s) ⊆ supp M
        if isinstance(e, ast.Transpose):
            return flip(self(e.operand))  # supp(Mᵀ) = (supp M)ᵀ
        if isinstance(e, ast.Power):
            out: Support = I  # supp(M⁰) = I
            for _ in range(e.exponent):
                out = compose(out, self(e.base))  # supp(Mᵏ) ⊆ (supp M)∘…∘(supp M)
            return out
        if isinstance(e, ast.Mul):
            left, right = e.left.shape, e.right.shape
            if left.is_scalar:
                return self(e.right)  # supp(sM) ⊆ supp M
            if right.is_scalar:
                return self(e.left)
            if left.is_matrix and right.is_matrix:
                return compose(self(e.left), self(e.right))  # supp(MN) ⊆ supp M ∘ supp N
            # a column times a row: v wᵀ is nonzero wherever v_i w_j is
            return Full(f"{_text(e)} is a column times a row, nonzero everywhere in general", e)
        if isinstance(e, ast.Apply):
            return self._apply(e)
        raise TypeError(f"no support rule for {type(e).__name__}")  # pragma: no cover

    def chain(self, factors: Sequence[ast.Expr]) -> Support:
        """The support bound of the product ``F₁⋯Fₖ``: supp F₁ ∘ ⋯ ∘ supp Fₖ (I when k = 0)."""
        out: Support = I
        for f in factors:
            out = compose(out, self(f))
        return out

    def _apply(self, e: ast.Apply) -> Support:
        facts = function_facts(e)
        args = e.variable_args
        if facts.zero_forcing:
            # f(…, 0, …) ≡ 0 in argument i: supp f(M₁, …) ⊆ ⋂ supp Mᵢ over such i
            out: Support = Full()
            for i in facts.zero_forcing:
                out = meet(out, self(args[i]))
            return out
        if facts.vanishes_at_zero:
            out = EMPTY  # f(0, …, 0) = 0: supp f(M₁, …) ⊆ ⋃ supp Mᵢ
            for a in args:
                out = join(out, self(a))
            return out
        name = e.function.name
        zeros = ", ".join("0" for _ in args) or ""
        return Full(
            f"{name}({zeros}) = {_number(facts.at_zero)} ≠ 0, so {_text(e)} is nonzero everywhere",
            e,
        )


def infer_support(e: ast.Expr) -> Support:
    """The structural support bound of a matrix expression (see the module docstring)."""
    return SupportInference()(e)


# --------------------------------------------------------------------------- masks


class FullMaskError(SourceError, CompileError):
    """A matrix that must be materialised but whose support bound is full."""

    kind = "compile error"


def order(s: Support) -> float:
    """How the size of a support grows with the average degree d: |S| ≈ n·dᵒʳᵈᵉʳ.

    ``I`` 0, ``E`` 1, ``S∘T`` adds, ``∪`` takes the larger, ``∩`` the smaller, ``J`` is ∞
    (``n²``), ``∅`` is -1 (nothing).
    """
    if isinstance(s, Empty):
        return -1.0
    if isinstance(s, Identity):
        return 0.0
    if isinstance(s, Edges):
        return 1.0
    if isinstance(s, Full):
        return math.inf
    if isinstance(s, Compose):
        return order(s.left) + order(s.right)
    if isinstance(s, Join):
        return max(order(s.left), order(s.right))
    if isinstance(s, Meet):
        return min(order(s.left), order(s.right))
    if isinstance(s, Flip):
        return order(s.operand)
    raise TypeError(s)  # pragma: no cover


def _size_key(s: Support) -> tuple[float, int]:
    return (order(s), len(str(s)))


def choose_mask(s: Support, *, allow_full: bool = False) -> Support:
    """A mask (buildable support) containing ``s``.

    ``S ∩ T`` keeps the cheaper side (by :func:`order`, then the simpler text). ``J`` raises
    ``ValueError`` carrying the :class:`Full` (its reason) unless ``allow_full``.
    """
    if isinstance(s, Full):
        if allow_full:
            return s
        raise _FullFound(s)
    if isinstance(s, Meet):
        options = []
        for side in (s.left, s.right):
            try:
                options.append(choose_mask(side, allow_full=allow_full))
            except _FullFound:
                continue
        if not options:  # both sides full: J ∩ J = J
            return choose_mask(Full(), allow_full=allow_full)
        return min(options, key=_size_key)
    if isinstance(s, Compose):
        return compose(
            choose_mask(s.left, allow_full=allow_full), choose_mask(s.right, allow_full=allow_full)
        )
    if isinstance(s, Join):
        return join(
            choose_mask(s.left, allow_full=allow_full), choose_mask(s.right, allow_full=allow_full)
        )
    if isinstance(s, Flip):
        return flip(choose_mask(s.operand, allow_full=allow_full))
    return s


class _FullFound(ValueError):
    def __init__(self, full: Full) -> None:
        self.full = full
        super().__init__(full.reason or "full support")


def mask_for(
    e: ast.Expr,
    *,
    allow_full: bool = False,
    why: str = "must be materialised",
    infer: Callable[[ast.Expr], Support] | None = None,
) -> Support:
    """The mask on which the matrix ``e`` is materialised; :class:`FullMaskError` (with ``e``'s
    span and the reason the bound is full) when there is none short of ``J``."""
    support = (infer or infer_support)(e)
    try:
        return choose_mask(support, allow_full=allow_full)
    except _FullFound as found:
        raise full_mask_error(e, found.full, why) from None


def resolve_mask(
    s: Support, origin: ast.Expr, *, allow_full: bool = False, why: str = "must be materialised"
) -> Support:
    """The mask chosen for the support bound ``s`` of a matrix computed for ``origin``;
    :class:`FullMaskError` (located at ``origin``) when there is none short of ``J``."""
    try:
        return choose_mask(s, allow_full=allow_full)
    except ValueError as found:
        raise full_mask_error(origin, getattr(found, "full", Full()), why) from None


def mask_order(s: Support, *, allow_full: bool = False) -> float:
    """The order (:func:`order`) of the mask chosen for ``s``; inf when it would be full."""
    try:
        return order(choose_mask(s, allow_full=allow_full))
    except ValueError:
        return float("inf")


def full_mask_error(e: ast.Expr, full: Full, why: str) -> FullMaskError:
    """The error for a matrix ``e`` that ``why`` (e.g. "is multiplied with a vector") but whose
    support is full."""
    reason = full.reason or "its support is full"
    where: Span | None = e.span
    origin = full.origin
    if origin is not None and origin.span is not None and where is None:
        where = origin.span
    return FullMaskError(
        f"{_text(e)} {why}, but its support is full: {reason}; it cannot be computed in memory "
        "linear in the edges",
        where,
        hint="compile(..., dense=True) (matlang compile --dense) evaluates it on all n² entries "
        "of each graph",
    )


def sizes(s: Support, n: float, e: float) -> float:
    """A size estimate of a mask on a graph with ``n`` nodes and ``e`` directed edges
    (``|S∘T| ≈ |S|·|T|/n``, capped at n²)."""
    if isinstance(s, Empty):
        return 0.0
    if isinstance(s, Identity):
        return float(n)
    if isinstance(s, Edges):
        return float(e)
    if isinstance(s, Full):
        return float(n) * n
    if isinstance(s, Compose):
        return min(float(n) * n, sizes(s.left, n, e) * sizes(s.right, n, e) / max(n, 1))
    if isinstance(s, Join):
        return min(float(n) * n, sizes(s.left, n, e) + sizes(s.right, n, e))
    if isinstance(s, Meet):
        return min(sizes(s.left, n, e), sizes(s.right, n, e))
    if isinstance(s, Flip):
        return sizes(s.operand, n, e)
    raise TypeError(s)  # pragma: no cover


__all__ = [
    "Support",
    "Edges",
    "Identity",
    "Empty",
    "Full",
    "Compose",
    "Meet",
    "Join",
    "Flip",
    "E",
    "I",
    "EMPTY",
    "compose",
    "meet",
    "join",
    "flip",
    "FunctionFacts",
    "function_facts",
    "SupportInference",
    "infer_support",
    "FullMaskError",
    "choose_mask",
    "mask_for",
    "mask_order",
    "resolve_mask",
    "full_mask_error",
    "order",
    "sizes",
]
