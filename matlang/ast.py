"""The typed AST of MATLANG: immutable nodes, each with a shape and a source span.

Nodes are built through their constructors, which check shapes and raise
:class:`~matlang.errors.ShapeError` (or :class:`~matlang.errors.PowerError`) naming the span.
Spans do not take part in equality, so ``parse(print(e)) == e`` compares structure only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from typing import Any

from matlang import limits
from matlang.errors import PowerError, ShapeError, Span
from matlang.functions import Function
from matlang.shapes import COLUMN, MATRIX, ROW, SCALAR, Shape

_ONE_HINT = "the digit 1 is the number one; did you mean the ones vector `ones` (𝟏)?"


@dataclass(frozen=True)
class Expr:
    """Base class: ``shape`` is derived in ``__post_init__``; ``span`` is not compared."""

    span: Span | None = field(default=None, compare=False, repr=False, kw_only=True)
    shape: Shape = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", self._infer())

    def _infer(self) -> Shape:
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        out: list[Expr] = []
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Expr) and f.name not in ("span", "shape"):
                out.append(v)
            elif isinstance(v, tuple):
                out.extend(x for x in v if isinstance(x, Expr))
        return tuple(out)

    def map_children(self, fn: Callable[[Expr], Expr]) -> Expr:
        """The same node with ``fn`` applied to each child (shape re-checked)."""
        changes: dict[str, Any] = {}
        for f in fields(self):
            if not f.init or f.name == "span":
                continue
            v = getattr(self, f.name)
            if isinstance(v, Expr):
                changes[f.name] = fn(v)
            elif isinstance(v, tuple) and v and isinstance(v[0], Expr):
                changes[f.name] = tuple(fn(x) for x in v)
        return replace(self, **changes) if changes else self

    def walk(self) -> Iterator[Expr]:
        """Every node, parents before children."""
        yield self
        for c in self.children():
            yield from c.walk()

    @property
    def size(self) -> int:
        return sum(1 for _ in self.walk())

    def __str__(self) -> str:
        from matlang.printer import to_text

        return to_text(self)

    def _repr_latex_(self) -> str:
        from matlang.printer import to_latex

        return f"${to_latex(self)}$"


def _mismatch(op: str, a: Expr, b: Expr, span: Span | None) -> ShapeError:
    hint = None
    if op in ("sum", "difference") and (a.shape.is_scalar or b.shape.is_scalar):
        s = a if a.shape.is_scalar else b
        from matlang.printer import to_text

        c = to_text(s, definitions=False)
        c = c if isinstance(s, (Number, Input, Ones)) else f"({c})"
        other = b if s is a else a
        what, tail = ("vector", "") if other.shape.is_vector else ("matrix", " onesᵀ")
        hint = f"scalars do not broadcast; for a constant {what} write {c} ones{tail}"
    for e in (a, b):
        if isinstance(e, Number) and e.value == 1 and not (a.shape.is_scalar and b.shape.is_scalar):
            hint = _ONE_HINT
    return ShapeError(f"{op} of a {a.shape} and a {b.shape}", span, hint=hint)


# --------------------------------------------------------------------------- leaves


@dataclass(frozen=True)
class Input(Expr):
    """An input: the adjacency ``A`` (matrix) or a declared node-feature vector (column)."""

    name: str
    kind: Shape = MATRIX

    def _infer(self) -> Shape:
        return self.kind


@dataclass(frozen=True)
class Ones(Expr):
    """The all-ones column vector 𝟏."""

    def _infer(self) -> Shape:
        return COLUMN


@dataclass(frozen=True)
class Number(Expr):
    """A non-negative numeric literal, kept exact as a Fraction."""

    value: Fraction

    def _infer(self) -> Shape:
        if not isinstance(self.value, Fraction):
            object.__setattr__(self, "value", Fraction(self.value))
        return SCALAR


# --------------------------------------------------------------------------- operations


@dataclass(frozen=True)
class Mul(Expr):
    """Matrix product, or scalar multiplication when one factor is 1×1."""

    left: Expr
    right: Expr

    @property
    def is_scalar_product(self) -> bool:
        """True when the product is scalar × something (not a matrix product)."""
        return self.left.shape.cols != self.right.shape.rows

    def _infer(self) -> Shape:
        a, b = self.left.shape, self.right.shape
        if a.cols == b.rows:
            return Shape(a.rows, b.cols)
        if a.is_scalar:
            return b
        if b.is_scalar:
            return a
        err = _mismatch("product", self.left, self.right, self.span)
        hint = err.hint
        if hint is None and a == b:  # two columns or two rows
            hint = "to multiply vectors entrywise use ⊙ (or .*); for an inner product write vᵀ w"
        elif hint is None and a == COLUMN:  # column · matrix
            hint = "to multiply a matrix from the left, transpose the column: vᵀ M"
        elif hint is None and b == ROW:  # matrix · row
            hint = "a matrix multiplies a column: M v, not M vᵀ"
        raise ShapeError(err.message, self.span, hint=hint)


@dataclass(frozen=True)
class Hadamard(Expr):
    """Entrywise product ⊙ of two expressions of the same shape."""

    left: Expr
    right: Expr

    def _infer(self) -> Shape:
        if self.left.shape != self.right.shape:
            raise _mismatch("entrywise product ⊙", self.left, self.right, self.span)
        return self.left.shape


@dataclass(frozen=True)
class Add(Expr):
    left: Expr
    right: Expr

    def _infer(self) -> Shape:
        if self.left.shape != self.right.shape:
            raise _mismatch("sum", self.left, self.right, self.span)
        return self.left.shape


@dataclass(frozen=True)
class Sub(Expr):
    left: Expr
    right: Expr

    def _infer(self) -> Shape:
        if self.left.shape != self.right.shape:
            raise _mismatch("difference", self.left, self.right, self.span)
        return self.left.shape


@dataclass(frozen=True)
class Neg(Expr):
    operand: Expr

    def _infer(self) -> Shape:
        return self.operand.shape


@dataclass(frozen=True)
class Div(Expr):
    """Division by a scalar expression."""

    left: Expr
    right: Expr

    def _infer(self) -> Shape:
        if not self.right.shape.is_scalar:
            raise ShapeError(
                f"division by a {self.right.shape}: only division by a scalar is defined",
                self.span,
                hint="divide entrywise with a function, e.g. let div(x, y) = x/y",
            )
        return self.left.shape


@dataclass(frozen=True)
class Transpose(Expr):
    operand: Expr

    def _infer(self) -> Shape:
        return self.operand.shape.transpose()


@dataclass(frozen=True)
class Power(Expr):
    """``base^k`` for a square base and an integer k ≥ 0 (``M^0`` is the identity)."""

    base: Expr
    exponent: int

    def _infer(self) -> Shape:
        if (
            isinstance(self.exponent, bool)
            or not isinstance(self.exponent, int)
            or self.exponent < 0
        ):
            raise PowerError(
                f"a power must be a non-negative integer, got {self.exponent!r}", self.span
            )
        if self.exponent > limits.MAX_EXPONENT:
            raise PowerError(
                f"the power ^{self.exponent} is beyond {limits.named('MAX_EXPONENT')}",
                self.span,
                hint="powers that large overflow every number type; write the sentence with a "
                "smaller power",
            )
        if not self.base.shape.is_square:
            raise PowerError(
                f"power of a {self.base.shape}: only square expressions have powers",
                self.span,
                hint="for the entrywise square of a vector use v ⊙ v or square(v)",
            )
        return self.base.shape


@dataclass(frozen=True)
class Diag(Expr):
    """``diag(v)``: the diagonal matrix of a column (or row) vector."""

    operand: Expr

    def _infer(self) -> Shape:
        s = self.operand.shape
        if s.is_vector:
            return MATRIX
        if s.is_scalar:
            hint = (
                "diag of a scalar is the scalar itself; did you mean diag(ones)?"
                if (isinstance(self.operand, Number) and self.operand.value == 1)
                else None
            )
            raise ShapeError("diag(v) needs a vector, got a scalar 1×1", self.span, hint=hint)
        raise ShapeError(
            "diag(v) needs a vector, got a matrix n×n",
            self.span,
            hint="for the diagonal of a matrix M as a vector write (M ⊙ I) ones",
        )


@dataclass(frozen=True)
class Trace(Expr):
    operand: Expr

    def _infer(self) -> Shape:
        if not self.operand.shape.is_square:
            raise ShapeError(
                f"tr(M) needs a square expression, got a {self.operand.shape}",
                self.span,
                hint="the sum of a vector's entries is onesᵀ v",
            )
        return SCALAR


@dataclass(frozen=True)
class Apply(Expr):
    """A pointwise function applied entrywise; number literals broadcast."""

    function: Function
    args: tuple[Expr, ...]

    def _infer(self) -> Shape:
        from matlang.errors import ArityError

        if len(self.args) != self.function.arity:
            raise ArityError(
                f"{self.function.name} takes {self.function.arity} argument"
                f"{'s' if self.function.arity != 1 else ''}, got {len(self.args)}",
                self.span,
            )
        shapes = {a.shape for a in self.args if not isinstance(a, Number)}
        if len(shapes) > 1:
            desc = ", ".join(str(a.shape) for a in self.args)
            negative = any(isinstance(a, Neg) and isinstance(a.operand, Number) for a in self.args)
            raise ShapeError(
                f"arguments of {self.function.name} have different shapes ({desc})",
                self.span,
                hint=(
                    "only a number literal broadcasts, and -1 is the negation of one; put the "
                    "constant in a function, e.g. let f(x) = max(x, -1)"
                    if negative
                    else None
                ),
            )
        return shapes.pop() if shapes else SCALAR

    @property
    def constants(self) -> dict[int, Fraction]:
        """Positions of number-literal arguments (partially applied before lowering), when at
        least one argument is not a literal."""
        if all(isinstance(a, Number) for a in self.args):
            return {}
        return {i: a.value for i, a in enumerate(self.args) if isinstance(a, Number)}

    @property
    def variable_args(self) -> tuple[Expr, ...]:
        c = self.constants
        return tuple(a for i, a in enumerate(self.args) if i not in c)


# --------------------------------------------------------------------------- sentences


@dataclass(frozen=True)
class Sentence:
    """A statement of a program that has a value: an expression with an optional name."""

    expr: Expr
    name: str | None = None
    span: Span | None = field(default=None, compare=False, repr=False)

    @property
    def shape(self) -> Shape:
        return self.expr.shape


@dataclass(frozen=True)
class Program:
    """Every sentence of a text, with its user functions and declared inputs."""

    sentences: tuple[Sentence, ...]
    functions: tuple[Function, ...] = ()
    inputs: tuple[str, ...] = ()
    text: str | None = field(default=None, compare=False, repr=False)

    def __iter__(self) -> Iterator[Sentence]:
        return iter(self.sentences)

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, key: int | str) -> Sentence:
        if isinstance(key, int):
            return self.sentences[key]
        for s in self.sentences:
            if s.name == key:
                return s
        raise KeyError(key)


def user_functions(e: Expr) -> list[Function]:
    """User-defined functions used by ``e``, in order of first use."""
    seen: dict[str, Function] = {}
    for node in e.walk():
        if isinstance(node, Apply) and not node.function.builtin:
            seen.setdefault(node.function.name, node.function)
    return list(seen.values())


def inputs_of(e: Expr) -> list[str]:
    """Names of declared vector inputs used by ``e`` (``A`` excluded), in order of first use."""
    seen: dict[str, None] = {}
    for node in e.walk():
        if isinstance(node, Input) and node.name != "A":
            seen.setdefault(node.name, None)
    return list(seen)


__all__ = [
    "Expr",
    "Input",
    "Ones",
    "Number",
    "Mul",
    "Hadamard",
    "Add",
    "Sub",
    "Neg",
    "Div",
    "Transpose",
    "Power",
    "Diag",
    "Trace",
    "Apply",
    "Sentence",
    "Program",
    "user_functions",
    "inputs_of",
    "SCALAR",
    "COLUMN",
    "ROW",
    "MATRIX",
]
