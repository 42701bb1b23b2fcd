"""Whether a ``Mod``'s argument was computed exactly in a compiled plan: the rounding of
every intermediate.

Statically, :func:`mod_feeders` finds the plan steps that feed (transitively) the argument of
a function with ``Mod``; at run time, for those steps only, :func:`step_peak` bounds the
largest magnitude the step's float computation reaches (its value, the partial sums of a
product or a sum of signed terms, the intermediates of a polynomial function; an inexact
division) and :class:`ModExactness` refuses where that reaches the dtype's ``2^bits``, naming
the step. Integer (int64) values are exact: the kernels switch to float64 before int64 could
overflow, and then the float value is checked. A plan without ``Mod`` has no feeders: nothing
runs. The bounds themselves are the language's (:mod:`matlang.exactness`, which the dense
evaluator uses too).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from matlang.exactness import (
    Range,
    argmax_row,
    bits_of,
    division_exact,
    formula_peak,
    has_mod,
    inexact_row,
    is_float,
    is_polynomial,
    is_tensor,
    magnitude,
    rounding_error,
    sp_text,
    top,
    value_range,
)


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


def max_row(mask: Any, transposed: bool = False) -> int:
    """The most entries in a row of ``mask`` (of its transpose): a GraphBLAS or torch mask
    object, or the interpreter's ``(2, M)`` index."""
    if hasattr(mask, "row_counts"):
        m = mask.flip() if transposed else mask
        counts = m.row_counts
        size = counts.numel() if is_tensor(counts) else counts.size
        return int(counts.max()) if size else 0
    if mask.shape[1] == 0:
        return 0
    import torch

    return int(torch.bincount(mask[1 if transposed else 0]).max())


# --------------------------------------------------------------------------- plan steps

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
    peak = magnitude(rng(-1))
    op = st.op
    if op == "propagate":
        vals, h = rng(1), rng(2)
        if vals[0] < 0 or h[0] < 0:
            transposed = bool(st.attr("transpose"))
            peak = max(peak, max_row(args[0], transposed) * magnitude(vals) * magnitude(h))
    elif op == "sampled":
        a, b = rng(0), rng(1)
        if a[0] < 0 or b[0] < 0:
            ma = regs[plan.steps[st.args[0]].mask]
            peak = max(peak, max_row(ma) * magnitude(a) * magnitude(b))
    elif op == "row_sum":
        if rng(0)[0] < 0:
            peak = max(peak, max_row(regs[plan.steps[st.args[0]].mask]) * magnitude(rng(0)))
    elif op == "readout":
        if rng(0)[0] < 0:
            peak = max(peak, graph_size() * magnitude(rng(0)))
    elif op == "div" and not division_exact(args[0], args[1]):
        return math.inf
    elif op == "apply" and args:
        f = plan.functions[st.attr("fn")]
        symbols = tuple(f.symbols)
        if is_polynomial(f.formula, symbols):
            m = max(magnitude(rng(i)) for i in range(len(args)))
            peak = max(peak, formula_peak(f.formula, symbols)(m)[0])
    return peak


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
            tops = [magnitude(rng(i)) for i in range(len(args))]
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

    def handed(self, module: Any, ctx: Any, registers: Any) -> Any:
        """``registers`` (what a compiled module's constant stage gives its interpreter, the
        values first), once the graph constants the interpreter reads on its way to a
        ``Mod`` are checked as its dtype holds them (:meth:`check_value`)."""
        if not self.steps:
            return registers
        plan, const = self.plan, module._stages.const
        values = registers[0]
        ctx.regs.update(values)  # (an edge value's graph is read through its mask)
        handed = {
            a
            for j, st in enumerate(plan.steps)
            if not const[j] and j in self.steps
            for a in st.args
            if const[a] and plan.steps[a].kind != "mask"
        }
        for k in sorted(handed):
            step = plan.steps[k]

            def graph(i: int, step: Any = step) -> str:
                return str(module._graph_of(ctx, step, i))

            self.check_value(
                k, values[k], dtype=ctx.dtype, advice=advice_for(ctx.dtype), graph=graph
            )
        return registers

    def interpreted(self, module: Any, ctx: Any, k: int, out: Any, vals: Any) -> None:
        """:meth:`check` for step ``k`` of a compiled module's interpreter (``ctx``: its
        pass, which keeps the ranges of the registers checked)."""
        ranges = ctx.__dict__.setdefault("mod_ranges", {})
        step = self.plan.steps[k]
        self.check(
            k, out, vals, ctx.regs, dtype=ctx.dtype, advice=advice_for(ctx.dtype),
            ranges=ranges, graph=lambda i: module._graph_of(ctx, step, i),
            graph_size=lambda: int((ctx.ptr[1:] - ctx.ptr[:-1]).max()) if ctx.g else 0,
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


def advice_for(dtype: Any) -> str:
    """The way out of a refusal in a compiled module computing in ``dtype``."""
    wider = " or compile with dtype=torch.float64" if bits_of(dtype) < 53 else ""
    return f"evaluate the sentence exactly (matlang.evaluate){wider}"


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
    "describe",
    "max_row",
    "mod_feeders",
    "mod_user",
    "step_peak",
]
