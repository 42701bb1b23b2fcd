"""Whether a ``Mod``'s argument was computed exactly, in the language's terms: bounds on the
magnitudes a float computation reaches, and the refusal that names what rounded.

``Mod`` is exact only if its argument never rounded: a check of the argument's size alone
misses an intermediate past the float's exact integers whose difference is small again
(``A¹¹ 𝟏 - 28 A¹⁰ 𝟏`` on K30: ``29¹¹ > 2⁵³``, the difference ``29¹⁰`` is not).
:func:`formula_peak` bounds the intermediates of a polynomial formula, :func:`value_range` and
:func:`inexact_row` read values (numpy or torch), :func:`check_dense` is the dense evaluator's
rule (on the subexpressions of a ``Mod``'s argument it computed in float64) and
:func:`rounding_error` the one refusal. The compiled stages apply the same bounds to plan
steps (:mod:`compiler.exactness`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from matlang.errors import EvaluationError

#: bits of the exact integers of each float dtype (by name)
_BITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}


def bits_of(dtype: Any) -> int:
    """53 for float64, 24 for float32 (torch or numpy dtypes, or their names)."""
    name = str(dtype).removeprefix("torch.")
    return _BITS.get(name, 53)


def has_mod(formula: Any) -> bool:
    import sympy as sp

    return bool(formula.has(sp.Mod))


# --------------------------------------------------------------------------- array helpers


def is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def is_float(x: Any) -> bool:
    """Whether ``x`` (a numpy array or a torch tensor) holds floats."""
    if is_tensor(x):
        return bool(x.is_floating_point())
    kind = getattr(getattr(x, "dtype", None), "kind", "f")
    return bool(kind == "f")


def top(x: Any) -> float:
    """max |x| as a float (0 for an empty value)."""
    if is_tensor(x):
        if x.numel() == 0:
            return 0.0
        return float(x.detach().abs().max())
    import numpy as np

    a = np.asarray(x)
    if a.size == 0:
        return 0.0
    if a.dtype == object:
        return float(max(abs(v) for v in a.flat))
    return float(np.abs(a).max())


def _nonneg(x: Any) -> bool:
    if is_tensor(x):
        return x.numel() == 0 or float(x.detach().min()) >= 0
    import numpy as np

    a = np.asarray(x)
    return a.size == 0 or bool(a.min() >= 0)


# --------------------------------------------------------------------------- formulas


@cache
def formula_peak(formula: Any, symbols: tuple[Any, ...]) -> Callable[[float], tuple[float, float]]:
    """``peak(m)`` for a polynomial formula (with ``Mod``, ``binomial``, ``Abs``, ``Max``…):
    bounds on the magnitude of every intermediate :func:`~matlang.functions.numeric` computes
    when each argument is at most ``m`` in magnitude — ``(all, inside)``: over the whole
    formula, and over the arguments of its ``Mod`` s only (``inf`` where a part is not
    polynomial)."""
    import sympy as sp

    index = {s: i for i, s in enumerate(symbols)}

    def walk(e: Any) -> Callable[[float], tuple[float, float, float]]:
        # (value bound, peak of every intermediate, peak inside Mod arguments)
        if e.is_Symbol:
            return lambda m: (m, m, 0.0) if e in index else (math.inf, math.inf, 0.0)
        if not e.free_symbols:
            try:
                c = abs(float(e))
            except (TypeError, ValueError):
                c = math.inf
            return lambda m: (c, c, 0.0)
        if isinstance(e, sp.binomial):
            x, k = walk(e.args[0]), e.args[1]
            if not (k.is_Integer and int(k) >= 0):
                return lambda m: (math.inf, math.inf, math.inf)
            kk = int(k)

            def binom(m: float) -> tuple[float, float, float]:
                v, p, q = x(m)
                falling = _mul((v + kk) ** kk)  # x(x-1)…(x-k+1) before the 1/k!
                return (_mul(falling / math.factorial(kk)), max(p, falling), q)

            return binom
        parts = [walk(a) for a in e.args]
        if isinstance(e, sp.Mod):
            x, q = parts

            def mod(m: float) -> tuple[float, float, float]:
                v, p, inner = x(m)
                qv = q(m)[0]
                return (min(v, qv), p, max(inner, p, v))

            return mod
        if e.is_Add:

            def add(m: float) -> tuple[float, float, float]:
                got = [f(m) for f in parts]
                v = _mul(sum(g[0] for g in got))
                return (v, max(v, *(g[1] for g in got)), max(g[2] for g in got))

            return add
        if e.is_Mul:

            def mul(m: float) -> tuple[float, float, float]:
                got = [f(m) for f in parts]
                v = _mul(math.prod(g[0] for g in got))
                partial = _mul(math.prod(max(g[0], 1.0) for g in got))
                return (v, max(partial, *(g[1] for g in got)), max(g[2] for g in got))

            return mul
        if e.is_Pow and e.args[1].is_Integer and int(e.args[1]) >= 0:
            base, k = parts[0], int(e.args[1])

            def power(m: float) -> tuple[float, float, float]:
                v, p, q = base(m)
                out = _mul(v**k) if v < math.inf else math.inf
                return (out, max(p, out, v), q)

            return power
        if isinstance(e, (sp.Abs, sp.Max, sp.Min)):

            def same(m: float) -> tuple[float, float, float]:
                got = [f(m) for f in parts]
                return tuple(max(g[i] for g in got) for i in range(3))  # type: ignore[return-value]

            return same
        if isinstance(e, sp.sign):
            inner = parts[0]
            return lambda m: (1.0, *inner(m)[1:])
        return lambda m: (math.inf, math.inf, math.inf)

    tree = walk(formula)

    def peak(m: float) -> tuple[float, float]:
        _, p, inside = tree(m)
        return p, inside

    return peak


def _mul(x: float) -> float:
    return x if x < 1e300 else math.inf


# --------------------------------------------------------------------------- values


Range = tuple[float, float]


def value_range(x: Any) -> Range:
    """``(min, max)`` of a value (a numpy array, a torch tensor; ``(0, 0)`` when empty), one
    pass; a value that is one number broadcast (stride 0) is read once."""
    if is_tensor(x):
        if x.numel() == 0:
            return 0.0, 0.0
        if x.dim() == 0 or all(s == 0 for s in x.stride()):
            v = float(x.detach().reshape(-1)[0])
            return v, v
        lo, hi = torch_aminmax(x.detach())
        return lo, hi
    import numpy as np

    a = np.asarray(x)
    if a.size == 0:
        return 0.0, 0.0
    if a.dtype == object:
        return float(min(a.flat)), float(max(a.flat))
    if a.ndim and all(s == 0 for s in a.strides):
        v = float(a.reshape(-1)[0])
        return v, v
    return float(a.min()), float(a.max())


def torch_aminmax(x: Any) -> Range:
    import torch

    lo, hi = torch.aminmax(x)
    got = torch.stack([lo, hi]).tolist()
    return float(got[0]), float(got[1])


def magnitude(r: Range) -> float:
    return max(-r[0], r[1])


@cache
def is_polynomial(formula: Any, symbols: tuple[Any, ...]) -> bool:
    from matlang.functions import exact_degree

    return exact_degree(formula, symbols) is not None


def division_exact(x: Any, y: Any) -> bool:
    """Whether every quotient ``x / y`` is exact in floats: by a power of two, or of an
    integer by an integer that divides it."""
    return inexact_row(x, y) is None


def inexact_row(x: Any, y: Any) -> int | None:
    """The first row whose quotient ``x / y`` rounds (``None``: none does)."""
    if is_tensor(x) or is_tensor(y):
        import torch

        x, y = torch.as_tensor(x), torch.as_tensor(y)
        if x.dim() != y.dim() and min(x.dim(), y.dim()) == 1:
            x, y = (x, y.unsqueeze(-1)) if x.dim() > y.dim() else (x.unsqueeze(-1), y)
        x, y = x.detach(), y.detach()
        if not (x.is_floating_point() or y.is_floating_point()):
            x = x.to(torch.float64)
        mantissa, _ = torch.frexp(y.to(x.dtype) if not y.is_floating_point() else y)
        exact = (mantissa.abs() == 0.5) | (
            (x == torch.round(x)) & (y == torch.round(y)) & (torch.remainder(x, y) == 0)
        )
        if bool(exact.all()):
            return None
        bad = torch.nonzero(~exact.reshape(exact.shape[0], -1) if exact.dim() else ~exact)
        return int(bad[0, 0]) if exact.dim() else 0
    import numpy as np

    xa, ya = np.asarray(x), np.asarray(y)
    if xa.dtype == object or ya.dtype == object:
        return None  # Fractions: exact
    xa, ya = xa.astype(np.float64), ya.astype(np.float64)
    if xa.ndim != ya.ndim and min(xa.ndim, ya.ndim) == 1:
        xa, ya = (xa, ya[:, None]) if xa.ndim > ya.ndim else (xa[:, None], ya)
    mantissa, _ = np.frexp(ya)
    with np.errstate(all="ignore"):
        whole = (xa == np.round(xa)) & (ya == np.round(ya)) & (np.remainder(xa, ya) == 0)
    exact = (np.abs(mantissa) == 0.5) | whole
    if bool(np.all(exact)):
        return None
    return int(np.argwhere(~exact)[0][0]) if exact.ndim else 0


def rounding_error(
    what: str, step: str, peak: float, graph: str, dtype: Any, advice: str
) -> EvaluationError:
    """The refusal of a ``Mod`` whose argument came through a rounded intermediate."""
    bits = bits_of(dtype)
    name = str(dtype).removeprefix("torch.")
    if math.isinf(peak):
        return EvaluationError(
            f"{what}: its argument is computed from {step}, a division that is not exact in "
            f"{name} on graph {graph} (its quotient rounds): the remainder would be noise; "
            f"{advice}"
        )
    return EvaluationError(
        f"{what}: its argument is computed from {step}, which reaches {peak:.4g} on graph "
        f"{graph}, past 2^{bits}, where {name} rounds integers: the remainder would be noise; "
        f"{advice}"
    )


def argmax_row(x: Any) -> int:
    """The row (entry of a value without channels) of the largest magnitude in ``x``."""
    if is_tensor(x):
        if x.dim() == 0 or x.numel() == 0:
            return 0
        return int(x.detach().abs().argmax()) // (x.shape[1] if x.dim() == 2 else 1)
    import numpy as np

    a = np.asarray(x)
    if a.ndim == 0 or a.size == 0:
        return 0
    if a.dtype == object:
        flat = [abs(v) for v in a.flat]
        return flat.index(max(flat)) // (a.shape[1] if a.ndim == 2 else 1)
    return int(np.abs(a).argmax()) // (a.shape[1] if a.ndim == 2 else 1)


def sp_text(formula: Any) -> str:
    import sympy as sp

    return str(sp.sstr(formula))


# --------------------------------------------------------------------------- dense evaluator


def check_dense(
    memo: Mapping[int, Any], fn_name: str, formula: Any, symbols: tuple[Any, ...],
    args: Sequence[Any], values: Sequence[Any], graph: str, advice: str,
) -> None:
    """The dense evaluator's rule (float64): refuse a ``Mod`` function applied to
    ``values`` (of the argument expressions ``args``) where its formula rounds inside its
    ``Mod`` or a subexpression of an argument computed in float64 (``memo``: the evaluator's
    values by ``id``) reaches 2⁵³ on its way — its value, the partial sums of a product or a
    trace of signed terms, the products of a power, a polynomial function's intermediates."""
    import numpy as np

    from matlang.printer import to_text

    limit = 2.0**53
    what = f"{fn_name}(...)"
    tops = [top(v) for v in values if np.asarray(v).size]
    if tops:
        inside = formula_peak(formula, symbols)(max(tops))[1]
        if inside >= limit:
            raise rounding_error(
                what, f"its formula {sp_text(formula)} on values up to {max(tops):.4g}",
                inside, graph, "float64", advice,
            )
    seen: set[int] = set()

    def visit(e: Any) -> None:
        if id(e) in seen:
            return
        seen.add(id(e))
        value = memo.get(id(e))
        if value is None or np.asarray(value).dtype != np.float64:
            return  # integers and Fractions are exact (and so is what they came from)
        for c in e.children():
            visit(c)
        peak = _expr_peak(e, value, memo)
        if peak >= limit:
            text = to_text(e, definitions=False)
            text = text if len(text) <= 60 else text[:57] + "..."
            raise rounding_error(what, text, peak, graph, "float64", advice)

    for a in args:
        visit(a)


