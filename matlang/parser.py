"""Text → typed AST. The grammar is ``grammars/matlang.lark``; no lark Tree leaves this module.

Macros (``I``, ``deg``, ``L``) and ``let`` bindings expand here, so every later stage sees
only the core operations. Every error is a :class:`~matlang.errors.SourceError` that points
at the text with line:col and a caret.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from matlang import ast, limits
from matlang.errors import (
    ArityError,
    FunctionError,
    MatlangSyntaxError,
    PowerError,
    RedefinitionError,
    ShapeError,
    SourceError,
    Span,
    UnknownNameError,
)
from matlang.functions import BUILTINS, RESERVED, Function, define, unsupported_call
from matlang.grammars import GRAMMAR_PATH
from matlang.shapes import COLUMN, MATRIX
from matlang.syntax_errors import syntax_error

SUPERSCRIPTS = {c: i for i, c in enumerate("⁰¹²³⁴⁵⁶⁷⁸⁹")}


@cache
def _lark() -> Lark:
    # cache=True: building the LALR tables is most of the parser's start-up (≈ 0.3 s); lark
    # keeps them in the temp folder under a hash of the grammar, the options and its version
    # (and builds them again, saving nothing, where that folder is not writable).
    return Lark(
        GRAMMAR_PATH.read_text(encoding="utf-8"),
        parser="lalr",
        propagate_positions=True,
        start="program",
        maybe_placeholders=False,
        cache=True,
    )


def _start(node: Tree | Token) -> int:
    return (node.start_pos if isinstance(node, Token) else node.meta.start_pos) or 0


def _end(node: Tree | Token) -> int:
    return (node.end_pos if isinstance(node, Token) else node.meta.end_pos) or 0


def _span(node: Tree | Token, text: str) -> Span:
    if isinstance(node, Token):
        start = node.start_pos or 0
        end = node.end_pos if node.end_pos is not None else start + len(node)
    else:
        meta = node.meta
        if getattr(meta, "empty", True):
            return Span(0, 0, 1, 1)
        start, end = meta.start_pos, meta.end_pos
    return Span.of(text, start, end)


#: Other languages' names of the built-ins, for "did you mean" (too far apart for difflib).
SPELLINGS = {
    "trace": "tr",
    "Tr": "tr",
    "diagonal": "diag",
    "Diag": "diag",
}


@dataclass
class _Scope:
    """What names mean while a program is read, statement by statement."""

    text: str
    bindings: dict[str, ast.Expr] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)
    inputs: dict[str, ast.Expr] = field(default_factory=dict)
    used_functions: dict[str, Function] = field(default_factory=dict)


def _macro(name: str, span: Span) -> ast.Expr | None:
    """Built-in names. # I = diag(𝟏); deg = A𝟏; L = diag(A𝟏) - A"""
    a = ast.Input("A", MATRIX, span=span)
    ones = ast.Ones(span=span)
    if name == "A":
        return a
    if name == "ones":
        return ones
    if name == "I":
        return ast.Diag(ones, span=span)
    if name == "deg":
        return ast.Mul(a, ones, span=span)
    if name == "L":
        return ast.Sub(ast.Diag(ast.Mul(a, ones, span=span), span=span), a, span=span)
    return None


