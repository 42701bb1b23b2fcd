"""Which WL level a sentence needs: fragments, reasons, normal form and witness.

The paper (Balcilar et al., ICML 2021, Remarks 1–4, after Geerts 2020) fixes three fragments of
MATLANG, each with the ``+`` enrichment (sums, differences, scalar products and quotients, and
pointwise functions of vectors or scalars, which never raise the level):

* **L1** = {·, ᵀ, 𝟏, diag}: two graphs agree on every L1⁺ sentence exactly when 1-WL cannot tell
  them apart (Remark 1), so one L1⁺ sentence is *at most 1-WL*.
* **L2** = L1 ∪ {tr}: strictly more than 1-WL, strictly less than 3-WL (Remark 2).
* **L3** = L2 ∪ {⊙}: exactly as strong as 3-WL (Remark 3), so one sentence is *at most 3-WL*.

A Hadamard product of vectors or scalars is L1 (v ⊙ w = diag(v) w), and so is a pointwise function
of vectors. A pointwise function of matrices counts as ⊙ unless it is affine in its matrix
arguments: ``square(M)`` *is* M ⊙ M, and ``1ᵀ square(A²) 1`` separates the 1-WL-equivalent pair
cycle8 / two 4-cycles, so only affine functions of matrices (a·M + b) stay in the enrichment.

:func:`classify` reports the syntactic fragment, the fragment after the sound rewrites of
:mod:`matlang.rewrite` (which assume **simple undirected graphs**: A symmetric, 0/1, with an
empty diagonal), the operations that force each level, and a witness from :mod:`matlang.witness`:
a pair of graphs that a lower level provably cannot separate but the sentence does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

import sympy as sp

from matlang import ast
from matlang.errors import Span
from matlang.functions import Function, polynomial_degree

#: Names of the fragments, by level.
FRAGMENTS: dict[int, str] = {1: "L1", 2: "L2", 3: "L3"}

#: What the rewrites (and so the normal form and the witness search) assume about A.
ASSUMPTION = "simple undirected graphs: A is symmetric and 0/1 with an empty diagonal"


# --------------------------------------------------------------------------- function facts


@lru_cache(maxsize=512)
def _affine(fn: Function, constants: tuple[tuple[int, Fraction], ...]) -> tuple | None:
    formula = fn.specialize(dict(constants))
    syms = [s for i, s in enumerate(fn.symbols) if i not in dict(constants)]
    degree = polynomial_degree(formula, syms)
    if degree is None or degree > 1:
        return None
    if not syms:
        return None
    poly = sp.Poly(sp.expand(formula), *syms)
    coeffs = []
    for s in syms:
        c = poly.coeff_monomial(s)
        coeffs.append(Fraction(int(c.p), int(c.q)))
    c0 = poly.coeff_monomial(1)
    return tuple(coeffs), Fraction(int(c0.p), int(c0.q))


def affine_coefficients(node: ast.Apply) -> tuple[tuple[Fraction, ...], Fraction] | None:
    """``(a, b)`` when ``f(x₁..x_k) = Σ aᵢ xᵢ + b`` in its non-literal arguments (rational
    coefficients), else None. Decided by sympy."""
    return _affine(node.function, tuple(sorted(node.constants.items())))


# --------------------------------------------------------------------------- fragments


@dataclass(frozen=True)
class Reason:
    """One operation that forces a level: what it is, where it is, and why."""

    level: int
    operation: str
    span: Span | None
    text: str
    why: str
    stage: str = "syntactic"  # "syntactic" (the sentence as written) or "normalized"

    @property
    def at(self) -> str:
        return f"{self.span.line}:{self.span.col}" if self.span is not None else "?"

    def to_json(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "level": FRAGMENTS[self.level],
            "operation": self.operation,
            "at": self.at,
            "text": self.text,
            "why": self.why,
        }

    def __str__(self) -> str:
        return f"{self.at}  {self.operation}  {self.text}  → {FRAGMENTS[self.level]} ({self.why})"


def _matrix_args(node: ast.Apply) -> tuple[ast.Expr, ...]:
    return tuple(a for a in node.variable_args if a.shape.is_matrix)


def forced_level(node: ast.Expr) -> tuple[int, str, str] | None:
    """The level this node's own operation forces, with the operation's name and why; None when
    the operation is in L1⁺ (·, ᵀ, 𝟏, diag, +, −, scalar ×, /, pointwise f of vectors)."""
    if isinstance(node, ast.Trace):
        return 2, "tr", "the trace is in L2 but not in L1"
    if isinstance(node, ast.Hadamard) and node.shape.is_matrix:
        return 3, "⊙", "an entrywise product of matrices is in L3 only"
    if isinstance(node, ast.Apply) and _matrix_args(node):
        if affine_coefficients(node) is not None:
            return None  # a·M + b·𝟏𝟏ᵀ: sums and scalar products only
        name = node.function.name
        if len(node.variable_args) > 1:
            return 3, f"{name}(…)", "a pointwise function of several matrices counts as ⊙"
        return (
            3,
            f"{name}(…)",
            f"a non-affine pointwise function of a matrix counts as ⊙ ({name}(M) ",
        )
        "can express M ⊙ M)"
    return None


def fragment(e: ast.Expr) -> int:
    """The level (1, 2 or 3) of the smallest fragment L1⁺ ⊆ L2⁺ ⊆ L3⁺ containing ``e``."""
    level = 1
    for node in e.walk():
        f = forced_level(node)
        if f is not None and f[0] > level:
            level = f[0]
            if level == 3:
                break
    return level


def reasons(e: ast.Expr, *, stage: str = "syntactic") -> list[Reason]:
    """Every operation in ``e`` that forces a level above L1, in source order."""
    from matlang.printer import to_text

    out = []
    for node in e.walk():
        f = forced_level(node)
        if f is not None:
            level, op, why = f
            out.append(Reason(level, op, node.span, to_text(node, definitions=False), why, stage))
    out.sort(key=lambda r: (r.span.start if r.span is not None else 1 << 60, -r.level))
    return out


# --------------------------------------------------------------------------- WL statements


def wl_statement(level: int, witness_level: int | None) -> str:
    """The WL sentence for a fragment (upper bound) and a witness level (lower bound).

    A witness of level k is a pair of graphs that Lk cannot separate but the sentence does, so
    the sentence is beyond Lk (1-WL for k = 1).
    """
    upper = {
        1: "at most 1-WL",
        2: "at most L2 (strictly weaker than 3-WL)",
        3: "at most 3-WL",
    }[level]
    if witness_level is None:
        return upper
    lower = {1: "beyond 1-WL (witness)", 2: "beyond 1-WL and L2 (witness)"}[witness_level]
    return f"{lower}, {upper}"


# --------------------------------------------------------------------------- classify


@dataclass(frozen=True)
class Analysis:
    """What :func:`classify` found out about one sentence."""

    sentence: str  # canonical text of the sentence as given
    expr: ast.Expr
    syntactic_level: int
    level: int  # after normalisation
    normalized_expr: ast.Expr
    reasons: tuple[Reason, ...]
    rules: tuple[tuple[str, str], ...]  # (name, identity) of the rewrites that fired
    witness: Any = None  # matlang.witness.Witness | None
    searched: bool = False  # whether a witness was searched for
    notes: tuple[str, ...] = field(default=())

    @property
    def fragment(self) -> str:
        """The fragment after normalisation: "L1", "L2" or "L3"."""
        return FRAGMENTS[self.level]

    @property
    def syntactic_fragment(self) -> str:
        return FRAGMENTS[self.syntactic_level]

    @property
    def normalized(self) -> str:
        """Canonical text of the normal form (parseable; user functions defined first)."""
        from matlang.printer import to_text

        return to_text(self.normalized_expr)

    @property
    def wl(self) -> str:
        return wl_statement(self.level, self.witness.level if self.witness is not None else None)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (see ``matlang classify --help`` for the keys)."""
        return {
            "sentence": self.sentence,
            "syntactic_fragment": self.syntactic_fragment,
            "fragment": self.fragment,
            "wl": self.wl,
            "normalized": self.normalized,
            "reasons": [r.to_json() for r in self.reasons],
            "rules": [{"rule": n, "identity": i} for n, i in self.rules],
            "witness": self.witness.to_json() if self.witness is not None else None,
        }

    def explain(self) -> str:
        """A few lines for people."""
        frag = self.fragment
        if self.syntactic_level != self.level:
            frag += f" (as written {self.syntactic_fragment}; lowered by the rewrites)"
        lines = [
            f"sentence:   {self.sentence}",
            f"fragment:   {frag}",
            f"WL:         {self.wl}",
            f"normalized: {self.normalized}",
        ]
        if self.reasons:
            lines.append("why:")
            lines.extend(f"  [{r.stage}] {r}" for r in self.reasons)
        else:
            lines.append(
                "why:        only L1⁺ operations (·, ᵀ, 𝟏, diag, +, scalar ×, f of vectors)"
            )
        if self.rules:
            lines.append("rewrites:")
            lines.extend(f"  {n}: {i}" for n, i in self.rules)
        if self.witness is not None:
            lines.append(f"witness:    {self.witness}")
        elif self.searched and self.level > 1:
            lines.append("witness:    none found in the libraries (the level is an upper bound)")
        lines.extend(f"note:       {n}" for n in self.notes)
        lines.append(f"assumes:    {ASSUMPTION}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def classify(
    sentence: ast.Expr | str,
    *,
    witness: bool = True,
    library: Any = None,
) -> Analysis:
    """Analyse a sentence (an Expr, or text with optional ``let``/``input`` statements).

    ``witness`` searches ``library`` (a :class:`matlang.witness.WitnessLibrary`; default: the built-
    in one; ``matlang.classify(datasets=True)`` adds graph8c, EXP and sr25) for a pair that a lower
    level cannot separate but the sentence does. A sentence that separates a pair its own fragment
    cannot separate would be a bug of this analyzer: :class:`matlang.witness.SoundnessError` is
    raised, never reported.
    """
    from matlang.parser import parse
    from matlang.printer import to_text
    from matlang.rewrite import normalize

    e = parse(sentence) if isinstance(sentence, str) else sentence
    syn = fragment(e)
    norm = normalize(e)
    level = fragment(norm.expr)
    if level > syn:  # pragma: no cover - a rewrite that raises the level is a bug
        raise AssertionError(f"normalisation raised the level of {to_text(e)} to L{level}")
    why = reasons(e)
    if level != syn or norm.expr != e:
        why += reasons(norm.expr, stage="normalized")
    notes: list[str] = []
    found = None
    searched = False
    if witness:
        if ast.inputs_of(e):
            notes.append("no witness search: the sentence reads node inputs the libraries lack")
        else:
            from matlang.witness import WitnessLibrary

            library = library or WitnessLibrary.default()
            found = library.search(e, level)
            searched = True
    return Analysis(
        sentence=to_text(e),
        expr=e,
        syntactic_level=syn,
        level=level,
        normalized_expr=norm.expr,
        reasons=tuple(why),
        rules=norm.rules,
        witness=found,
        searched=searched,
        notes=tuple(notes),
    )


__all__ = [
    "ASSUMPTION",
    "FRAGMENTS",
    "Analysis",
    "Reason",
    "affine_coefficients",
    "classify",
    "forced_level",
    "fragment",
    "reasons",
    "wl_statement",
]
