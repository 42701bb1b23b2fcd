"""AST → canonical text (``parse(to_text(e)) == e``) and LaTeX.

Precedence levels, loosest first: sum 1, unary minus 2, explicit products (⊙, /) 3,
juxtaposition (matrix product) 4, postfix (ᵀ, powers) 5, atoms 6.
"""

from __future__ import annotations

from fractions import Fraction

from matlang import ast
from matlang.ast import user_functions

_SUPER = "⁰¹²³⁴⁵⁶⁷⁸⁹"
SUM, UNARY, PRODUCT, JUXT, POSTFIX, ATOM = 1, 2, 3, 4, 5, 6


def format_number(v: Fraction) -> str:
    """Exact decimal text of a literal (literals are finite decimals by construction)."""
    if v.denominator == 1:
        return str(v.numerator)
    d = v.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d != 1:  # not a finite decimal: only reachable for numbers made by rewrites
        return f"({v.numerator}/{v.denominator})"
    places = max(twos, fives)
    scaled = v * 10**places
    whole, frac = divmod(int(scaled), 10**places)
    return f"{whole}.{str(frac).rjust(places, '0')}"


class _Text:
    def __init__(self, ascii_only: bool) -> None:
        self.ascii = ascii_only

    def wrap(self, e: ast.Expr, level: int) -> str:
        text, own = self.emit(e)
        return f"({text})" if own < level else text

    def emit(self, e: ast.Expr) -> tuple[str, int]:
        a = self.ascii
        if isinstance(e, ast.Input):
            return e.name, ATOM
        if isinstance(e, ast.Ones):
            return ("ones" if a else "𝟏"), ATOM
        if isinstance(e, ast.Number):
            s = format_number(e.value)
            return s, (ATOM if not s.startswith("(") else ATOM)
        if isinstance(e, ast.Add):
            return f"{self.wrap(e.left, SUM)} + {self.wrap(e.right, UNARY)}", SUM
        if isinstance(e, ast.Sub):
            return f"{self.wrap(e.left, SUM)} - {self.wrap(e.right, UNARY)}", SUM
        if isinstance(e, ast.Neg):
            inner = self.wrap(e.operand, UNARY)
            return ("- " if inner.startswith("-") else "-") + inner, UNARY
        if isinstance(e, ast.Hadamard):
            op = ".*" if a else "⊙"
            return f"{self.wrap(e.left, PRODUCT)} {op} {self.wrap(e.right, JUXT)}", PRODUCT
        if isinstance(e, ast.Div):
            # the parser refuses ``a / b c`` as ambiguous, so a product denominator is wrapped
            return f"{self.wrap(e.left, PRODUCT)} / {self.wrap(e.right, POSTFIX)}", PRODUCT
        if isinstance(e, ast.Mul):
            return f"{self.wrap(e.left, JUXT)} {self.wrap(e.right, POSTFIX)}", JUXT
        if isinstance(e, ast.Transpose):
            return self.wrap(e.operand, POSTFIX) + ("'" if a else "ᵀ"), POSTFIX
        if isinstance(e, ast.Power):
            base = self.wrap(e.base, POSTFIX)
            if a:
                return f"{base}^{e.exponent}", POSTFIX
            if base[-1] in _SUPER:  # A²³ would read as A to the 23rd
                base = f"({base})"
            return base + "".join(_SUPER[int(c)] for c in str(e.exponent)), POSTFIX
        if isinstance(e, ast.Trace):
            return f"tr({self.emit(e.operand)[0]})", ATOM
        if isinstance(e, ast.Diag):
            return f"diag({self.emit(e.operand)[0]})", ATOM
        if isinstance(e, ast.Apply):
            return f"{e.function.name}({', '.join(self.emit(x)[0] for x in e.args)})", ATOM
        raise TypeError(f"cannot print {type(e).__name__}")


def to_text(e: ast.Expr, *, ascii: bool = False, definitions: bool = True) -> str:
    """Canonical text of ``e``; user functions it uses are defined first (``let f(x) = ...;``)
    unless ``definitions`` is false, and declared inputs are declared (``input h;``)."""
    body = _Text(ascii).emit(e)[0]
    if not definitions:
        return body
    head = [f.definition_text() + ";" for f in user_functions(e)]
    names = ast.inputs_of(e)
    if names:
        head.insert(0, f"input {', '.join(names)};")
    return " ".join([*head, body])