class _Builder:
    def __init__(self, scope: _Scope) -> None:
        self.scope = scope
        self.text = scope.text

    def span(self, node: Tree | Token) -> Span:
        return _span(node, self.text)

    # -- expressions -----------------------------------------------------------------------
    def expr(self, t: Tree | Token) -> ast.Expr:
        if isinstance(t, Token):  # pragma: no cover - the grammar wraps every token
            raise MatlangSyntaxError(f"unexpected {t!r}", self.span(t))
        build = _EXPRESSIONS.get(str(t.data))
        if build is None:  # pragma: no cover - a grammar rule without a builder
            raise MatlangSyntaxError(f"unsupported construct {t.data}", self.span(t))
        return build(self, t, self.span(t))

    def _binary(self, cls: Any, t: Tree, sp: Span) -> ast.Expr:
        """``cls(left, right)`` for a two-operand node class (Add, Mul, ...)."""
        left, right = t.children[0], t.children[-1]
        node: ast.Expr = cls(self.expr(left), self.expr(right), span=sp)
        return node

    def e_add(self, t: Tree, sp: Span) -> ast.Expr:
        return self._binary(ast.Add, t, sp)

    def e_sub(self, t: Tree, sp: Span) -> ast.Expr:
        return self._binary(ast.Sub, t, sp)

    def e_mul(self, t: Tree, sp: Span) -> ast.Expr:
        return self._binary(ast.Mul, t, sp)

    def e_juxtapose(self, t: Tree, sp: Span) -> ast.Expr:
        return self._binary(ast.Mul, t, sp)

    def e_hadamard(self, t: Tree, sp: Span) -> ast.Expr:
        return self._binary(ast.Hadamard, t, sp)

    def e_div(self, t: Tree, sp: Span) -> ast.Expr:
        left, op, right = t.children
        assert isinstance(op, Token)
        inner = right
        while isinstance(inner, Tree) and inner.data == "neg":
            inner = inner.children[-1]
        opened = "(" in self.text[op.end_pos : _start(inner)]
        if isinstance(inner, Tree) and inner.data == "juxtapose" and not opened:
            # ``1/6 tr(A³)`` reads as tr(A³)/6 to some and as 1/(6 tr(A³)) to others; both
            # are well-shaped, so a guess would be a silently wrong number.
            first = inner
            while isinstance(first, Tree) and first.data == "juxtapose":
                first = first.children[0]
            num = self.text[_start(left) : op.start_pos].strip()
            den = self.text[op.end_pos : _end(first)].strip()
            rest = self.text[_end(first) : _end(right)].strip()
            raise MatlangSyntaxError(
                "ambiguous division: a product by juxtaposition follows '/'",
                sp,
                hint=f"write ({num} / {den}) {rest} or {num} / ({den} {rest})",
            )
        return self._binary(ast.Div, t, sp)

    def e_neg(self, t: Tree, sp: Span) -> ast.Expr:
        return ast.Neg(self.expr(t.children[-1]), span=sp)

    def e_transpose(self, t: Tree, sp: Span) -> ast.Expr:
        operand = t.children[0]
        if isinstance(operand, Tree) and operand.data == "number":
            # ``1ᵀ A 1`` is the paper's notation for 𝟏ᵀ A 𝟏, but here 1 is a number and the
            # sentence would silently be a matrix; a transposed literal is never meant.
            num = str(operand.children[0])
            raise ShapeError(
                f"transpose of the number {num}",
                sp,
                hint=(
                    "the digit 1 is the number one; for the ones vector write `ones` or 𝟏 "
                    "(onesᵀ A ones)"
                    if Fraction(num) == 1
                    else "a number is its own transpose; remove the transpose"
                ),
            )
        return ast.Transpose(self.expr(operand), span=sp)

    def e_superpower(self, t: Tree, sp: Span) -> ast.Expr:
        digits = "".join(str(SUPERSCRIPTS[c]) for c in str(t.children[1]))
        return ast.Power(self.expr(t.children[0]), _exponent(digits, sp), span=sp)

    def e_power(self, t: Tree, sp: Span) -> ast.Expr:
        base = self.expr(t.children[0])
        return ast.Power(base, self.exponent(t.children[2]), span=sp)

    def exponent(self, t: Tree) -> int:
        sp = self.span(t)
        kind = str(t.data)
        if kind == "exp_number":
            tok = str(t.children[0])
            if not tok.isdigit():
                raise PowerError(f"a power must be a non-negative integer, got {tok}", sp)
            return _exponent(tok, sp)
        if kind == "exp_negative":
            raise PowerError(
                f"a power must be a non-negative integer, got -{t.children[1]}",
                sp,
                hint="MATLANG has no inverses; for entrywise powers use a function, "
                "e.g. let f(x) = x^(-1/2)",
            )
        if kind == "exp_name":
            raise PowerError(
                f"a power must be a literal integer, got the name '{t.children[0]}'", sp
            )
        inner = self.expr(t.children[0])
        if isinstance(inner, ast.Number) and inner.value.denominator == 1:
            return int(inner.value)
        raise PowerError("a power must be a literal non-negative integer", sp)

    def e_number(self, t: Tree, sp: Span) -> ast.Expr:
        return ast.Number(_literal(str(t.children[0]), sp), span=sp)

    def e_ones(self, t: Tree, sp: Span) -> ast.Expr:
        return ast.Ones(span=sp)

    def e_name(self, t: Tree, sp: Span) -> ast.Expr:
        name = str(t.children[0])
        return self.lookup(name, sp)

    def lookup(self, name: str, sp: Span) -> ast.Expr:
        s = self.scope
        if name in s.bindings:
            return s.bindings[name]
        if name in s.inputs:
            return ast.Input(name, COLUMN, span=sp)
        m = _macro(name, sp)
        if m is not None:
            return m
        if name in s.functions or name in BUILTINS or name in ("tr", "diag"):
            spaced = re.match(r"[ \t]+\(", self.text[sp.end :]) is not None
            raise UnknownNameError(
                f"'{name}' is a function and needs its arguments: {name}(...)",
                sp,
                hint=f"write {name}( with no space before '('" if spaced else None,
            )
        raise UnknownNameError(f"unknown name '{name}'", sp, hint=self._suggest(name))

    def _suggest(self, name: str) -> str:
        known = [*self.scope.bindings, *self.scope.inputs, "A", "ones", "I", "deg", "L"]
        if name in ("one", "one_vector", "𝟏"):
            return "the ones vector is `ones` (or 𝟏)"
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if close:
            return f"did you mean '{close[0]}'?"
        if len(name) == 1 and name.isupper():
            return "the input matrix is A; declare node vectors with `input h`"
        return "names are A, ones, I, deg, L, `let` bindings and `input` vectors"

    def e_call_empty(self, t: Tree, sp: Span) -> ast.Expr:
        return self.call(str(t.children[0]), [], sp)

    def e_call(self, t: Tree, sp: Span) -> ast.Expr:
        args = [self.expr(a) for a in t.children[1].children]
        return self.call(str(t.children[0]), args, sp)

    def call(self, name: str, args: list[ast.Expr], sp: Span) -> ast.Expr:
        s = self.scope
        if name in ("tr", "diag"):
            if len(args) != 1:
                raise ArityError(f"{name} takes 1 argument, got {len(args)}", sp)
            return ast.Trace(args[0], span=sp) if name == "tr" else ast.Diag(args[0], span=sp)
        fn = s.functions.get(name) or BUILTINS.get(name)
        if fn is not None:
            s.used_functions.setdefault(fn.name, fn)
            node = ast.Apply(fn, tuple(args), span=sp)
            literal = {i: a.value for i, a in enumerate(args) if isinstance(a, ast.Number)}
            why = unsupported_call(fn, literal)
            if why is not None:
                raise FunctionError(f"{name}(...) cannot be computed: {why}", sp)
            return node
        # ``A(B)``: a name against a parenthesis that is not a function is a product.
        if name in s.bindings or name in s.inputs or _macro(name, sp) is not None:
            if len(args) != 1:
                raise ArityError(
                    f"'{name}' is not a function and cannot take {len(args)} arguments", sp
                )
            head = self.lookup(name, sp)
            return ast.Mul(head, args[0], span=sp)
        close = [SPELLINGS[name]] if name in SPELLINGS else difflib.get_close_matches(
            name, [*s.functions, *BUILTINS, "tr", "diag"], n=1
        )
        hint = (
            f"did you mean '{close[0]}'?" if close else (f"define it first: let {name}(x) = ...;")
        )
        raise UnknownNameError(f"unknown function '{name}'", sp, hint=hint)

    # -- statements ------------------------------------------------------------------------
    def statement(self, t: Tree, out: list[ast.Sentence]) -> None:
        kind = str(t.data)
        s = self.scope
        sp = self.span(t)
        if kind == "sentence":
            out.append(ast.Sentence(self.expr(t.children[0]), None, span=sp))
        elif kind == "named_sentence":
            name = str(t.children[0])
            self._check_free(name, self.span(t.children[0]))
            e = self.expr(t.children[1])
            s.bindings[name] = e
            out.append(ast.Sentence(e, name, span=sp))
        elif kind == "binding":
            name = str(t.children[0])
            self._check_free(name, self.span(t.children[0]))
            s.bindings[name] = self.expr(t.children[1])
        elif kind == "fundef":
            name_tok, params, formula = t.children
            name = str(name_tok)
            if name in s.functions:
                raise RedefinitionError(f"function '{name}' is defined twice", self.span(name_tok))
            if name in s.bindings or name in s.inputs:
                raise RedefinitionError(
                    f"'{name}' is already defined as a value", self.span(name_tok)
                )
            if name in RESERVED or name in BUILTINS:
                what = "function" if name in BUILTINS else "operator"
                raise RedefinitionError(
                    f"'{name}' is a built-in {what} and cannot be redefined",
                    self.span(name_tok),
                    hint=f"choose another name, e.g. let my_{name}(...) = ...",
                )
            pnames = [str(p) for p in params.children]
            for i, p in enumerate(params.children):
                if str(p) in pnames[:i]:
                    raise FunctionError(
                        f"function '{name}' repeats the parameter '{p}'", self.span(p)
                    )
            raw = str(formula)
            lead = len(raw) - len(raw.lstrip())
            start = _start(formula) + lead
            fsp = Span.of(self.text, start, start + len(raw.strip()))
            s.functions[name] = define(
                name, pnames, raw, span=fsp, source_text=self.text, user_functions=s.functions
            )
        elif kind == "inputs":
            for tok in t.children:
                name = str(tok)
                self._check_free(name, self.span(tok))
                s.inputs[name] = ast.Input(name, COLUMN)
        else:  # pragma: no cover
            raise MatlangSyntaxError(f"unsupported statement {kind}", sp)

    def _check_free(self, name: str, sp: Span) -> None:
        if name in RESERVED or name in BUILTINS:
            raise RedefinitionError(f"'{name}' is built in and cannot be rebound", sp)
        if name in self.scope.bindings or name in self.scope.inputs:
            raise RedefinitionError(f"'{name}' is already defined", sp)
        if name in self.scope.functions:
            raise RedefinitionError(f"'{name}' is already defined as a function", sp)