def _expr_peak(e: Any, value: Any, memo: Mapping[int, Any]) -> float:
    import numpy as np

    from matlang import ast

    peak = top(value)

    def val(x: Any) -> np.ndarray:
        return np.abs(np.asarray(memo[id(x)], dtype=np.float64))

    if isinstance(e, ast.Mul) and not e.is_scalar_product:
        a, b = memo.get(id(e.left)), memo.get(id(e.right))
        if a is not None and b is not None and not (_nonneg(a) and _nonneg(b)):
            peak = max(peak, top(val(e.left) @ val(e.right)))
    elif isinstance(e, ast.Power) and id(e.base) in memo and e.exponent > 1:
        peak = max(peak, _power_peak(val(e.base), e.exponent))
    elif isinstance(e, ast.Div) and id(e.left) in memo and id(e.right) in memo:
        if not division_exact(memo[id(e.left)], np.asarray(memo[id(e.right)])[0, 0]):
            return math.inf
    elif isinstance(e, ast.Trace) and id(e.operand) in memo:
        peak = max(peak, float(np.abs(np.diagonal(val(e.operand))).sum()))
    elif isinstance(e, ast.Apply):
        consts = {i: a.value for i, a in enumerate(e.args) if isinstance(a, ast.Number)}
        fn = e.function
        formula = fn.specialize(consts)
        syms = tuple(s for i, s in enumerate(fn.symbols) if i not in consts)
        from matlang.functions import exact_degree

        got = [top(memo[id(a)]) for i, a in enumerate(e.args) if i not in consts and id(a) in memo]
        if got and exact_degree(formula, syms) is not None:
            peak = max(peak, formula_peak(formula, syms)(max(got))[0])
    return peak


def _power_peak(m: Any, k: int) -> float:
    """The largest entry of every product square-and-multiply forms computing ``|M|^k``: a
    bound on every partial sum of ``M^k``'s products."""
    peak = top(m)
    result = None
    base = m
    while k:
        if k & 1:
            result = base if result is None else result @ base
            peak = max(peak, top(result))
        k >>= 1
        if k:
            base = base @ base
            peak = max(peak, top(base))
        if not math.isfinite(peak):
            break
    return peak


__all__ = [
    "Range",
    "is_polynomial",
    "is_tensor",
    "magnitude",
    "argmax_row",
    "bits_of",
    "check_dense",
    "division_exact",
    "formula_peak",
    "has_mod",
    "inexact_row",
    "is_float",
    "rounding_error",
    "sp_text",
    "top",
    "value_range",
]