def program_to_text(p: ast.Program, *, ascii: bool = False) -> str:
    """Canonical text of a whole program, one statement per line."""
    lines = []
    if p.inputs:
        lines.append(f"input {', '.join(p.inputs)}")
    lines.extend(f.definition_text() for f in p.functions)
    for s in p.sentences:
        body = to_text(s.expr, ascii=ascii, definitions=False)
        lines.append(f"{s.name}: {body}" if s.name else body)
    return "\n".join(lines)


# --------------------------------------------------------------------------- LaTeX


def _latex_number(v: Fraction) -> str:
    if v.denominator == 1:
        return str(v.numerator)
    s = format_number(v)
    return s if not s.startswith("(") else rf"\tfrac{{{v.numerator}}}{{{v.denominator}}}"


def _tex_name(name: str) -> str:
    """A name as LaTeX text: ``_`` is a subscript there (``a_b_c`` a double one, an error)."""
    return name.replace("_", r"\_")


def _lx(e: ast.Expr) -> tuple[str, int]:
    def w(x: ast.Expr, level: int) -> str:
        t, own = _lx(x)
        return rf"\left({t}\right)" if own < level else t

    if isinstance(e, ast.Input):  # node_feat: one italic word, not node with subscript f
        return (e.name if len(e.name) == 1 else rf"\mathit{{{_tex_name(e.name)}}}"), ATOM
    if isinstance(e, ast.Ones):
        return r"\mathbf{1}", ATOM
    if isinstance(e, ast.Number):
        return _latex_number(e.value), ATOM
    if isinstance(e, ast.Add):
        return f"{w(e.left, SUM)} + {w(e.right, UNARY)}", SUM
    if isinstance(e, ast.Sub):
        return f"{w(e.left, SUM)} - {w(e.right, UNARY)}", SUM
    if isinstance(e, ast.Neg):
        return f"-{w(e.operand, UNARY)}", UNARY
    if isinstance(e, ast.Hadamard):
        return rf"{w(e.left, PRODUCT)} \odot {w(e.right, JUXT)}", PRODUCT
    if isinstance(e, ast.Div):
        return rf"\frac{{{_lx(e.left)[0]}}}{{{_lx(e.right)[0]}}}", ATOM
    if isinstance(e, ast.Mul):
        return rf"{w(e.left, JUXT)} \, {w(e.right, POSTFIX)}", JUXT
    if isinstance(e, ast.Transpose):
        return rf"{{{w(e.operand, POSTFIX)}}}^{{\top}}", POSTFIX
    if isinstance(e, ast.Power):
        return f"{{{w(e.base, POSTFIX)}}}^{{{e.exponent}}}", POSTFIX
    if isinstance(e, ast.Trace):
        return rf"\operatorname{{tr}}\left({_lx(e.operand)[0]}\right)", ATOM
    if isinstance(e, ast.Diag):
        return rf"\operatorname{{diag}}\left({_lx(e.operand)[0]}\right)", ATOM
    if isinstance(e, ast.Apply) and e.function.builtin and e.function.name == "binom":
        x, k = (_lx(a)[0] for a in e.args)
        return rf"\binom{{{x}}}{{{k}}}", ATOM
    if isinstance(e, ast.Apply):
        name = e.function.name
        head = (
            rf"\{name}"
            if name in ("exp", "log", "tanh", "sin", "cos")
            else (rf"\operatorname{{{_tex_name(name)}}}")
        )
        return rf"{head}\left({', '.join(_lx(x)[0] for x in e.args)}\right)", ATOM
    raise TypeError(f"cannot print {type(e).__name__}")


def to_latex(e: ast.Expr, *, definitions: bool = True) -> str:
    r"""LaTeX of ``e`` (without surrounding ``$``); user functions it uses are defined first
    (``\operatorname{f}(x) = x^{2},\quad …``, as :func:`to_text` writes ``let``) unless
    ``definitions`` is false."""
    body = _lx(e)[0]
    used = user_functions(e) if definitions else []
    if not used:
        return body
    import sympy as sp

    head = [
        rf"\operatorname{{{_tex_name(f.name)}}}\left("
        + ", ".join(sp.latex(x) for x in f.symbols)
        + r"\right) = "
        + sp.latex(f.formula)
        for f in used
    ]
    return r",\quad ".join([*head, body])