#: The grammar's expression aliases (``-> add`` in ``grammars/matlang.lark``) and their builders.
_EXPRESSIONS: dict[str, Callable[[_Builder, Tree, Span], ast.Expr]] = {
    "add": _Builder.e_add,
    "sub": _Builder.e_sub,
    "mul": _Builder.e_mul,
    "juxtapose": _Builder.e_juxtapose,
    "hadamard": _Builder.e_hadamard,
    "div": _Builder.e_div,
    "neg": _Builder.e_neg,
    "transpose": _Builder.e_transpose,
    "superpower": _Builder.e_superpower,
    "power": _Builder.e_power,
    "number": _Builder.e_number,
    "ones": _Builder.e_ones,
    "name": _Builder.e_name,
    "call_empty": _Builder.e_call_empty,
    "call": _Builder.e_call,
}


# --------------------------------------------------------------------------- API


def _exponent(digits: str, sp: Span) -> int:
    """A power's digits as an int, refused past MAX_EXPONENT before int() reads them (a
    10⁵-digit exponent would take seconds, and Python refuses more than 4300 digits)."""
    k = int(digits) if len(digits) <= len(str(limits.MAX_EXPONENT)) else limits.MAX_EXPONENT + 1
    if k > limits.MAX_EXPONENT:
        shown = digits if len(digits) <= 12 else f"{digits[:6]}… ({len(digits)} digits)"
        raise PowerError(f"the power ^{shown} is beyond {limits.named('MAX_EXPONENT')}", sp)
    return k


