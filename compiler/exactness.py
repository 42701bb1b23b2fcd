"""Whether a ``Mod``'s argument was computed exactly: the rounding of every intermediate.

``Mod`` is exact only if its argument never rounded. A check of the argument's size alone
misses an intermediate past the float's exact integers whose difference is small again
(``A¹¹ 𝟏 - 28 A¹⁰ 𝟏`` on K30: ``29¹¹ > 2⁵³``, the difference ``29¹⁰`` is not). So, statically,
:func:`mod_feeders` finds the plan steps that feed (transitively) the argument of a function
with ``Mod``; at run time, for those steps only, :func:`step_peak` bounds the largest
magnitude the step's float computation reaches (its value, the partial sums of a product or a
sum, the intermediates of a polynomial function) and :func:`check_step` refuses where that
reaches the dtype's ``2^bits``, naming the step. Integer (int64) values are exact: the kernels
switch to float64 before int64 could overflow, and then the float value is checked. A plan
without ``Mod`` has no feeders: nothing runs.

The same bounds serve the dense evaluator (:func:`expr_peak`, on the subexpressions of a
``Mod``'s argument computed in float64).
"""

from __future__ import annotations

import math
import re
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


def mod_feeders(plan: Any, *, trainable_functions: bool = False) -> frozenset[int]:
    """The registers whose values feed (transitively) an argument of a function with ``Mod``
    (none with ``trainable_functions``: an MLP stands in for every function)."""
    if trainable_functions or not any(has_mod(f.formula) for f in plan.functions):
        return frozenset()
    steps = plan.steps
    out: set[int] = set()
    todo = [
        a
        for st in steps
        if st.op == "apply" and has_mod(plan.functions[st.attr("fn")].formula)
        for a in st.args
    ]
    while todo:
        k = todo.pop()
        if k in out:
            continue
        out.add(k)
        todo.extend(steps[k].args)
    return frozenset(k for k in out if steps[k].kind != "mask")


# --------------------------------------------------------------------------- array helpers


def _torch_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def is_float(x: Any) -> bool:
    """Whether ``x`` (a numpy array or a torch tensor) holds floats."""
    if _torch_tensor(x):
        return bool(x.is_floating_point())
    kind = getattr(getattr(x, "dtype", None), "kind", "f")
    return bool(kind == "f")


def top(x: Any) -> float:
    """max |x| as a float (0 for an empty value)."""
    if _torch_tensor(x):
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
    if _torch_tensor(x):
        return x.numel() == 0 or float(x.detach().min()) >= 0
    import numpy as np

    a = np.asarray(x)
    return a.size == 0 or bool(a.min() >= 0)


def max_row(mask: Any, transposed: bool = False) -> int:
    """The most entries in a row of ``mask`` (of its transpose): a GraphBLAS or torch mask
    object, or the interpreter's ``(2, M)`` index."""
    if hasattr(mask, "row_counts"):
        m = mask.flip() if transposed else mask
        counts = m.row_counts
        size = counts.numel() if _torch_tensor(counts) else counts.size
        return int(counts.max()) if size else 0
    if mask.shape[1] == 0:
        return 0
    import torch

    return int(torch.bincount(mask[1 if transposed else 0]).max())


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


# --------------------------------------------------------------------------- plan steps


Range = tuple[float, float]


def value_range(x: Any) -> Range:
    """``(min, max)`` of a value (a numpy array, a torch tensor; ``(0, 0)`` when empty), one
    pass; a value that is one number broadcast (stride 0) is read once."""
    if _torch_tensor(x):
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


def _top(r: Range) -> float:
    return max(-r[0], r[1])


@cache
def _polynomial(formula: Any, symbols: tuple[Any, ...]) -> bool:
    from matlang.functions import exact_degree

    return exact_degree(formula, symbols) is not None


