"""AST → Plan: lowering MATLANG sentences to masked message passing.

The rules, each an identity of linear algebra (README, "Compiling a sentence into message
passing"):

* a matrix applied to a vector is never materialised: ``(M N) h = M (N h)``,
  ``diag(v) h = v ⊙ h``, ``(M + N) h = M h + N h``, ``(s M) h = s (M h)``, ``Mᵀ h`` is a
  transposed propagation, ``(v wᵀ) h = v (wᵀ h)`` (a readout broadcast back to the nodes), and a
  row vector is a column: ``vᵀ M = (Mᵀ v)ᵀ``;
* a matrix under ``⊙``, ``f`` or ``tr``, or applied to a vector while being one of those, is
  materialised on its **mask** (:mod:`compiler.support`) and only there:
  ``(M ⊙ N)|S = M|S ⊙ N|S``, ``f(M)|S = f(M|S)``, ``(M N)|S`` is a sampled product of ``M`` and
  ``N`` on their own masks, ``(diag(v) M)|S = v_i M_ij``, ``(v wᵀ)|S = v_i w_j``;
* a trace needs only a diagonal: ``diag(M N)_i = Σ_k M_ik N_ki`` (a row sum of ``M|S ⊙ (Nᵀ)|S``
  on the mask ``S`` of ``M``), ``diag(f(M)) = f(diag M)``, ``diag(v wᵀ) = v ⊙ w``.

Graph scalars are per graph: ``𝟏ᵀ h`` is a readout, and a scalar times a vector broadcasts the
scalar back to the nodes of its own graph. Literal numbers become trainable parameters
initialised at their exact value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy as sp

from matlang import ast, limits
from matlang.algebra import Coeff, is_outer, is_symmetric, product_factors, transposed
from matlang.compiler import support as sup
from matlang.compiler.plan import (
    FunctionSpec,
    MaskInfo,
    Output,
    ParamSpec,
    Plan,
    PlanBuilder,
)
from matlang.compiler.support import (
    FullMaskError,
    Support,
    SupportInference,
    function_facts,
)
from matlang.errors import CompileError, SourceError


class LoweringError(SourceError, CompileError):
    """A sentence that has no lowering (located in its text)."""

    kind = "compile error"


@dataclass(frozen=True)
class MaskRef:
    """A mask register and the support it holds."""

    register: int
    support: Support



def _shown(value: sp.Expr) -> str:
    """A sympy number as text: sympy formats a Float through decimal, whose context refuses
    exponents such as exp(1e30)'s (4.03e+434294481903…); ``str`` prints it whatever its size."""
    try:
        return f"{value}"
    except ArithmeticError:  # decimal.InvalidOperation
        return str(value)

def _text(e: ast.Expr) -> str:
    from matlang.printer import to_text

    return to_text(e, definitions=False)


def _is_ones(e: ast.Expr) -> bool:
    return isinstance(e, ast.Ones) or (
        isinstance(e, ast.Transpose) and isinstance(e.operand, ast.Ones)
    )


def _chain_text(factors: Sequence[ast.Expr]) -> str:
    """``F₁ F₂ ⋯`` as text, with equal neighbours as a power (A A A → A³)."""
    parts: list[tuple[ast.Expr, int]] = []
    for f in factors:
        if parts and parts[-1][0] == f:
            parts[-1] = (f, parts[-1][1] + 1)
        else:
            parts.append((f, 1))
    out = []
    for f, k in parts:
        out.append(_text(ast.Power(f, k)) if k > 1 else _wrapped(f))
    return " ".join(out)


def _wrapped(e: ast.Expr) -> str:
    t = _text(e)
    return t if isinstance(e, (ast.Input, ast.Diag, ast.Apply, ast.Transpose)) else f"({t})"