_LITERAL = re.compile(r"([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")


def _literal(tok: str, sp: Span) -> Fraction:
    """A number literal, exact, refused past MAX_LITERAL_DIGITS significant digits or a
    magnitude past 10^±MAX_LITERAL_EXPONENT (``1e99999999`` would build a 10⁸-digit integer),
    before any integer is built from it."""
    m = _LITERAL.fullmatch(tok)
    assert m is not None  # the grammar's NUMBER
    digits = m.group(1) + (m.group(2) or "")
    significant = digits.strip("0")
    exp = m.group(3) or "0"
    if len(significant) > limits.MAX_LITERAL_DIGITS:
        raise MatlangSyntaxError(
            f"the number has {len(significant)} significant digits, beyond "
            f"{limits.named('MAX_LITERAL_DIGITS')}",
            sp,
        )
    shown = tok if len(tok) <= 24 else tok[:20] + "…"
    # the power of ten of the leading digit: 1e300 and 1000…0 (301 digits) are 10^300
    lead = len(m.group(1)) - (len(digits) - len(digits.lstrip("0"))) - 1
    if significant and (
        len(exp.lstrip("+-")) > 6 or abs(lead + int(exp)) > limits.MAX_LITERAL_EXPONENT
    ):
        raise MatlangSyntaxError(
            f"the number {shown} is beyond 10^±{limits.MAX_LITERAL_EXPONENT} "
            f"({limits.named('MAX_LITERAL_EXPONENT')})",
            sp,
        )
    return Fraction(tok)


def _depth(tree: Tree) -> tuple[int, Tree]:
    """The nesting depth of a parse tree and its deepest subtree (iteratively: the tree may be
    deeper than Python's recursion limit)."""
    deepest, where = 0, tree
    stack: list[tuple[Tree, int]] = [(tree, 1)]
    while stack:
        t, d = stack.pop()
        if d > deepest:
            deepest, where = d, t
        stack.extend((c, d + 1) for c in t.children if isinstance(c, Tree))
    return deepest, where


