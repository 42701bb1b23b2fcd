"""Which WL level a sentence needs: fragment, reasons, normal form and witness.

:func:`classify` reports the syntactic fragment (:mod:`matlang.fragments`), the fragment after
the sound rewrites of :data:`matlang.rules.RULES` (which assume **simple undirected graphs**: A
symmetric, 0/1, with an empty diagonal), the operations that force each level, and a witness
from :mod:`matlang.witness`: a pair of graphs that a lower level provably cannot separate but the
sentence does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from matlang import ast
from matlang.fragments import FRAGMENTS, Reason, fragment, reasons

#: What the rewrites (and so the normal form and the witness search) assume about A.
ASSUMPTION = "simple undirected graphs: A is symmetric and 0/1 with an empty diagonal"


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

    def _repr_html_(self) -> str:  # a notebook shows the table and the witness pair drawn
        from matlang.display import analysis_html

        return analysis_html(self)


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
    cannot separate would be a bug of this analysis: :class:`matlang.witness.SoundnessError` is
    raised, never reported.
    """
    from matlang.parser import as_expr
    from matlang.printer import to_text
    from matlang.rewrite import normalize
    from matlang.rules import RULES

    e = as_expr(sentence)
    syn = fragment(e)
    norm = normalize(e, RULES)
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
            found = library.search(e, level, notes=notes)
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


__all__ = ["ASSUMPTION", "Analysis", "classify", "wl_statement"]