class PlanLowering:
    """Builds one :class:`Plan` for one or more sentences (see the module docstring).

    Args:
        dense: allow full masks (all n² entries of a graph) instead of raising.
        weights: ``"literals"`` (every number literal is a parameter) or ``"all"`` (also one
            mixing coefficient per summand and one weight on ``A``).
        inputs: declared node inputs, in the order the columns of ``x`` feed them.
    """

    def __init__(
        self, *, dense: bool = False, weights: str = "literals", inputs: Sequence[str] = ()
    ) -> None:
        if weights not in ("literals", "all"):
            raise CompileError(f"weights must be 'literals' or 'all', got {weights!r}")
        self.dense = dense
        self.weights = weights
        self.b = PlanBuilder()
        self.infer = SupportInference()
        self.params: list[ParamSpec] = []
        self.functions: list[FunctionSpec] = []
        self._fn_index: dict[tuple[Any, ...], int] = {}
        self.inputs: list[str] = list(inputs)
        self.masks: dict[int, MaskInfo] = {}
        self._memo: dict[tuple[Any, ...], Any] = {}

    # -- registers ----------------------------------------------------------------------------
    def emit(self, op: str, *args: int, note: str = "", **attrs: Any) -> int:
        return self.b.emit(op, *args, note=note, **attrs)

    def _param(self, value: Fraction, note: str, prefix: str = "c") -> int:
        name = f"{prefix}{sum(1 for p in self.params if p.name.startswith(prefix))}"
        self.params.append(ParamSpec(name, value, note))
        return self.emit("param", name=name, note=f"{name} = {value}")

    def _const(self, value: Fraction | int) -> int:
        return self.emit("const", value=Fraction(value))

    def _broadcast(self, g: int, like: int) -> int:
        """The graph scalar ``g`` on the nodes or the mask entries of ``like``."""
        kind = self.b.kind(like)
        if kind == "graph":
            return g
        if kind == "node":
            return self.emit("broadcast", g)
        m = self.b.mask_of(like)
        assert m is not None
        return self.emit("broadcast_edge", g, m)

    def _scale(self, g: int, x: int, note: str = "") -> int:
        return self.emit("mul", self._broadcast(g, x), x, note=note)

    def _mix(self, e: ast.Expr, x: int, y: int, op: str, note: str) -> int:
        """``x ± y``; with ``weights="all"`` each summand gets a trainable coefficient."""
        if self.weights == "all":
            span = f" at {e.span.line}:{e.span.col}" if e.span else ""
            x = self._scale(self._param(Fraction(1), f"left summand{span}", "w"), x)
            y = self._scale(self._param(Fraction(1), f"right summand{span}", "w"), y)
        return self.emit(op, x, y, note=note)

    def _function(self, e: ast.Apply) -> int:
        fn = e.function
        consts = e.constants
        formula = fn.specialize(consts)
        symbols = tuple(s for i, s in enumerate(fn.symbols) if i not in consts)
        name = fn.name
        if consts:
            shown = [str(consts[i]) if i in consts else "·" for i in range(fn.arity)]
            name = f"{fn.name}({', '.join(shown)})"
        key = (name, formula, symbols)
        hit = self._fn_index.get(key)
        if hit is None:
            facts = function_facts(e)
            self.functions.append(FunctionSpec(name, formula, symbols, facts.at_zero))
            hit = len(self.functions) - 1
            self._fn_index[key] = hit
        return hit

    def _input(self, e: ast.Input) -> int:
        if e.name not in self.inputs:
            self.inputs.append(e.name)
        return self.emit("input", name=e.name, note=e.name)

    # -- masks --------------------------------------------------------------------------------
    def mask(self, s: Support) -> MaskRef:
        """The register holding mask ``s`` (which must be buildable)."""
        key = ("mask", s)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        if isinstance(s, sup.Edges):
            reg = self.emit("edges")
        elif isinstance(s, sup.Identity):
            reg = self.emit("identity")
        elif isinstance(s, sup.Empty):
            reg = self.emit("empty")
        elif isinstance(s, sup.Full):
            reg = self.emit("full")
        elif isinstance(s, sup.Compose):
            reg = self.emit("compose", self.mask(s.left).register, self.mask(s.right).register)
        elif isinstance(s, sup.Join):
            reg = self.emit("union", self.mask(s.left).register, self.mask(s.right).register)
        elif isinstance(s, sup.Flip):
            reg = self.flip(self.mask(s.operand)).register
        else:  # pragma: no cover - choose_mask removes ∩
            raise CompileError(f"support {s} is not a mask")
        ref = MaskRef(reg, s)
        self.masks.setdefault(reg, MaskInfo(reg, str(s), sup.order(s)))
        self._memo[key] = ref
        return ref

    def flip(self, m: MaskRef) -> MaskRef:
        """``Sᵀ`` aligned entry by entry with ``S``."""
        if isinstance(m.support, (sup.Identity, sup.Empty)):
            return m  # (k, k) flipped is (k, k)
        step = self.b.steps[m.register]
        if step.op == "flip":
            return MaskRef(step.args[0], sup.flip(m.support))  # (Sᵀ)ᵀ = S
        reg = self.emit("flip", m.register)
        self.masks.setdefault(reg, MaskInfo(reg, f"({m.support})ᵀ", sup.order(m.support)))
        return MaskRef(reg, sup.flip(m.support))

    def mask_of(self, e: ast.Expr, why: str) -> MaskRef:
        """The mask on which the matrix ``e`` is materialised (raises when it is full)."""
        return self.mask(sup.mask_for(e, allow_full=self.dense, why=why, infer=self.infer))

    def chain_mask(self, factors: Sequence[ast.Expr], origin: ast.Expr) -> MaskRef:
        """The mask of the product ``F₁⋯Fₖ`` (raises when it is full)."""
        return self._resolve(self.infer.chain(factors), origin)

    def _meet_mask(
        self, left: Sequence[ast.Expr], right: Sequence[ast.Expr], origin: ast.Expr
    ) -> MaskRef:
        return self._resolve(sup.meet(self.infer.chain(left), self.infer.chain(right)), origin)

    def _resolve(self, s: Support, origin: ast.Expr) -> MaskRef:
        return self.mask(sup.resolve_mask(s, origin, allow_full=self.dense))

    def _order(self, s: Support) -> float:
        return sup.mask_order(s, allow_full=self.dense)

    # -- sentences ----------------------------------------------------------------------------
    def sentence(self, e: ast.Expr, name: str) -> Output:
        text = _text(e)
        if e.shape.is_scalar:
            return Output(name, self.scalar(e), "graph", text)
        if e.shape.is_vector:
            return Output(name, self.vec(e), "node", text)
        m = self.mask_of(e, "is the value of the sentence")
        return Output(name, self.values(e, m), "matrix", text)

    def finish(self, outputs: Sequence[Output]) -> Plan:
        return self.b.build(
            tuple(outputs),
            tuple(self.params),
            tuple(self.functions),
            tuple(self.inputs),
            tuple(sorted(self.masks.values(), key=lambda m: m.register)),
        )

    # -- scalars ------------------------------------------------------------------------------
    def scalar(self, e: ast.Expr) -> int:
        key: tuple[Any, ...] = ("scalar", e, e.span if isinstance(e, ast.Number) else None)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._scalar(e)
            self._memo[key] = hit
        return hit

    def _scalar(self, e: ast.Expr) -> int:
        note = _text(e)
        if isinstance(e, ast.Number):
            where = f" at {e.span.line}:{e.span.col}" if e.span else ""
            return self._param(e.value, f"the literal {note}{where}")
        if isinstance(e, ast.Mul):
            if e.left.shape.is_scalar and e.right.shape.is_scalar:
                return self.emit("mul", self.scalar(e.left), self.scalar(e.right), note=note)
            # vᵀ w = 𝟏ᵀ (v ⊙ w): a readout
            if _is_ones(e.left):
                return self.emit("readout", self.vec(e.right), note=note)
            if _is_ones(e.right):
                return self.emit("readout", self.vec(e.left), note=note)
            prod = self.emit("mul", self.vec(e.left), self.vec(e.right))
            return self.emit("readout", prod, note=note)
        if isinstance(e, ast.Hadamard):
            return self.emit("mul", self.scalar(e.left), self.scalar(e.right), note=note)
        if isinstance(e, (ast.Add, ast.Sub)):
            op = "add" if isinstance(e, ast.Add) else "sub"
            return self._mix(e, self.scalar(e.left), self.scalar(e.right), op, note)
        if isinstance(e, ast.Neg):
            return self.emit("neg", self.scalar(e.operand), note=note)
        if isinstance(e, ast.Div):
            return self.emit("div", self.scalar(e.left), self._divisor(e.right), note=note)
        if isinstance(e, ast.Transpose):
            return self.scalar(e.operand)  # sᵀ = s
        if isinstance(e, ast.Trace):
            if e.operand.shape.is_scalar:
                return self.scalar(e.operand)  # tr(s) = s
            return self.emit("readout", self.diagonal(e.operand), note=note)  # tr M = 𝟏ᵀ diag M
        if isinstance(e, ast.Power):
            return self._scalar_power(self.scalar(e.base), e.exponent, note)
        if isinstance(e, ast.Apply):
            if all(isinstance(a, ast.Number) for a in e.args):
                return self._constant_call(e)
            args = [self.scalar(a) for a in e.variable_args]
            return self.emit("apply", *args, fn=self._function(e), note=note)
        raise LoweringError(f"no scalar lowering for {type(e).__name__}", e.span)

    def _divisor(self, e: ast.Expr) -> int:
        """A scalar we divide by, checked on every graph before it is broadcast (so a graph
        without nodes or edges still reports its division by zero, as the dense evaluator
        does)."""
        return self.emit("nonzero", self.scalar(e), note=f"{_text(e)} ≠ 0", what=_text(e))

    def _constant_call(self, e: ast.Apply) -> int:
        """``f(2, 3)``: a number, computed now and kept as one parameter."""
        consts = {i: a.value for i, a in enumerate(e.args) if isinstance(a, ast.Number)}
        value = sp.N(e.function.specialize(consts), 30) if e.args else sp.N(e.function.formula)
        exact = e.function.specialize(consts) if e.args else e.function.formula
        if not value.is_finite or not value.is_real:
            raise LoweringError(f"{_text(e)} is not a finite number ({value})", e.span)
        if exact.is_Rational:
            number = Fraction(int(exact.p), int(exact.q))
        else:
            approx = float(value)
            if not math.isfinite(approx):  # exp(1000): finite for sympy, not for a tensor
                raise LoweringError(
                    f"{_text(e)} = {_shown(sp.N(value, 6))} does not fit in float64", e.span
                )
            number = Fraction(approx)
        where = f" at {e.span.line}:{e.span.col}" if e.span else ""
        return self._param(number, f"the value of {_text(e)}{where}")

    def _scalar_power(self, base: int, k: int, note: str) -> int:
        if k == 0:
            return self._const(1)  # s⁰ = 1
        if k == 1:
            return base
        half = self._scalar_power(base, k // 2, "")
        sq = self.emit("mul", half, half)  # s²ᵐ = sᵐ sᵐ
        return self.emit("mul", sq, base, note=note) if k % 2 else sq

    # -- vectors ------------------------------------------------------------------------------
    def vec(self, e: ast.Expr) -> int:
        """A column or row vector as a node signal."""
        key = ("vec", e)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._vec(e)
            self._memo[key] = hit
        return hit

    def _vec(self, e: ast.Expr) -> int:
        note = _text(e)
        if isinstance(e, ast.Ones):
            return self.emit("ones", note="𝟏")
        if isinstance(e, ast.Input):
            return self._input(e)
        if isinstance(e, ast.Transpose):
            return self.vec(e.operand)  # vᵀ holds the same numbers as v
        if isinstance(e, ast.Mul):
            left, right = e.left.shape, e.right.shape
            if left.is_scalar:
                return self._scale(self.scalar(e.left), self.vec(e.right), note)
            if right.is_scalar:
                return self._scale(self.scalar(e.right), self.vec(e.left), note)
            if left.is_matrix:
                return self.matvec(e.left, self.vec(e.right), False)
            return self.matvec(e.right, self.vec(e.left), True)  # vᵀ M = (Mᵀ v)ᵀ
        if isinstance(e, ast.Hadamard):
            return self.emit("mul", self.vec(e.left), self.vec(e.right), note=note)
        if isinstance(e, (ast.Add, ast.Sub)):
            op = "add" if isinstance(e, ast.Add) else "sub"
            return self._mix(e, self.vec(e.left), self.vec(e.right), op, note)
        if isinstance(e, ast.Neg):
            return self.emit("neg", self.vec(e.operand), note=note)
        if isinstance(e, ast.Div):
            d = self.emit("broadcast", self._divisor(e.right))
            return self.emit("div", self.vec(e.left), d, note=note)
        if isinstance(e, ast.Apply):
            args = [self.vec(a) for a in e.variable_args]
            return self.emit("apply", *args, fn=self._function(e), note=note)
        raise LoweringError(f"no vector lowering for {type(e).__name__}", e.span)

    # -- matrix × vector ----------------------------------------------------------------------
    def matvec(self, m: ast.Expr, h: int, transpose: bool) -> int:
        """``M h`` (``Mᵀ h`` when ``transpose``) without materialising ``M`` where possible."""
        if isinstance(m, ast.Input) or isinstance(m, ast.Diag) or is_symmetric(m):
            transpose = False  # Mᵀ = M
        key = ("matvec", m, h, transpose)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._matvec(m, h, transpose)
            self._memo[key] = hit
        return hit

    def _matvec(self, m: ast.Expr, h: int, t: bool) -> int:
        note = f"({_text(m)}){'ᵀ' if t else ''} {self._name(h)}"
        if isinstance(m, ast.Input):
            e = self.mask(sup.E)
            return self.emit(
                "propagate",
                e.register,
                self._adjacency(),
                h,
                transpose=False,
                note=f"A {self._name(h)}",
            )
        if isinstance(m, ast.Transpose):
            return self.matvec(m.operand, h, not t)  # (Mᵀ)ᵀ h = M h
        if isinstance(m, ast.Diag):
            return self.emit("mul", self.vec(m.operand), h, note=note)  # diag(v) h = v ⊙ h
        if isinstance(m, ast.Mul):
            if m.left.shape.is_scalar:
                return self._scale(self.scalar(m.left), self.matvec(m.right, h, t), note)
            if m.right.shape.is_scalar:
                return self._scale(self.scalar(m.right), self.matvec(m.left, h, t), note)
            if is_outer(m):
                v, w = self.vec(m.left), self.vec(m.right)
                if t:
                    v, w = w, v  # (v wᵀ)ᵀ = w vᵀ
                # (v wᵀ) h = v (𝟏ᵀ (w ⊙ h)), per graph
                inner = self.emit("readout", self.emit("mul", w, h))
                return self.emit("mul", v, self.emit("broadcast", inner), note=note)
            if t:  # (M N)ᵀ h = Nᵀ (Mᵀ h)
                return self.matvec(m.right, self.matvec(m.left, h, True), True)
            return self.matvec(m.left, self.matvec(m.right, h, False), False)  # (MN)h = M(Nh)
        if isinstance(m, ast.Power):
            out = h  # M⁰ h = h; Mᵏ h = M (Mᵏ⁻¹ h)
            for _ in range(m.exponent):
                out = self.matvec(m.base, out, t)
            return out
        if isinstance(m, (ast.Add, ast.Sub)):
            op = "add" if isinstance(m, ast.Add) else "sub"  # (M ± N) h = M h ± N h
            return self._mix(m, self.matvec(m.left, h, t), self.matvec(m.right, h, t), op, note)
        if isinstance(m, ast.Neg):
            return self.emit("neg", self.matvec(m.operand, h, t), note=note)
        if isinstance(m, ast.Div):
            d = self.emit("broadcast", self._divisor(m.right))
            return self.emit("div", self.matvec(m.left, h, t), d, note=note)  # (M/s) h = (M h)/s
        # ⊙ and f: materialise on the mask, then propagate over it
        s = self.mask_of(m, "is multiplied with a vector")
        if isinstance(s.support, sup.Identity):
            return self.emit("mul", self.diagonal(m), h, note=note)  # M = diag(diag M)
        vals = self.values(m, s)
        return self.emit("propagate", s.register, vals, h, transpose=t, note=note)

    def _name(self, reg: int) -> str:
        return f"v{reg}"

    def _adjacency(self) -> int:
        e = self.mask(sup.E)
        a = self.emit("adjacency", e.register, note="A on E")
        if self.weights == "all":
            key = ("support-weight",)
            w = self._memo.get(key)
            if w is None:
                w = self._param(Fraction(1), "the weight of A", "a")
                self._memo[key] = w
            a = self._scale(w, a, "a·A on E")
        return a

    # -- diagonals ----------------------------------------------------------------------------
    def diagonal(self, m: ast.Expr) -> int:
        """``diag(M)`` as a node signal: ``M_ii``."""
        key = ("diag", m)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._diagonal(m)
            self._memo[key] = hit
        return hit

    def _diagonal(self, m: ast.Expr) -> int:
        note = f"diag({_text(m)})"
        if isinstance(m, ast.Input):
            return self.emit("diagonal", self._adjacency(), note=note)
        if isinstance(m, ast.Diag):
            return self.vec(m.operand)  # diag(diag(v)) = v
        if isinstance(m, ast.Transpose):
            return self.diagonal(m.operand)  # diag(Mᵀ) = diag(M)
        if isinstance(m, ast.Hadamard):
            return self.emit("mul", self.diagonal(m.left), self.diagonal(m.right), note=note)
        if isinstance(m, (ast.Add, ast.Sub)):
            op = "add" if isinstance(m, ast.Add) else "sub"
            return self._mix(m, self.diagonal(m.left), self.diagonal(m.right), op, note)
        if isinstance(m, ast.Neg):
            return self.emit("neg", self.diagonal(m.operand), note=note)
        if isinstance(m, ast.Div):
            d = self.emit("broadcast", self._divisor(m.right))
            return self.emit("div", self.diagonal(m.left), d, note=note)
        if isinstance(m, ast.Apply):
            self._check_apply(m)
            args = [self.diagonal(a) for a in m.variable_args]  # diag f(M) = f(diag M)
            return self.emit("apply", *args, fn=self._function(m), note=note)
        coeffs, factors = product_factors(m)
        return self._coefficients(coeffs, self._chain_diagonal(factors, m), note)

    def _chain_diagonal(self, factors: list[ast.Expr], origin: ast.Expr) -> int:
        if not factors:
            return self.emit("ones")  # diag(I) = 𝟏
        for p, f in enumerate(factors):
            if is_outer(f):
                assert isinstance(f, ast.Mul)
                # diag(L v wᵀ R) = (L v) ⊙ (Rᵀ w)
                left = self._chain_matvec(factors[:p], self.vec(f.left))
                right = self._chain_matvec_t(factors[p + 1 :], self.vec(f.right))
                return self.emit("mul", left, right)
        first, last = factors[0], factors[-1]
        if isinstance(first, ast.Diag):  # diag(diag(v) M) = v ⊙ diag(M)
            return self.emit(
                "mul", self.vec(first.operand), self._chain_diagonal(factors[1:], origin)
            )
        if isinstance(last, ast.Diag):  # diag(M diag(v)) = diag(M) ⊙ v
            return self.emit(
                "mul", self._chain_diagonal(factors[:-1], origin), self.vec(last.operand)
            )
        if len(factors) == 1:
            return self.diagonal(factors[0])
        j = self._best_split(factors, diagonal=True)
        head, tail = factors[:j], factors[j:]
        tail_t = [transposed(f) for f in reversed(tail)]
        s = self._meet_mask(head, tail_t, origin)
        # diag(L R)_i = Σ_k L_ik R_ki = Σ_k L_ik (Rᵀ)_ik, on any mask ⊇ supp L ∩ supp Rᵀ
        prod = self.emit(
            "mul", self._chain_values(head, s, origin), self._chain_values(tail_t, s, origin)
        )
        return self.emit("row_sum", prod, note=f"diag({_text(origin)})")

    def _chain_matvec(self, factors: Sequence[ast.Expr], h: int) -> int:
        for f in reversed(factors):  # F₁⋯Fₖ h = F₁(⋯(Fₖ h))
            h = self.matvec(f, h, False)
        return h

    def _chain_matvec_t(self, factors: Sequence[ast.Expr], h: int) -> int:
        for f in factors:  # (F₁⋯Fₖ)ᵀ h = Fₖᵀ(⋯(F₁ᵀ h))
            h = self.matvec(f, h, True)
        return h

    def _coefficients(self, coeffs: Sequence[Coeff], x: int, note: str) -> int:
        for op, s in coeffs:
            if op == "neg":
                x = self.emit("neg", x)
            else:
                assert s is not None
                if op == "div":
                    x = self.emit("div", x, self._broadcast(self._divisor(s), x))
                else:
                    x = self.emit("mul", self._broadcast(self.scalar(s), x), x)
        return x

    # -- values on a mask ---------------------------------------------------------------------
    def values(self, m: ast.Expr, s: MaskRef) -> int:
        """The entries of the matrix ``M`` on the mask ``S`` (an edge value on ``S``)."""
        key = ("values", m, s.register)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._values(m, s)
            self._memo[key] = hit
        return hit

    def _values(self, m: ast.Expr, s: MaskRef) -> int:
        note = f"{_text(m)} on {s.support}"
        if isinstance(s.support, sup.Identity):
            return self.emit("as_edge", self.diagonal(m), s.register, note=note)
        step = self.b.steps[s.register]
        if step.op == "flip":
            inner = MaskRef(step.args[0], sup.flip(s.support))
            if is_symmetric(m):
                # M = Mᵀ: M on Sᵀ holds the numbers of M on S
                return self.emit("transpose", self.values(m, inner), s.register, note=note)
            if inner.support == s.support:
                # Sᵀ = S as sets: read M on Sᵀ from M on S instead of computing it again
                return self.emit("lookup", self.values(m, inner), s.register, note=note)
        if isinstance(m, ast.Input):
            a = self._adjacency()
            if s.register == self.mask(sup.E).register:
                return a
            return self.emit("lookup", a, s.register, note=note)
        if isinstance(m, ast.Diag):  # diag(v)_ij = v_i [i = j]
            v = self.emit("gather_row", self.vec(m.operand), s.register)
            return self.emit("mul", v, self.emit("eye", s.register), note=note)
        if isinstance(m, ast.Transpose):
            f = self.flip(s)  # (Mᵀ)_ij = M_ji
            return self.emit("transpose", self.values(m.operand, f), s.register, note=note)
        if isinstance(m, ast.Hadamard):  # (M ⊙ N)|S = M|S ⊙ N|S
            return self.emit("mul", self.values(m.left, s), self.values(m.right, s), note=note)
        if isinstance(m, (ast.Add, ast.Sub)):
            op = "add" if isinstance(m, ast.Add) else "sub"
            return self._mix(m, self.values(m.left, s), self.values(m.right, s), op, note)
        if isinstance(m, ast.Neg):
            return self.emit("neg", self.values(m.operand, s), note=note)
        if isinstance(m, ast.Div):
            d = self.emit("broadcast_edge", self._divisor(m.right), s.register)
            return self.emit("div", self.values(m.left, s), d, note=note)
        if isinstance(m, ast.Apply):  # f(M)|S = f(M|S)
            self._check_apply(m)
            args = [self.values(a, s) for a in m.variable_args]
            return self.emit("apply", *args, fn=self._function(m), note=note)
        if is_outer(m):  # (v wᵀ)|S = v_i w_j
            assert isinstance(m, ast.Mul)
            v = self.emit("gather_row", self.vec(m.left), s.register)
            w = self.emit("gather_col", self.vec(m.right), s.register)
            return self.emit("mul", v, w, note=note)
        coeffs, factors = product_factors(m)
        if not coeffs and factors == [m]:  # pragma: no cover - every matrix node has a rule
            raise LoweringError(f"no rule to materialise {type(m).__name__}", m.span)
        return self._coefficients(coeffs, self._chain_values(factors, s, m), note)

    def _chain_values(self, factors: list[ast.Expr], s: MaskRef, origin: ast.Expr) -> int:
        key = ("chain", tuple(factors), s.register)
        hit = self._memo.get(key)
        if hit is None:
            hit = self.__chain_values(factors, s, origin)
            self._memo[key] = hit
        return hit

    def __chain_values(self, factors: list[ast.Expr], s: MaskRef, origin: ast.Expr) -> int:
        if not factors:
            return self.emit("eye", s.register)  # I|S = [i = j]
        if len(factors) == 1:
            return self.values(factors[0], s)
        for p, f in enumerate(factors):
            if is_outer(f):
                assert isinstance(f, ast.Mul)
                # (L v wᵀ R)_ij = (L v)_i (Rᵀ w)_j
                left = self._chain_matvec(factors[:p], self.vec(f.left))
                right = self._chain_matvec_t(factors[p + 1 :], self.vec(f.right))
                return self.emit(
                    "mul",
                    self.emit("gather_row", left, s.register),
                    self.emit("gather_col", right, s.register),
                )
        first, last = factors[0], factors[-1]
        if isinstance(first, ast.Diag):  # (diag(v) M)_ij = v_i M_ij
            v = self.emit("gather_row", self.vec(first.operand), s.register)
            return self.emit("mul", v, self._chain_values(factors[1:], s, origin))
        if isinstance(last, ast.Diag):  # (M diag(v))_ij = M_ij v_j
            v = self.emit("gather_col", self.vec(last.operand), s.register)
            return self.emit("mul", self._chain_values(factors[:-1], s, origin), v)
        j = self._best_split(factors, diagonal=False)
        head, tail = factors[:j], factors[j:]
        sl, sr = self.chain_mask(head, origin), self.chain_mask(tail, origin)
        a = self._chain_values(head, sl, origin)
        b = self._chain_values(tail, sr, origin)
        # (L R)|S = Σ_k L_ik R_kj, L and R each on their own mask
        return self.emit("sampled", a, b, s.register, note=f"{_chain_text(factors)} on {s.support}")

    # -- choosing where to split a product ----------------------------------------------------
    def _cost(self, factors: tuple[ast.Expr, ...]) -> tuple[float, float]:
        """(largest order, sum of orders) of the masks materialised to compute the chain on a
        given mask: the lower the cheaper."""
        key = ("cost", factors)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        fs = list(factors)
        while fs and isinstance(fs[0], ast.Diag):
            fs = fs[1:]
        while fs and isinstance(fs[-1], ast.Diag):
            fs = fs[:-1]
        if len(fs) < 2 or any(is_outer(f) for f in fs):
            out = (0.0, 0.0)  # a single factor, or matrix-vector products only
        else:
            out = min(self._split_costs(fs, diagonal=False))[:2]
        self._memo[key] = out
        return out

    def _split_costs(
        self, fs: Sequence[ast.Expr], *, diagonal: bool
    ) -> list[tuple[float, float, int]]:
        out = []
        # A power Mᵏ splits in halves only (repeated squaring): Mᵏ = M^⌊k/2⌋ M^⌈k/2⌉ has the
        # smallest masks of all splits (E^⌈k/2⌉-hop at most), and the chain cost memo then holds
        # O(log k) sub-chains instead of O(k²) — tr(A⁶⁴) lowered in 2.6 s before.
        pure_power = len(fs) > 3 and all(f == fs[0] for f in fs)
        for j in [len(fs) // 2] if pure_power else range(1, len(fs)):
            left, right = tuple(fs[:j]), tuple(fs[j:])
            if diagonal:  # L and Rᵀ on one mask ⊇ supp L ∩ supp Rᵀ
                right_t = tuple(transposed(f) for f in reversed(right))
                m = self._order(sup.meet(self.infer.chain(left), self.infer.chain(right_t)))
                cl, cr = self._cost(left), self._cost(right_t)
                worst, total = max(m, cl[0], cr[0]), m + cl[1] + cr[1]
            else:  # L and R each on its own mask, then a sampled product
                ol = self._order(self.infer.chain(left))
                orr = self._order(self.infer.chain(right))
                cl, cr = self._cost(left), self._cost(right)
                worst = max(ol, orr, cl[0], cr[0])
                total = ol + orr + cl[1] + cr[1]
            out.append((worst, total, abs(2 * j - len(fs))))
        return out

    def _best_split(self, factors: Sequence[ast.Expr], *, diagonal: bool) -> int:
        costs = self._split_costs(factors, diagonal=diagonal)
        if len(costs) == 1:  # a power: split in halves (see _split_costs)
            return len(factors) // 2
        return min(range(len(costs)), key=lambda i: costs[i]) + 1

    # -- checks -------------------------------------------------------------------------------
    def _check_apply(self, m: ast.Apply) -> None:
        """f(M) with f(0) undefined: the dense meaning is not finite wherever M is 0."""
        facts = function_facts(m)
        if facts.finite_at_zero:
            return
        arg_support: Support = sup.EMPTY
        for a in m.variable_args:
            arg_support = sup.join(arg_support, self.infer(a))
        if arg_support.is_full:
            return
        zeros = ", ".join("0" for _ in m.variable_args)
        at0 = "undefined" if facts.at_zero != facts.at_zero else str(facts.at_zero)
        raise LoweringError(
            f"{_text(m)} is not finite wherever its argument is 0 ({m.function.name}({zeros}) = "
            f"{at0}), and it is 0 off its support {arg_support}",
            m.span,
            hint="apply the function to vectors or to a matrix with a full support, or use a "
            "function that is finite at 0",
        )


def _check_size(e: ast.Expr, text: str | None) -> None:
    """Refuse a sentence of more than MAX_COMPILED_SIZE operations, counted with its powers
    multiplied out and its ``let`` bindings expanded (what the lowering walks): past it, plans
    and support bounds grow deeper than the compiler can build in a second."""
    cap = limits.MAX_COMPILED_SIZE
    sizes: dict[int, int] = {}
    worst: list[ast.Expr] = []

    def size(x: ast.Expr) -> int:
        hit = sizes.get(id(x))
        if hit is not None:
            return hit
        if isinstance(x, ast.Power):
            out = 1 + size(x.base) * x.exponent
            if out > cap and not worst:
                worst.append(x)
        else:
            out = 1 + sum(size(c) for c in x.children())
        sizes[id(x)] = out = min(out, cap + 1)  # capped: a let chain may double at each step
        return out

    if size(e) > cap:
        where = worst[0] if worst else e
        err = LoweringError(
            f"the sentence has more than {cap} operations with its powers multiplied out, "
            f"beyond {limits.named('MAX_COMPILED_SIZE')}",
            where.span,
            hint="matlang.evaluate computes it exactly (powers by repeated squaring)",
        )
        raise err.located(text) if text is not None else err


def lower(program: ast.Program, *, dense: bool = False, weights: str = "literals") -> Plan:
    """The checked :class:`Plan` of the sentences of ``program`` (see
    :func:`matlang.parser.as_program` for texts, Exprs and lists).

    Several sentences must all be graph-level (scalars), all node-level (vectors), or a single
    matrix. Raises :class:`~compiler.support.FullMaskError` when a matrix that must be
    materialised has a full support (unless ``dense``), located in the text when there is one.
    """
    if not isinstance(program, ast.Program):
        raise TypeError(f"lower takes a Program (matlang.parser.as_program), got {type(program)}")
    if not program.sentences:
        only = " (only definitions were given)" if program.text is not None else ""
        raise CompileError(f"no sentence to compile{only}")
    sentences = [(s.expr, s.name or f"#{i}") for i, s in enumerate(program)]
    inputs, text = program.inputs, program.text
    for e, _ in sentences:
        _check_size(e, text)
    levels = {
        ("graph" if e.shape.is_scalar else "node" if e.shape.is_vector else "matrix")
        for e, _ in sentences
    }
    if len(levels) > 1 or ("matrix" in levels and len(sentences) > 1):
        raise CompileError(
            "sentences of different levels ("
            + ", ".join(sorted(levels))
            + ") cannot share one module: compile graph-level, node-level and matrix sentences "
            "separately"
        )
    lowering = PlanLowering(dense=dense, weights=weights, inputs=inputs)
    try:
        outputs = [lowering.sentence(e, name) for e, name in sentences]
    except (FullMaskError, LoweringError) as err:
        raise (err.located(text) if text is not None else err) from None
    return lowering.finish(outputs)


__all__ = ["LoweringError", "PlanLowering", "MaskRef", "lower"]