def parse_program(
    text: str,
    *,
    functions: Mapping[str, Function] | None = None,
    inputs: tuple[str, ...] = (),
) -> ast.Program:
    """Every statement of ``text``: sentences, ``let`` bindings and functions, ``input`` names."""
    if not isinstance(text, str):
        raise TypeError(f"parse expects a string, got {type(text).__name__}")
    if len(text) > limits.MAX_SENTENCE_CHARS:
        raise MatlangSyntaxError(
            f"the text has {len(text)} characters, beyond {limits.named('MAX_SENTENCE_CHARS')}",
            Span.of(text, limits.MAX_SENTENCE_CHARS),
        )
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise syntax_error(e, text) from None
    # every later stage walks the AST recursively: bound its depth here
    depth, deepest = _depth(tree)
    if depth > limits.MAX_NESTING:
        meta = deepest.meta
        start = getattr(meta, "start_pos", 0) if not meta.empty else 0
        raise MatlangSyntaxError(
            f"the sentence nests {depth} levels deep (each operand of a chain of +, - or "
            "products is a level, as is each unary minus, call or power; brackets alone are "
            f"not), beyond {limits.named('MAX_NESTING')}",
            Span.of(text, start),
            text,
        )
    scope = _Scope(text, functions=dict(functions or {}))
    for name in inputs:
        scope.inputs[name] = ast.Input(name, COLUMN)
    builder = _Builder(scope)
    sentences: list[ast.Sentence] = []
    try:
        for st in tree.children:
            assert isinstance(st, Tree)  # the grammar wraps every statement
            builder.statement(st, sentences)
    except SourceError as e:
        raise e.located(text) from None
    return ast.Program(
        tuple(sentences),
        tuple(scope.functions.values()),
        tuple(scope.inputs),
        text=text,
    )


def parse(text: str, **kwargs: Any) -> ast.Expr:
    """The one sentence of ``text`` (after any ``let``/``input`` statements) as a typed AST."""
    return _one_sentence(parse_program(text, **kwargs))


def _one_sentence(program: ast.Program) -> ast.Expr:
    """The expression of a program's only sentence; a syntax error (located when the program
    has its text) when it has none or several."""
    if len(program) != 1:
        text = program.text
        what = "none" if not program.sentences else f"{len(program)}"
        if len(program) > 1:
            sp = program.sentences[1].span
        else:
            sp = Span.of(text, 0, max(1, len(text))) if text is not None else None
        raise MatlangSyntaxError(
            f"expected exactly one sentence, found {what}",
            sp,
            text,
            hint="use parse_program for several sentences" if len(program) > 1 else None,
        )
    return program.sentences[0].expr


def as_program(source: Any) -> ast.Program:
    """The one coercion of what a user hands in to a :class:`~matlang.ast.Program`.

    A text is parsed (:func:`parse_program`); a Program is itself; a Sentence or an Expr is a
    program of one sentence (an Expr declares the inputs it reads, in order of first use); a
    list or tuple of these is one program of all their sentences, unnamed (a position names
    them), with their inputs and functions in order of first appearance and no text.
    """
    if isinstance(source, str):
        return parse_program(source)
    if isinstance(source, ast.Program):
        return source
    if isinstance(source, ast.Sentence):
        return ast.Program((source,))
    if isinstance(source, ast.Expr):
        return ast.Program((ast.Sentence(source),), inputs=tuple(ast.inputs_of(source)))
    if isinstance(source, (list, tuple)):
        sentences: list[ast.Sentence] = []
        functions: dict[str, Function] = {}
        inputs: dict[str, None] = {}
        for item in source:
            sub = as_program(item)
            sentences += [ast.Sentence(s.expr, None, span=s.span) for s in sub]
            for fn in sub.functions:
                functions.setdefault(fn.name, fn)
            inputs.update(dict.fromkeys(sub.inputs))
        return ast.Program(tuple(sentences), tuple(functions.values()), tuple(inputs))
    raise TypeError(
        "expected a program text, an Expr, a Sentence, a Program or a list of these, got "
        f"{type(source).__name__}"
    )


def as_expr(source: Any) -> ast.Expr:
    """The one sentence of :func:`as_program` ``(source)`` (an error when there are several)."""
    return _one_sentence(as_program(source))