def step_peak(
    plan: Any, k: int, rng: Callable[[int], Range], args: Sequence[Any],
    regs: Mapping[int, Any], graph_size: Callable[[], int],
) -> float:
    """The largest magnitude step ``k`` reaches computing its (float) value from ``args``:
    the value, and for sums of signed terms a bound on their partial sums (``rows · max|M| ·
    max|h|``; with no negative term a partial sum is below the total); for a polynomial
    function the intermediates of its formula. ``rng(i)``: the range of argument ``i``
    (``-1``: of the value), ``regs``: the registers (the masks of edge values),
    ``graph_size()``: the most nodes of a graph."""
    st = plan.steps[k]
    peak = _top(rng(-1))
    op = st.op
    if op == "propagate":
        vals, h = rng(1), rng(2)
        if vals[0] < 0 or h[0] < 0:
            transposed = bool(st.attr("transpose"))
            peak = max(peak, max_row(args[0], transposed) * _top(vals) * _top(h))
    elif op == "sampled":
        a, b = rng(0), rng(1)
        if a[0] < 0 or b[0] < 0:
            ma = regs[plan.steps[st.args[0]].mask]
            peak = max(peak, max_row(ma) * _top(a) * _top(b))
    elif op == "row_sum":
        if rng(0)[0] < 0:
            peak = max(peak, max_row(regs[plan.steps[st.args[0]].mask]) * _top(rng(0)))
    elif op == "readout":
        if rng(0)[0] < 0:
            peak = max(peak, graph_size() * _top(rng(0)))
    elif op == "div" and not division_exact(args[0], args[1]):
        return math.inf
    elif op == "apply" and args:
        f = plan.functions[st.attr("fn")]
        symbols = tuple(f.symbols)
        if _polynomial(f.formula, symbols):
            m = max(_top(rng(i)) for i in range(len(args)))
            peak = max(peak, formula_peak(f.formula, symbols)(m)[0])
    return peak


def division_exact(x: Any, y: Any) -> bool:
    """Whether every quotient ``x / y`` is exact in floats: by a power of two, or of an
    integer by an integer that divides it."""
    return inexact_row(x, y) is None


def inexact_row(x: Any, y: Any) -> int | None:
    """The first row whose quotient ``x / y`` rounds (``None``: none does)."""
    if _torch_tensor(x) or _torch_tensor(y):
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


def describe(plan: Any, k: int, limit: int = 70) -> str:
    """Step ``k`` in words: its note with the registers it names written out (``A v12`` →
    ``A¹¹ 𝟏``) while that stays short, and its register name."""
    name = plan.name(k)
    seen: dict[int, str] = {}

    def text(r: int, depth: int) -> str:
        if r in seen:
            return seen[r]
        st = plan.steps[r]
        note = st.note or plan.name(r)
        if depth < 40:
            note = re.sub(
                r"\b([vge])(\d+)\b",
                lambda mt: _wrap(text(int(mt.group(2)), depth + 1))
                if int(mt.group(2)) < len(plan.steps)
                else mt.group(0),
                note,
            )
        seen[r] = note
        return note

    full = _powers(text(k, 0))
    return f"{name} = {full}" if len(full) <= limit else f"{name} = {plan.steps[k].note or name}"


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _wrap(s: str) -> str:
    return f"({s})" if " + " in s or " - " in s else s


_FROM_SUPERSCRIPT = {v: k for k, v in zip("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹", strict=True)}


def _powers(s: str) -> str:
    """``A A² A 𝟏`` → ``A⁴ 𝟏``."""

    def repl(mt: re.Match[str]) -> str:
        count = 0
        for token in mt.group(0).split():
            digits = "".join(_FROM_SUPERSCRIPT[c] for c in token[1:])
            count += int(digits) if digits else 1
        return ("A" if count == 1 else f"A{str(count).translate(_SUPERSCRIPT)}") + " "

    return re.sub(r"(?<!\w)(?:A[⁰¹²³⁴⁵⁶⁷⁸⁹]* )+", repl, s)


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
    if _torch_tensor(x):
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


class ModExactness:
    """The exactness rule of a plan's ``Mod`` s: which steps are checked (:attr:`steps`, empty
    for a plan without ``Mod``) and the check of one (:meth:`check`)."""

    def __init__(self, plan: Any, *, trainable_functions: bool = False) -> None:
        self.plan = plan
        self.feeders = mod_feeders(plan, trainable_functions=trainable_functions)
        self.applies = frozenset(
            k
            for k, st in enumerate(plan.steps)
            if self.feeders
            and st.op == "apply"
            and has_mod(plan.functions[st.attr("fn")].formula)
        )
        #: every step :meth:`check` looks at
        self.steps = self.feeders | self.applies

    def check(
        self,
        k: int,
        out: Any,
        args: Sequence[Any],
        regs: Mapping[int, Any],
        *,
        dtype: Any,
        graph: Callable[[int], str],
        graph_size: Callable[[], int],
        advice: str,
        ranges: dict[int, Range] | None = None,
    ) -> None:
        """Refuse where step ``k`` (computed in ``dtype`` where its values are floats) rounds
        an integer on its way to a ``Mod``: a feeder whose float computation reaches
        ``2^bits``, or a ``Mod`` function whose formula does inside its ``Mod``. ``graph(row)``:
        the label of the graph of a row of the step's value; ``ranges``: the ranges of the
        registers seen in this pass, by register (filled in here)."""
        plan = self.plan
        st = plan.steps[k]
        limit = 2.0 ** bits_of(dtype)
        known: dict[int, Range] = {} if ranges is None else ranges

        def rng(i: int) -> Range:
            r = k if i < 0 else st.args[i]
            got = known.get(r)
            if got is None:
                got = known[r] = value_range(out if i < 0 else args[i])
            return got

        if k in self.applies and args and any(is_float(a) for a in args):
            f = plan.functions[st.attr("fn")]
            tops = [_top(rng(i)) for i in range(len(args))]
            inside = formula_peak(f.formula, tuple(f.symbols))(max(tops))[1]
            if inside >= limit:
                worst = args[tops.index(max(tops))]
                raise rounding_error(
                    f"{f.name}(...) in {st.note or 'the sentence'}",
                    f"its formula {sp_text(f.formula)} on values up to {max(tops):.4g}",
                    inside, graph(argmax_row(worst)), dtype, advice,
                )
        if k in self.feeders and is_float(out):
            peak = step_peak(plan, k, rng, args, regs, graph_size)
            if peak >= limit:
                row = inexact_row(args[0], args[1]) if st.op == "div" else None
                raise rounding_error(
                    mod_user(plan, k), describe(plan, k), peak,
                    graph(argmax_row(out) if row is None else row), dtype, advice,
                )

    def check_value(
        self, k: int, value: Any, *, dtype: Any, graph: Callable[[int], str], advice: str
    ) -> None:
        """Refuse where feeder ``k``'s value (a graph constant handed to the interpreter) is
        past the integers ``dtype`` holds: converting it rounded."""
        peak = top(value)
        if peak >= 2.0 ** bits_of(dtype):
            raise rounding_error(
                mod_user(self.plan, k), describe(self.plan, k), peak, graph(argmax_row(value)),
                dtype, advice,
            )


def handed_over(plan: Any, const: Sequence[bool], mod: ModExactness) -> frozenset[int]:
    """The graph constants a compiled module's interpreter reads on its way to a ``Mod``:
    turned into the module's dtype there, they are checked (:meth:`ModExactness.check_value`)."""
    out: set[int] = set()
    for j, st in enumerate(plan.steps):
        if const[j] or j not in mod.steps:
            continue
        out.update(a for a in st.args if const[a] and plan.steps[a].kind != "mask")
    return frozenset(out)


def advice_for(dtype: Any) -> str:
    """The way out of a refusal in a compiled module computing in ``dtype``."""
    wider = " or compile with dtype=torch.float64" if bits_of(dtype) < 53 else ""
    return f"evaluate the sentence exactly (matlang.evaluate){wider}"


def sp_text(formula: Any) -> str:
    import sympy as sp

    return str(sp.sstr(formula))


def mod_user(plan: Any, k: int) -> str:
    """The first application of a function with ``Mod`` that step ``k`` feeds, in words."""
    feeds = {k}
    for j, st in enumerate(plan.steps):
        if j <= k or not feeds.intersection(st.args):
            continue
        if st.op == "apply" and has_mod(plan.functions[st.attr("fn")].formula):
            f = plan.functions[st.attr("fn")]
            return f"{f.name}(...) in {st.note or 'the sentence'}"
        feeds.add(j)
    return "a Mod"


__all__ = [
    "ModExactness",
    "advice_for",
    "argmax_row",
    "handed_over",
    "bits_of",
    "check_dense",
    "describe",
    "division_exact",
    "inexact_row",
    "formula_peak",
    "has_mod",
    "is_float",
    "max_row",
    "mod_feeders",
    "mod_user",
    "rounding_error",
    "step_peak",
    "top",
    "value_range",
]


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
